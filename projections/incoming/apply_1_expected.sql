-- Folds the expected receipts' events in ($1:$2, $3:$4] (safe commit order)
-- into incoming: per stream, the event at the highest position of the
-- batch, written only over a row from a lower position. Every such event
-- states where its expected receipt stands after it (its item line's
-- quantity is the units still expected, its data the date), so the last one
-- is all a row needs, and the result is the same for any split of the log
-- into batches. Which types these are is `incoming` in `event_types`
-- (written from Rust's `EventType::incoming`); an event whose type has no
-- row fails the batch (`event_type_unknown`).
INSERT INTO incoming AS s (stream, sku, location, expected_on, outstanding, position, updated_at)
SELECT DISTINCT ON (e.stream)
       e.stream, e.skus[1], e.locations[1], (e.data ->> 'expected_on')::date,
       e.quantities[1], e.position, e.recorded_at
FROM events AS e
LEFT JOIN event_types AS t ON t.name = e.type
WHERE (e.tx_id, e.position) > ($1::text::xid8, $2::bigint)
  AND (e.tx_id, e.position) <= ($3::text::xid8, $4::bigint)
  AND CASE WHEN t.name IS NULL THEN event_type_unknown(e.type) ELSE t.incoming END
ORDER BY e.stream, e.position DESC
ON CONFLICT (stream) DO UPDATE
SET sku         = EXCLUDED.sku,
    location    = EXCLUDED.location,
    expected_on = EXCLUDED.expected_on,
    outstanding = EXCLUDED.outstanding,
    position    = EXCLUDED.position,
    updated_at  = EXCLUDED.updated_at
WHERE s.position < EXCLUDED.position
