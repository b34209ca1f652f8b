-- An item's reorder point, kept on its balance row beside its per-order
-- limit (schema 0015), for the same reason: the command path decides a
-- low-stock alert from the row it has locked. NULL: no point, never low.
ALTER TABLE item_balances
    ADD COLUMN reorder_point bigint
        CONSTRAINT item_balances_reorder_point_not_negative CHECK (reorder_point >= 0);
