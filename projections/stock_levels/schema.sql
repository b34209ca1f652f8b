-- Stock figures per item, folded from the log. Unqualified names: the runtime
-- creates the tables in the live schema or in the rebuild schema.
CREATE TABLE stock_levels (
    sku           text        NOT NULL,
    location      text        NOT NULL,
    on_hand       bigint      NOT NULL,
    reserved      bigint      NOT NULL,
    confirmed     bigint      NOT NULL,
    -- Ordered, waiting for stock to arrive (backorders and pre-orders).
    backordered   bigint      NOT NULL DEFAULT 0,
    -- What can still be promised from stock on hand: negative while more
    -- waits than is on the shelf (the rest is expected).
    available     bigint      GENERATED ALWAYS AS (on_hand - reserved - backordered) STORED,
    -- Highest log position that changed this item.
    last_position bigint      NOT NULL,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (sku, location)
);
