-- Tamper evidence (docs/auditing.md): the sealer chains every event in safe
-- commit order and seals blocks of them. Both tables are append-only, like
-- the log; what they prove does not rest on that (an administrator can
-- switch triggers off), but on digests kept outside the database.

-- One row per event, in the order it was chained: `hash` is the chain hash
-- at that point, SHA-256 over the previous one and the event's leaf hash.
CREATE TABLE event_chain (
    seq      bigint PRIMARY KEY CHECK (seq >= 1),
    position bigint NOT NULL UNIQUE,
    hash     bytea  NOT NULL CHECK (length(hash) = 32)
);

-- One row per sealed block of consecutive chain rows: the Merkle root of
-- their leaves, the chain hash at its last row, and the previous block's
-- seal hash, all covered by this block's own `hash`. `last_tx_id` and
-- `last_position` are the sealer's cursor in safe commit order (not hashed:
-- the chain's order is the sequence `seq`).
CREATE TABLE seals (
    block         bigint      PRIMARY KEY CHECK (block >= 1),
    first_seq     bigint      NOT NULL CHECK (first_seq >= 1),
    last_seq      bigint      NOT NULL,
    merkle_root   bytea       NOT NULL CHECK (length(merkle_root) = 32),
    chain_head    bytea       NOT NULL CHECK (length(chain_head) = 32),
    previous      bytea       NOT NULL CHECK (length(previous) = 32),
    hash          bytea       NOT NULL UNIQUE CHECK (length(hash) = 32),
    last_tx_id    bigint      NOT NULL,
    last_position bigint      NOT NULL,
    sealed_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (last_seq >= first_seq)
);

CREATE TRIGGER event_chain_no_update_delete
    BEFORE UPDATE OR DELETE ON event_chain
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER event_chain_no_truncate
    BEFORE TRUNCATE ON event_chain
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER seals_no_update_delete
    BEFORE UPDATE OR DELETE ON seals
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER seals_no_truncate
    BEFORE TRUNCATE ON seals
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();
