-- New reservations in ($1:$2, $3:$4]. A plain INSERT: each event is applied
-- exactly once, so a conflict here would be a bug and must fail loudly.
WITH batch AS (
    SELECT position, stream, seq, type, data, recorded_at
    FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
      AND type = 'ReservationCreated'
)
INSERT INTO order_view (order_id, reservation_id, state, lines, expires_at,
                        created_at, updated_at, history, last_position)
SELECT data ->> 'order_id',
       substr(stream, length('reservation:') + 1),
       'RESERVED',
       data -> 'lines',
       (data ->> 'expires_at')::timestamptz,
       recorded_at,
       recorded_at,
       jsonb_build_array(jsonb_build_object('seq', seq, 'type', type, 'position', position, 'at', recorded_at)),
       position
FROM batch
