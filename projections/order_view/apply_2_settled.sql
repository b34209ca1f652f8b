-- Confirmations, releases and expiries in ($1:$2, $3:$4] of reservations
-- created in an earlier batch (apply_1_created handled the others). They
-- carry the order id, so no lookup of the reservation is needed.
WITH batch AS (
    SELECT stream, position, seq, type, order_id, recorded_at
    FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
      AND seq = 2
      AND type IN ('ReservationConfirmed', 'ReservationReleased', 'ReservationExpired')
)
UPDATE order_view AS o
SET state = CASE b.type WHEN 'ReservationConfirmed' THEN 'CONFIRMED'
                        WHEN 'ReservationReleased' THEN 'RELEASED'
                        ELSE 'EXPIRED' END,
    updated_at = b.recorded_at,
    history = o.history || jsonb_build_array(
        jsonb_build_object('seq', b.seq, 'type', b.type, 'position', b.position)),
    last_position = b.position
FROM batch AS b
WHERE o.order_id = b.order_id
  AND NOT EXISTS (
      SELECT 1 FROM events AS c
      WHERE c.stream = b.stream AND c.seq = 1
        AND (c.tx_id, c.position) > ($1::text::xid8, $2::bigint)
        AND (c.tx_id, c.position) <= ($3::text::xid8, $4::bigint))
