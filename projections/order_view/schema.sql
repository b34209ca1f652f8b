-- One row per order: its reservation, state, lines and a compact history.
-- Tombstones (a release before any reserve) have no order and no row here.
CREATE TABLE order_view (
    order_id       text        PRIMARY KEY,
    reservation_id text        NOT NULL,
    state          text        NOT NULL,
    lines          jsonb       NOT NULL,
    expires_at     timestamptz NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    -- [{seq, type, position}], oldest first; the times are created_at and updated_at.
    history        jsonb       NOT NULL,
    last_position  bigint      NOT NULL
);
