-- $5 is the prefix of reservation streams: the reservation id is the rest of the name.
-- Every order whose reservation has an event in ($1:$2, $3:$4] gets its row
-- computed afresh from its stream up to the end of the batch: state, lines
-- with what became of each (open, confirmed, released, expired), expiry,
-- times and history. A row is a function of its stream's events up to the
-- batch's end, so any split of the log into batches gives the same rows; a
-- stream holds at most MAX_RESERVATION_EVENTS events (src/limits.rs), so
-- reading one whole stays cheap. A stream's events stand in commit order by
-- seq, since each is appended under the stream's lock after the one before
-- it committed. Tombstones (no order) have no row.
WITH touched AS (
    SELECT DISTINCT stream
    FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
      AND order_id IS NOT NULL
), stream_events AS (
    SELECT e.stream, e.seq, e.type, e.data, e.order_id, e.skus, e.locations, e.quantities,
           e.recorded_at, e.position
    FROM touched AS t
    JOIN events AS e ON e.stream = t.stream
    WHERE (e.tx_id, e.position) <= ($3::text::xid8, $4::bigint)
), created AS (
    SELECT * FROM stream_events WHERE type = 'ReservationCreated'
), settled AS (
    SELECT DISTINCT ON (stream) stream, type
    FROM stream_events
    WHERE seq >= 2 AND type IN ('ReservationConfirmed', 'ReservationReleased', 'ReservationExpired')
    ORDER BY stream, seq
), latest AS (
    SELECT DISTINCT ON (stream) stream, recorded_at, position
    FROM stream_events
    ORDER BY stream, seq DESC
), expiry AS (
    SELECT DISTINCT ON (stream) stream, (data ->> 'expires_at')::timestamptz AS expires_at
    FROM stream_events
    WHERE type IN ('ReservationCreated', 'ReservationExtended')
    ORDER BY stream, seq DESC
), moved AS (
    SELECT e.stream, l.sku, l.location,
           coalesce(sum(l.quantity) FILTER (
               WHERE e.type IN ('ReservationConfirmed', 'ReservationLinesConfirmed')), 0) AS confirmed,
           coalesce(sum(l.quantity) FILTER (
               WHERE e.type IN ('ReservationReleased', 'ReservationLinesReleased')), 0) AS released,
           coalesce(sum(l.quantity) FILTER (WHERE e.type = 'ReservationExpired'), 0) AS expired
    FROM stream_events AS e
    CROSS JOIN LATERAL unnest(e.skus, e.locations, e.quantities) AS l(sku, location, quantity)
    WHERE e.seq >= 2
    GROUP BY 1, 2, 3
), line_rows AS (
    SELECT c.stream,
           jsonb_agg(jsonb_build_object(
               'sku', l.sku, 'location', l.location, 'quantity', l.quantity,
               'open', l.quantity - coalesce(m.confirmed, 0) - coalesce(m.released, 0)
                       - coalesce(m.expired, 0),
               'confirmed', coalesce(m.confirmed, 0),
               'released', coalesce(m.released, 0),
               'expired', coalesce(m.expired, 0)) ORDER BY l.n) AS lines
    FROM created AS c
    CROSS JOIN LATERAL unnest(c.skus, c.locations, c.quantities)
        WITH ORDINALITY AS l(sku, location, quantity, n)
    LEFT JOIN moved AS m ON m.stream = c.stream AND m.sku = l.sku AND m.location = l.location
    GROUP BY c.stream
), history AS (
    SELECT stream,
           jsonb_agg(jsonb_build_object('seq', seq, 'type', type, 'position', position)
                     ORDER BY seq) AS history
    FROM stream_events
    GROUP BY stream
)
INSERT INTO order_view AS o (order_id, reservation_id, state, lines, expires_at,
                             created_at, updated_at, history, last_position)
SELECT c.order_id,
       substr(c.stream, length($5::text) + 1),
       CASE s.type WHEN 'ReservationConfirmed' THEN 'CONFIRMED'
                   WHEN 'ReservationReleased' THEN 'RELEASED'
                   WHEN 'ReservationExpired' THEN 'EXPIRED'
                   ELSE 'RESERVED' END,
       coalesce(r.lines, '[]'),
       x.expires_at,
       c.recorded_at,
       la.recorded_at,
       h.history,
       la.position
FROM created AS c
JOIN latest AS la ON la.stream = c.stream
JOIN expiry AS x ON x.stream = c.stream
JOIN history AS h ON h.stream = c.stream
LEFT JOIN line_rows AS r ON r.stream = c.stream
LEFT JOIN settled AS s ON s.stream = c.stream
ON CONFLICT (order_id) DO UPDATE
SET reservation_id = EXCLUDED.reservation_id,
    state          = EXCLUDED.state,
    lines          = EXCLUDED.lines,
    expires_at     = EXCLUDED.expires_at,
    created_at     = EXCLUDED.created_at,
    updated_at     = EXCLUDED.updated_at,
    history        = EXCLUDED.history,
    last_position  = EXCLUDED.last_position
