-- $5 is the prefix of reservation streams: the reservation id is the rest of the name.
-- Reservations created in ($1:$2, $3:$4] and still open at the end of it,
-- at the expiry their reserve set (apply_2_extended moves it later).
INSERT INTO reservation_expiry (reservation_id, order_id, expires_at)
SELECT substr(c.stream, length($5::text) + 1),
       c.order_id,
       (c.data ->> 'expires_at')::timestamptz
FROM events AS c
WHERE (c.tx_id, c.position) > ($1::text::xid8, $2::bigint)
  AND (c.tx_id, c.position) <= ($3::text::xid8, $4::bigint)
  AND c.type = 'ReservationCreated'
  AND NOT EXISTS (
      SELECT 1 FROM events AS s
      WHERE s.stream = c.stream AND s.seq >= 2
        AND s.type IN ('ReservationConfirmed', 'ReservationReleased', 'ReservationExpired')
        AND (s.tx_id, s.position) > ($1::text::xid8, $2::bigint)
        AND (s.tx_id, s.position) <= ($3::text::xid8, $4::bigint))
