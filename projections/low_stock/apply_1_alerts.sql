-- Folds the low-stock alerts in ($1:$2, $3:$4] (safe commit order) into
-- low_stock: per item, the alert at the highest position of the batch,
-- written only over a row from a lower position. Log positions are the
-- order an item's commands were decided in, while the safe order is by
-- transaction id, which may put two of an item's transactions the other
-- way round; comparing positions makes the result the same for any split
-- of the log into batches. What an event type says is its `low_stock` in
-- `event_types` (written from Rust's `EventType::low_stock`); an event
-- whose type has no row fails the batch (`event_type_unknown`).
INSERT INTO low_stock AS s (sku, location, low, available, reorder_point, position, since)
SELECT DISTINCT ON (e.skus[1], e.locations[1])
       e.skus[1], e.locations[1], t.low_stock = 1,
       (e.data ->> 'available')::bigint, (e.data ->> 'reorder_point')::bigint,
       e.position, e.recorded_at
FROM events AS e
LEFT JOIN event_types AS t ON t.name = e.type
WHERE (e.tx_id, e.position) > ($1::text::xid8, $2::bigint)
  AND (e.tx_id, e.position) <= ($3::text::xid8, $4::bigint)
  AND CASE WHEN t.name IS NULL THEN event_type_unknown(e.type) ELSE t.low_stock <> 0 END
ORDER BY e.skus[1], e.locations[1], e.position DESC
ON CONFLICT (sku, location) DO UPDATE
SET low           = EXCLUDED.low,
    available     = EXCLUDED.available,
    reorder_point = EXCLUDED.reorder_point,
    position      = EXCLUDED.position,
    since         = EXCLUDED.since
WHERE s.position < EXCLUDED.position
