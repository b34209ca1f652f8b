-- $5 is the prefix of reservation streams: the reservation id is the rest of the name.
-- Every order whose reservation has an event in ($1:$2, $3:$4] and either
-- began before the batch or took a partial step or an extension in it (the
-- others are apply_1_whole's) gets its row computed afresh from its stream
-- up to the end of the batch: state, lines
-- with what became of each (open, confirmed, released, expired), expiry,
-- times and history. A row is a function of its stream's events up to the
-- batch's end, so any split of the log into batches gives the same rows: the
-- batch's own events, and for a stream begun before the batch its events up
-- to the batch's start, looked up by stream (a stream holds at most
-- MAX_RESERVATION_EVENTS events, src/limits.rs). A stream's events stand in
-- commit order by seq, since each is appended under the stream's lock after
-- the one before it committed. Tombstones (no order) have no row.
WITH batch AS (
    SELECT stream, seq, type, data, order_id, skus, locations, quantities, recorded_at, position
    FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
      AND order_id IS NOT NULL
), older AS (
    -- Streams that began before the batch: their earlier events are read
    -- again (during a rebuild, most streams begin and settle in one batch).
    SELECT DISTINCT b.stream
    FROM batch AS b
    WHERE NOT EXISTS (SELECT 1 FROM batch AS c WHERE c.stream = b.stream AND c.seq = 1)
), mine AS (
    SELECT stream FROM older
    UNION
    SELECT stream FROM batch
    WHERE type IN ('ReservationLinesConfirmed', 'ReservationLinesReleased', 'ReservationExtended')
), stream_events AS (
    SELECT b.* FROM batch AS b JOIN mine AS m ON m.stream = b.stream
    UNION ALL
    SELECT e.stream, e.seq, e.type, e.data, e.order_id, e.skus, e.locations, e.quantities,
           e.recorded_at, e.position
    FROM older AS o
    CROSS JOIN LATERAL (
        -- Kept a subquery (OFFSET 0), so each stream is looked up by its
        -- key alone rather than together with the log before the batch.
        SELECT x.*
        FROM events AS x
        WHERE x.stream = o.stream
        OFFSET 0
    ) AS e
    WHERE (e.tx_id, e.position) <= ($1::text::xid8, $2::bigint)
), per_stream AS (
    SELECT stream,
           min(order_id) AS order_id,
           min(recorded_at) FILTER (WHERE seq = 1) AS created_at,
           (array_agg(recorded_at ORDER BY seq DESC))[1] AS updated_at,
           (array_agg(position ORDER BY seq DESC))[1] AS last_position,
           (array_agg(type ORDER BY seq) FILTER (
               WHERE seq >= 2
                 AND type IN ('ReservationConfirmed', 'ReservationReleased', 'ReservationExpired')
           ))[1] AS settled,
           (array_agg((data ->> 'expires_at')::timestamptz ORDER BY seq DESC) FILTER (
               WHERE type IN ('ReservationCreated', 'ReservationExtended')
           ))[1] AS expires_at,
           jsonb_agg(jsonb_build_object('seq', seq, 'type', type, 'position', position)
                     ORDER BY seq) AS history
    FROM stream_events
    GROUP BY stream
    HAVING bool_or(seq = 1 AND type = 'ReservationCreated')
), line_moves AS (
    -- Per item of a stream: its place and units as reserved (seq 1), and
    -- the units every later event moved, by how they left.
    SELECT e.stream, l.sku, l.location,
           min(l.n) FILTER (WHERE e.seq = 1) AS n,
           coalesce(sum(l.quantity) FILTER (WHERE e.seq = 1), 0) AS quantity,
           coalesce(sum(l.quantity) FILTER (
               WHERE e.type IN ('ReservationConfirmed', 'ReservationLinesConfirmed')), 0) AS confirmed,
           coalesce(sum(l.quantity) FILTER (
               WHERE e.type IN ('ReservationReleased', 'ReservationLinesReleased')), 0) AS released,
           coalesce(sum(l.quantity) FILTER (WHERE e.type = 'ReservationExpired'), 0) AS expired
    FROM stream_events AS e
    CROSS JOIN LATERAL unnest(e.skus, e.locations, e.quantities)
        WITH ORDINALITY AS l(sku, location, quantity, n)
    GROUP BY 1, 2, 3
), line_rows AS (
    SELECT stream,
           jsonb_agg(jsonb_build_object(
               'sku', sku, 'location', location, 'quantity', quantity,
               'open', quantity - confirmed - released - expired,
               'confirmed', confirmed, 'released', released, 'expired', expired)
               ORDER BY n) AS lines
    FROM line_moves
    WHERE n IS NOT NULL
    GROUP BY stream
)
INSERT INTO order_view AS o (order_id, reservation_id, state, lines, expires_at,
                             created_at, updated_at, history, last_position)
SELECT p.order_id,
       substr(p.stream, length($5::text) + 1),
       CASE p.settled WHEN 'ReservationConfirmed' THEN 'CONFIRMED'
                      WHEN 'ReservationReleased' THEN 'RELEASED'
                      WHEN 'ReservationExpired' THEN 'EXPIRED'
                      ELSE 'RESERVED' END,
       coalesce(r.lines, '[]'),
       p.expires_at,
       p.created_at,
       p.updated_at,
       p.history,
       p.last_position
FROM per_stream AS p
LEFT JOIN line_rows AS r ON r.stream = p.stream
ON CONFLICT (order_id) DO UPDATE
SET reservation_id = EXCLUDED.reservation_id,
    state          = EXCLUDED.state,
    lines          = EXCLUDED.lines,
    expires_at     = EXCLUDED.expires_at,
    created_at     = EXCLUDED.created_at,
    updated_at     = EXCLUDED.updated_at,
    history        = EXCLUDED.history,
    last_position  = EXCLUDED.last_position
