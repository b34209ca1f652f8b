-- $5 is the prefix of reservation streams: the reservation id is the rest of the name.
-- Reservations extended in ($1:$2, $3:$4] expire at their latest extension
-- (each extension is later than the one before). One settled in the same
-- batch has no row by now or loses it in apply_3_closed.
UPDATE reservation_expiry AS r
SET expires_at = x.expires_at
FROM (
    SELECT stream, max((data ->> 'expires_at')::timestamptz) AS expires_at
    FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
      AND type = 'ReservationExtended'
    GROUP BY stream
) AS x
WHERE r.reservation_id = substr(x.stream, length($5::text) + 1)
