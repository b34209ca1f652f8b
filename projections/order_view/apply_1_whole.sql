-- $5 is the prefix of reservation streams: the reservation id is the rest of the name.
-- New reservations in ($1:$2, $3:$4] that took no partial step and no
-- extension in it, written once in their final state for this batch: a
-- reservation settled whole in the same batch (the common case during a
-- rebuild) is inserted as settled rather than inserted and then updated.
-- Every other order the batch touches is apply_2_steps' (the two sets are
-- disjoint and together cover every order with an event in the batch).
-- A plain INSERT: each reservation is created once, so a conflict here
-- would be a bug and must fail loudly.
WITH batch AS (
    SELECT position, stream, seq, type, data, order_id, skus, locations, quantities, recorded_at
    FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
      AND order_id IS NOT NULL
), stepped AS (
    SELECT DISTINCT stream
    FROM batch
    WHERE type IN ('ReservationLinesConfirmed', 'ReservationLinesReleased', 'ReservationExtended')
), created AS (
    SELECT * FROM batch AS b
    WHERE b.type = 'ReservationCreated'
      AND NOT EXISTS (SELECT 1 FROM stepped AS s WHERE s.stream = b.stream)
), settled AS (
    SELECT * FROM batch
    WHERE seq >= 2
      AND type IN ('ReservationConfirmed', 'ReservationReleased', 'ReservationExpired')
)
INSERT INTO order_view (order_id, reservation_id, state, lines, expires_at,
                        created_at, updated_at, history, last_position)
SELECT c.order_id,
       substr(c.stream, length($5::text) + 1),
       CASE s.type WHEN 'ReservationConfirmed' THEN 'CONFIRMED'
                   WHEN 'ReservationReleased' THEN 'RELEASED'
                   WHEN 'ReservationExpired' THEN 'EXPIRED'
                   ELSE 'RESERVED' END,
       -- Settled whole: every unit left the same way.
       (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'sku', l.sku, 'location', l.location, 'quantity', l.quantity,
                   'open', CASE WHEN s.type IS NULL THEN l.quantity ELSE 0 END,
                   'confirmed', CASE WHEN s.type = 'ReservationConfirmed' THEN l.quantity ELSE 0 END,
                   'released', CASE WHEN s.type = 'ReservationReleased' THEN l.quantity ELSE 0 END,
                   'expired', CASE WHEN s.type = 'ReservationExpired' THEN l.quantity ELSE 0 END)
                   ORDER BY l.n), '[]')
        FROM unnest(c.skus, c.locations, c.quantities) WITH ORDINALITY AS l(sku, location, quantity, n)),
       (c.data ->> 'expires_at')::timestamptz,
       c.recorded_at,
       coalesce(s.recorded_at, c.recorded_at),
       CASE WHEN s.stream IS NULL
            THEN jsonb_build_array(
                     jsonb_build_object('seq', c.seq, 'type', c.type, 'position', c.position))
            ELSE jsonb_build_array(
                     jsonb_build_object('seq', c.seq, 'type', c.type, 'position', c.position),
                     jsonb_build_object('seq', s.seq, 'type', s.type, 'position', s.position))
       END,
       coalesce(s.position, c.position)
FROM created AS c
LEFT JOIN settled AS s ON s.stream = c.stream
