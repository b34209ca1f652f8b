-- An item's settings, kept on its balance row: the command path locks that
-- row to decide, so a reserve reads the limit it is judged by under the same
-- lock as the stock. Like the figures, a setting is a cache of the log (the
-- last event that set it) written in the same transaction, and audited.
--
-- max_per_order: the most of the item one order may reserve; NULL for none.
-- Adding a column with no default rewrites nothing: it is instant on a
-- table of any size.
ALTER TABLE item_balances
    ADD COLUMN max_per_order bigint
        CONSTRAINT item_balances_max_per_order_not_negative CHECK (max_per_order >= 0);
