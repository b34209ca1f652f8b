-- Folds the events in ($1:$2, $3:$4] (safe commit order) into stock_levels.
-- Set-based, in one scan: every event's item lines are its typed columns
-- (`skus`, `locations`, `quantities`), every line's effect is derived from the
-- event type, the effects are summed per item and added with one upsert. The
-- effects are those of Event::for_each_effect in Rust; the audit checks the
-- two against each other.
INSERT INTO stock_levels AS s (sku, location, on_hand, reserved, confirmed, last_position, updated_at)
SELECT l.sku,
       l.location,
       sum(CASE e.type WHEN 'StockReceived' THEN l.quantity
                       WHEN 'StockAdjusted' THEN l.quantity
                       -- Its lines are signed: the source's minus, the destination's plus.
                       WHEN 'StockTransferred' THEN l.quantity
                       -- Its line is the change from the books.
                       WHEN 'StockCounted' THEN l.quantity
                       WHEN 'ReservationConfirmed' THEN -l.quantity
                       WHEN 'ReservationLinesConfirmed' THEN -l.quantity
                       ELSE 0 END),
       sum(CASE e.type WHEN 'ReservationCreated' THEN l.quantity
                       WHEN 'ReservationConfirmed' THEN -l.quantity
                       WHEN 'ReservationLinesConfirmed' THEN -l.quantity
                       WHEN 'ReservationReleased' THEN -l.quantity
                       WHEN 'ReservationLinesReleased' THEN -l.quantity
                       WHEN 'ReservationExpired' THEN -l.quantity
                       ELSE 0 END),
       sum(CASE e.type WHEN 'ReservationConfirmed' THEN l.quantity
                       WHEN 'ReservationLinesConfirmed' THEN l.quantity
                       ELSE 0 END),
       max(e.position),
       max(e.recorded_at)
FROM events AS e
CROSS JOIN LATERAL unnest(e.skus, e.locations, e.quantities) AS l(sku, location, quantity)
WHERE (e.tx_id, e.position) > ($1::text::xid8, $2::bigint)
  AND (e.tx_id, e.position) <= ($3::text::xid8, $4::bigint)
GROUP BY 1, 2
ON CONFLICT (sku, location) DO UPDATE
SET on_hand       = s.on_hand + EXCLUDED.on_hand,
    reserved      = s.reserved + EXCLUDED.reserved,
    confirmed     = s.confirmed + EXCLUDED.confirmed,
    last_position = greatest(s.last_position, EXCLUDED.last_position),
    updated_at    = greatest(s.updated_at, EXCLUDED.updated_at)
