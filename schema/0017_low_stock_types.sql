-- What each event type says of its item's stock, for the `low_stock` read
-- model's SQL: 1, the item is low from this event on (`StockLow`); -1, it
-- is no longer low (`StockRecovered`); 0, nothing. Written from Rust's
-- `EventType::low_stock` with the other columns (`src/store/event_types.rs`),
-- so SQL never spells the alerts' names. The default keeps a newer or older
-- release's inserts, which do not name the column, valid.
ALTER TABLE event_types
    ADD COLUMN low_stock smallint NOT NULL DEFAULT 0 CHECK (low_stock BETWEEN -1 AND 1);
