-- Items and whether they are low, from their last low-stock alert
-- (`StockLow`, `StockRecovered`). Unqualified names: the runtime creates the
-- table in the live schema or in the rebuild schema. An item that recovered
-- keeps its row (low = false), so that an older alert folded later cannot
-- bring it back: a row changes only for an alert at a higher position.
CREATE TABLE low_stock (
    sku           text        NOT NULL,
    location      text        NOT NULL,
    low           boolean     NOT NULL,
    -- Available units and the reorder point, as the alert said them.
    available     bigint      NOT NULL,
    reorder_point bigint,
    -- The alert's position and time: since when the item is (not) low.
    position      bigint      NOT NULL,
    since         timestamptz NOT NULL,
    PRIMARY KEY (sku, location)
);
CREATE INDEX low_stock_low ON low_stock (location, sku) WHERE low;
