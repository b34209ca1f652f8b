-- Folds the events in ($1:$2, $3:$4] (safe commit order) into stock_levels.
-- Set-based: every stock effect of the batch is summed per item and added
-- with one upsert. The effects are those of Event::stock_effects in Rust; the
-- audit checks the two against each other.
WITH batch AS (
    SELECT position, type, data, recorded_at
    FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
), effects AS (
    SELECT data ->> 'sku' AS sku,
           data ->> 'location' AS location,
           CASE type WHEN 'StockReceived' THEN (data ->> 'quantity')::bigint
                     ELSE (data ->> 'delta')::bigint END AS on_hand,
           0::bigint AS reserved,
           0::bigint AS confirmed,
           position,
           recorded_at
    FROM batch
    WHERE type IN ('StockReceived', 'StockAdjusted')
    UNION ALL
    SELECT l ->> 'sku',
           l ->> 'location',
           CASE b.type WHEN 'ReservationConfirmed' THEN -(l ->> 'quantity')::bigint ELSE 0 END,
           CASE b.type WHEN 'ReservationCreated' THEN (l ->> 'quantity')::bigint
                       ELSE -(l ->> 'quantity')::bigint END,
           CASE b.type WHEN 'ReservationConfirmed' THEN (l ->> 'quantity')::bigint ELSE 0 END,
           b.position,
           b.recorded_at
    FROM batch AS b
    CROSS JOIN LATERAL jsonb_array_elements(b.data -> 'lines') AS l
    WHERE b.type IN ('ReservationCreated', 'ReservationConfirmed',
                     'ReservationReleased', 'ReservationExpired')
)
INSERT INTO stock_levels AS s (sku, location, on_hand, reserved, confirmed, last_position, updated_at)
SELECT sku, location, sum(on_hand), sum(reserved), sum(confirmed), max(position), max(recorded_at)
FROM effects
GROUP BY sku, location
ON CONFLICT (sku, location) DO UPDATE
SET on_hand       = s.on_hand + EXCLUDED.on_hand,
    reserved      = s.reserved + EXCLUDED.reserved,
    confirmed     = s.confirmed + EXCLUDED.confirmed,
    last_position = greatest(s.last_position, EXCLUDED.last_position),
    updated_at    = greatest(s.updated_at, EXCLUDED.updated_at)
