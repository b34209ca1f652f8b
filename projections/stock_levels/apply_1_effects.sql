-- Folds the events in ($1:$2, $3:$4] (safe commit order) into stock_levels.
-- Set-based, in one scan: every event's item lines are its typed columns
-- (`skus`, `locations`, `quantities`); each line moves an item's figures by
-- the signs its event type has in `event_types` (written from Rust's
-- definitions, `log_row::line_effect`), times its quantity; the moves are
-- summed per item and added with one upsert. An event whose type has no
-- row fails the batch (`event_type_unknown`) rather than be skipped. The
-- audit checks the result against its own fold of `Event::for_each_effect`.
INSERT INTO stock_levels AS s (sku, location, on_hand, reserved, confirmed, backordered,
                               last_position, updated_at)
SELECT l.sku,
       l.location,
       sum(t.on_hand * l.quantity),
       sum(t.reserved * l.quantity),
       sum(t.confirmed * l.quantity),
       sum(t.backordered * l.quantity),
       max(e.position),
       max(e.recorded_at)
FROM events AS e
LEFT JOIN event_types AS t ON t.name = e.type
CROSS JOIN LATERAL unnest(e.skus, e.locations, e.quantities) AS l(sku, location, quantity)
WHERE (e.tx_id, e.position) > ($1::text::xid8, $2::bigint)
  AND (e.tx_id, e.position) <= ($3::text::xid8, $4::bigint)
  AND CASE WHEN t.name IS NULL THEN event_type_unknown(e.type) ELSE true END
GROUP BY 1, 2
ON CONFLICT (sku, location) DO UPDATE
SET on_hand       = s.on_hand + EXCLUDED.on_hand,
    reserved      = s.reserved + EXCLUDED.reserved,
    confirmed     = s.confirmed + EXCLUDED.confirmed,
    backordered   = s.backordered + EXCLUDED.backordered,
    last_position = greatest(s.last_position, EXCLUDED.last_position),
    updated_at    = greatest(s.updated_at, EXCLUDED.updated_at)
