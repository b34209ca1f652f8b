-- Issue 25, case 12: key management is a privilege of its own. Until now the
-- service role could write `api_keys` like any runtime table (0010), so
-- whoever held the server's connection could mint an admin key or un-revoke
-- one. Now:
--
-- stockledger_keys_admin  mints and revokes keys (`stockledger keys`): reads
--                         them, inserts them, and sets `revoked_at`; nothing
--                         else. Not a login: give one to whoever manages keys.
-- stockledger_service     only reads them, to authenticate callers.
--
-- A revoked key stays revoked, whoever tries (the trigger below), and a key's
-- row is never deleted, so its hash cannot come back as a new key either.

-- Creating a role needs the migrating user's own right to create roles (the
-- owner, which migrations act as, has none), so this part runs as that user.
RESET ROLE;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'stockledger_keys_admin') THEN
        BEGIN
            CREATE ROLE stockledger_keys_admin NOLOGIN;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN
                NULL; -- another database on this server made it at the same moment
            WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'migration 0013 needs a user that may create roles, or a role stockledger_keys_admin made beforehand (docs/auditing.md, "Roles")';
        END;
    END IF;
    -- The rest as the owner again, when this user may act as it.
    IF pg_has_role(session_user, 'stockledger_owner', 'MEMBER') THEN
        SET LOCAL ROLE stockledger_owner;
    END IF;
END $$;

REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON api_keys FROM stockledger_service;
GRANT USAGE ON SCHEMA public TO stockledger_keys_admin;
GRANT SELECT, INSERT, UPDATE (revoked_at) ON api_keys TO stockledger_keys_admin;
-- `stockledger keys` opens the store like every command, which reads what
-- is applied and which read models are installed.
GRANT SELECT ON schema_migrations, projection_checkpoints TO stockledger_keys_admin;

CREATE FUNCTION api_keys_revocation_is_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
        RAISE EXCEPTION 'key % is revoked, and a revoked key stays revoked', OLD.name
            USING ERRCODE = 'SL003',
                  HINT = 'create a new key';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER api_keys_stay_revoked
    BEFORE UPDATE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_revocation_is_final();
