-- Reservations created in ($1:$2, $3:$4] become open.
INSERT INTO reservation_expiry (reservation_id, order_id, expires_at)
SELECT substr(stream, length('reservation:') + 1),
       data ->> 'order_id',
       (data ->> 'expires_at')::timestamptz
FROM events
WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
  AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
  AND type = 'ReservationCreated'
