-- $5 is the prefix of reservation streams: the reservation id is the rest of the name.
-- Reservations settled (confirmed, released or expired) in ($1:$2, $3:$4]
-- are closed. One created in the same batch was never inserted; deleting it
-- is a no-op. A tombstone (seq 1) was never a reservation.
DELETE FROM reservation_expiry AS r
USING events AS e
WHERE (e.tx_id, e.position) > ($1::text::xid8, $2::bigint)
  AND (e.tx_id, e.position) <= ($3::text::xid8, $4::bigint)
  AND e.seq >= 2
  AND e.type IN ('ReservationConfirmed', 'ReservationReleased', 'ReservationExpired')
  AND r.reservation_id = substr(e.stream, length($5::text) + 1)
