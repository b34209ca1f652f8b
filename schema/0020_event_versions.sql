-- Issue 28: every event says the version of its type's shape it was written
-- in (src/domain/shape.rs). The log never changes, so a change of shape is a
-- new version and an upcast in the code, never a rewrite of the rows: the
-- sealed leaves stay as they were hashed. docs/events.md has the procedure.
--
-- Every event written before this was written in version 1 of its shape.
-- Adding a column with a constant default rewrites nothing: the rows that
-- exist read the default from the catalogue. The default stays, so that a
-- release from before this migration, still running beside a newer one
-- during an upgrade, writes its events as what they are: version 1.
ALTER TABLE events
    ADD COLUMN version smallint NOT NULL DEFAULT 1 CHECK (version >= 1);
