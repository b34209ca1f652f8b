-- Reservations by the state they are in, and units by what became of them:
-- held (RESERVED), confirmed, released or expired. A reservation made in
-- ($1:$2, $3:$4] counts as RESERVED with all its units; a partial
-- confirmation or release moves its units out of RESERVED; a settlement
-- moves the reservation and the units it settles. Every event is counted
-- once, whatever batch holds it, so any split of the log into batches gives
-- the same totals. A tombstone (a release at seq 1) is no reservation, and
-- an extension moves no units.
WITH batch AS (
    SELECT seq, type,
           (SELECT coalesce(sum(q), 0) FROM unnest(quantities) AS q) AS units
    FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
      AND (type = 'ReservationCreated'
           OR (seq >= 2 AND type IN ('ReservationConfirmed', 'ReservationReleased',
                                     'ReservationExpired', 'ReservationLinesConfirmed',
                                     'ReservationLinesReleased')))
), moves AS (
    SELECT 'RESERVED' AS state, 1 AS reservations, units FROM batch
    WHERE type = 'ReservationCreated'
    UNION ALL
    SELECT 'RESERVED',
           CASE WHEN type LIKE 'ReservationLines%' THEN 0 ELSE -1 END,
           -units
    FROM batch WHERE seq >= 2
    UNION ALL
    SELECT CASE type WHEN 'ReservationConfirmed' THEN 'CONFIRMED'
                     WHEN 'ReservationLinesConfirmed' THEN 'CONFIRMED'
                     WHEN 'ReservationReleased' THEN 'RELEASED'
                     WHEN 'ReservationLinesReleased' THEN 'RELEASED'
                     WHEN 'ReservationExpired' THEN 'EXPIRED' END,
           CASE WHEN type LIKE 'ReservationLines%' THEN 0 ELSE 1 END,
           units
    FROM batch WHERE seq >= 2
)
INSERT INTO reservation_totals AS t (state, reservations, units)
SELECT state, sum(reservations), sum(units) FROM moves GROUP BY state
ON CONFLICT (state) DO UPDATE
SET reservations = t.reservations + EXCLUDED.reservations,
    units = t.units + EXCLUDED.units
