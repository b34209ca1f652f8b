-- Indexes for the heavy reads: an item's history and its figures as of a
-- past moment. Without them each such read scanned the whole log (0.7-0.9 s
-- on 400k events) and, run in a loop by a reader, starved writers.
--
-- Receipts and adjustments name their item at the top of `data`; reservation
-- events carry it in `data -> 'lines'`, found through a GIN index
-- (jsonb_path_ops serves the `@>` containment the query asks).
CREATE INDEX events_single_item ON events ((data ->> 'sku'), (data ->> 'location'))
    WHERE type IN ('StockReceived', 'StockAdjusted');

CREATE INDEX events_reservation_lines ON events USING gin ((data -> 'lines') jsonb_path_ops);
