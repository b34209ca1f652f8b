-- Open (RESERVED) reservations by expiry, for the expiry worker.
CREATE TABLE reservation_expiry (
    reservation_id text        PRIMARY KEY,
    order_id       text        NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX reservation_expiry_due ON reservation_expiry (expires_at);
