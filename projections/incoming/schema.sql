-- What each expected receipt still brings (`ReceiptExpected`,
-- `ExpectedReceiptChanged`, `ExpectedReceiptDelivered`,
-- `ExpectedReceiptCancelled`): one row per expected receipt, from its event
-- at the highest position. Unqualified names: the runtime creates the table
-- in the live schema or in the rebuild schema. A receipt fully delivered or
-- cancelled keeps its row (outstanding = 0), so that an older event folded
-- later cannot bring it back: a row changes only for an event at a higher
-- position.
CREATE TABLE incoming (
    stream      text        NOT NULL PRIMARY KEY,
    sku         text        NOT NULL,
    location    text        NOT NULL,
    expected_on date        NOT NULL,
    -- The units still expected after the event: its item line's quantity.
    outstanding bigint      NOT NULL CHECK (outstanding >= 0),
    position    bigint      NOT NULL,
    updated_at  timestamptz NOT NULL
);
-- Available to promise reads an item's open expected receipts by date.
CREATE INDEX incoming_item ON incoming (sku, location, expected_on) WHERE outstanding > 0;
