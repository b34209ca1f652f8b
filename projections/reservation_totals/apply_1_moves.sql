-- Reservations made in ($1:$2, $3:$4] count as RESERVED; a settlement (seq 2)
-- in the range moves one from RESERVED to its new state, units and all. Every
-- event is counted once, whatever batch holds it, so any split of the log
-- into batches gives the same totals. Only the settlements of a reservation
-- count: anything else at seq 2 breaks the stream's rules, which the audit
-- reports; it must not break this fold.
WITH batch AS (
    SELECT seq, type,
           (SELECT coalesce(sum(q), 0) FROM unnest(quantities) AS q) AS units
    FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
      AND (type = 'ReservationCreated'
           OR (seq = 2 AND type IN ('ReservationConfirmed', 'ReservationReleased',
                                    'ReservationExpired')))
), moves AS (
    SELECT 'RESERVED' AS state, 1 AS reservations, units FROM batch
    WHERE type = 'ReservationCreated'
    UNION ALL
    SELECT 'RESERVED', -1, -units FROM batch WHERE seq = 2
    UNION ALL
    SELECT CASE type WHEN 'ReservationConfirmed' THEN 'CONFIRMED'
                     WHEN 'ReservationReleased' THEN 'RELEASED'
                     WHEN 'ReservationExpired' THEN 'EXPIRED' END,
           1, units
    FROM batch WHERE seq = 2
)
INSERT INTO reservation_totals AS t (state, reservations, units)
SELECT state, sum(reservations), sum(units) FROM moves GROUP BY state
ON CONFLICT (state) DO UPDATE
SET reservations = t.reservations + EXCLUDED.reservations,
    units = t.units + EXCLUDED.units
