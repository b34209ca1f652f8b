-- An item's reorder point, kept on its balance row beside its per-order
-- limit (schema 0015), for the same reason: the command path decides a
-- low-stock alert from the row it has locked. NULL: no point, never low.
ALTER TABLE item_balances
    ADD COLUMN reorder_point bigint
        CONSTRAINT item_balances_reorder_point_not_negative CHECK (reorder_point >= 0);

-- Whether the item's last low-stock alert said low: the next crossing is
-- decided against it (`src/domain/alerts.rs`), so an alert a writer failed
-- to write is written by the next command on the item. Set with each alert.
ALTER TABLE item_balances ADD COLUMN alerted_low boolean NOT NULL DEFAULT false;
