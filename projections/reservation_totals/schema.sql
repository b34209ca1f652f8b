-- By state: how many reservations are open, confirmed, released and
-- expired right now, and how many units are held, were confirmed, were
-- released and expired (a partly confirmed open reservation counts as
-- RESERVED, its confirmed units as CONFIRMED). A tombstone (a release before
-- its reserve) is not a reservation and is not counted.
CREATE TABLE reservation_totals (
    state        text   PRIMARY KEY,
    reservations bigint NOT NULL,
    units        bigint NOT NULL
);
