-- Issue 28: every event says the version of its type's shape it was written
-- in (src/domain/shape.rs). The log never changes, so a change of shape is a
-- new version and an upcast in the code, never a rewrite of the rows: the
-- sealed leaves stay as they were hashed. docs/events.md has the procedure.
--
-- Every event written before this was written in version 1 of its shape.
-- Adding a column with a constant default rewrites nothing: the rows that
-- exist read the default from the catalogue. The CHECK is NOT VALID for the
-- same reason: validating it would read the whole log under this statement's
-- lock, and every existing row holds the default, 1. New rows are checked.
ALTER TABLE events
    ADD COLUMN version smallint NOT NULL DEFAULT 1,
    ADD CONSTRAINT events_version_from_1 CHECK (version >= 1) NOT VALID;

-- A fence for the upgrade. A release from before this schema, still running
-- beside a newer one, reads a version-2 event as if it were version 1 (it
-- does not select `version`), and its sealer would hash it so: seals are
-- for ever, and every later `verify` would name those events as altered.
-- Every connection of a release of this schema or later says which schema
-- it was built for (`stockledger.schema`, a startup option: src/store/pool.rs);
-- chain rows for events of a version above 1, from a session that does not
-- say so, are refused (SQLSTATE SL004), so an old sealer stops with this
-- message instead of sealing wrong leaves. Its `verify` and its relay do
-- not write here: the README's upgrade notes say to upgrade them too.
CREATE FUNCTION event_chain_reads_versions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Two steps, so that a session of this release or a later one looks up
    -- nothing: it only reads its setting.
    IF coalesce(nullif(current_setting('stockledger.schema', true), ''), '0')::int < 20 THEN
        IF EXISTS (SELECT 1 FROM chained AS c JOIN events AS e ON e.position = c.position
                   WHERE e.version > 1) THEN
            RAISE EXCEPTION 'this release cannot seal events written in a later version of their shape'
                USING ERRCODE = 'SL004',
                      HINT = 'upgrade every process that seals (stockledger serve, stockledger seal) to a release of schema 20 or later';
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER event_chain_reads_versions
    AFTER INSERT ON event_chain
    REFERENCING NEW TABLE AS chained
    FOR EACH STATEMENT EXECUTE FUNCTION event_chain_reads_versions();
