-- Reservations by the state they are in, and units by what became of them:
-- held (RESERVED), confirmed, released or expired. A reservation made in
-- ($1:$2, $3:$4] counts as RESERVED with all its units; a partial
-- confirmation or release moves its units out of RESERVED; a settlement
-- moves the reservation and the units it settles. Every event is counted
-- once, whatever batch holds it, so any split of the log into batches gives
-- the same totals. Units placed to wait for stock (`adds_units`) count as
-- RESERVED, the order's, until they are dropped (moved to RELEASED). A tombstone (a release at seq 1) is no reservation, and
-- an extension moves no units. What each event type does is its row in
-- `event_types` (written from Rust's `EventType::reservation_move`); an
-- event whose type has no row fails the batch (`event_type_unknown`).
WITH batch AS (
    SELECT t.opens_reservation, t.adds_units, t.moves_to, t.settles,
           (SELECT coalesce(sum(q), 0) FROM unnest(e.quantities) AS q) AS units
    FROM events AS e
    LEFT JOIN event_types AS t ON t.name = e.type
    WHERE (e.tx_id, e.position) > ($1::text::xid8, $2::bigint)
      AND (e.tx_id, e.position) <= ($3::text::xid8, $4::bigint)
      AND CASE WHEN t.name IS NULL THEN event_type_unknown(e.type)
               ELSE t.opens_reservation OR t.adds_units
                    OR (e.seq >= 2 AND t.moves_to IS NOT NULL) END
), moves AS (
    SELECT 'RESERVED' AS state, CASE WHEN opens_reservation THEN 1 ELSE 0 END AS reservations,
           units
    FROM batch WHERE opens_reservation OR adds_units
    UNION ALL
    SELECT 'RESERVED', CASE WHEN settles THEN -1 ELSE 0 END, -units
    FROM batch WHERE moves_to IS NOT NULL
    UNION ALL
    SELECT moves_to, CASE WHEN settles THEN 1 ELSE 0 END, units
    FROM batch WHERE moves_to IS NOT NULL
)
INSERT INTO reservation_totals AS t (state, reservations, units)
SELECT state, sum(reservations), sum(units) FROM moves GROUP BY state
ON CONFLICT (state) DO UPDATE
SET reservations = t.reservations + EXCLUDED.reservations,
    units = t.units + EXCLUDED.units
