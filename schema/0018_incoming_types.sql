-- Whether each event type states what an expected receipt still brings, for
-- the `incoming` read model's SQL (the events of `expected:` streams).
-- Written from Rust's `EventType::incoming` with the other columns
-- (`src/store/event_types.rs`), so SQL never spells those types' names. The
-- default keeps a newer or older release's inserts, which do not name the
-- column, valid.
ALTER TABLE event_types ADD COLUMN incoming boolean NOT NULL DEFAULT false;
