-- Issue 28, decision 5 (docs/archive.md): only the owner moves a snapshot's
-- checkpoint. The service must write `projection_checkpoints` (its workers
-- move the live rows), so a grant cannot tell the rows apart; this trigger
-- does. The snapshot's tables are already the owner's alone (the detach
-- revokes the service's writes on `stockledger_snapshot`); without this, a
-- service that moved the snapshot's checkpoint would make a rebuild after
-- the cut skip or replay events. That would be caught by the rebuild's check
-- and by `audit --from-archive`, but it should not be possible at all.
--
-- A superuser, and every login of the owner's group, passes: the detach,
-- the rebuild and the migrations act as the owner.

CREATE FUNCTION snapshot_checkpoint_owner_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF ((TG_OP <> 'INSERT' AND OLD.slot = 'snapshot')
        OR (TG_OP <> 'DELETE' AND NEW.slot = 'snapshot'))
       AND NOT pg_has_role(current_user, 'stockledger_owner', 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied: only the owner moves a snapshot''s checkpoint (%)',
            coalesce(NEW.name, OLD.name)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER projection_checkpoints_snapshot_owner_only
    BEFORE INSERT OR UPDATE OR DELETE ON projection_checkpoints
    FOR EACH ROW EXECUTE FUNCTION snapshot_checkpoint_owner_only();
