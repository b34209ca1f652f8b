-- Reservations and the units they hold, by state: how many are open,
-- confirmed, released and expired right now. A tombstone (a release before
-- its reserve) is not a reservation and is not counted.
CREATE TABLE reservation_totals (
    state        text   PRIMARY KEY,
    reservations bigint NOT NULL,
    units        bigint NOT NULL
);
