-- Least privilege (docs/auditing.md, "Roles"). Two group roles, created here
-- when missing (which needs a role that may create roles, once per server):
--
-- stockledger_owner    owns the tables; migrations from 0011 on, the live
--                      projection tables and rebuilds act as it (`SET LOCAL
--                      ROLE`), whoever runs them, as long as they are members.
-- stockledger_service  what the server and the workers connect as (through a
--                      login that is a member): SELECT and INSERT on the log
--                      and its chain, and nothing else there; reads and
--                      writes on the read models and the runtime tables.
--
-- Neither may log in. The role that runs this migration becomes a member of
-- the owner, so a deployment that ran as it before goes on working; moving
-- its server to a login in the service role is the operator's step.
DO $$
BEGIN
    -- Checked first: CREATE ROLE wants the right to create roles even when
    -- the role exists, and a DBA may have made both beforehand.
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'stockledger_owner') THEN
        BEGIN
            CREATE ROLE stockledger_owner NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL; -- another database on this server made it at the same moment
        END;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'stockledger_service') THEN
        BEGIN
            CREATE ROLE stockledger_service NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
    IF NOT pg_has_role(current_user, 'stockledger_owner', 'MEMBER') THEN
        BEGIN
            EXECUTE format('GRANT stockledger_owner TO %I', current_user);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'migration 0010 needs a superuser, or a member of stockledger_owner (docs/auditing.md, "Roles")';
        END;
    END IF;
END $$;

-- The owner takes what stockledger installed: the objects of whoever owns
-- `events`, in this schema and in the rebuilds' own schemas (not other
-- applications' objects, not extensions' members).
DO $$
DECLARE
    installer oid := (SELECT relowner FROM pg_class WHERE oid = 'public.events'::regclass);
    schemas oid[] := ARRAY['public'::regnamespace::oid,
                           to_regnamespace('stockledger_rebuild')::oid,
                           to_regnamespace('stockledger_retired')::oid];
    r record;
BEGIN
    FOR r IN SELECT c.oid::regclass AS t FROM pg_class c
             WHERE c.relnamespace = ANY (schemas) AND c.relkind IN ('r', 'p', 'v', 'm')
               AND c.relowner = installer
               AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                               AND d.objid = c.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('ALTER TABLE %s OWNER TO stockledger_owner', r.t);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p
             WHERE p.pronamespace = 'public'::regnamespace AND p.prokind = 'f'
               AND p.proowner = installer
               AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                               AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('ALTER FUNCTION %s OWNER TO stockledger_owner', r.f);
    END LOOP;
    FOR r IN SELECT nspname FROM pg_namespace
             WHERE nspname IN ('stockledger_rebuild', 'stockledger_retired')
    LOOP
        EXECUTE format('ALTER SCHEMA %I OWNER TO stockledger_owner', r.nspname);
    END LOOP;
    -- Rebuilds create their copies in schemas of their own.
    EXECUTE format('GRANT CREATE ON DATABASE %I TO stockledger_owner', current_database());
END $$;
GRANT CREATE, USAGE ON SCHEMA public TO stockledger_owner;
-- PostgreSQL 15's default, made sure of on a cluster upgraded from before it:
-- nobody else creates objects here.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- The service reads and writes what the owner owns here, then loses what it
-- must not have on the log.
GRANT USAGE ON SCHEMA public TO stockledger_service;
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.oid::regclass AS t, c.relkind FROM pg_class c
             WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
               AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = 'stockledger_owner')
    LOOP
        IF r.relkind = 'S' THEN
            EXECUTE format('GRANT USAGE, SELECT ON SEQUENCE %s TO stockledger_service', r.t);
        ELSE
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO stockledger_service', r.t);
        END IF;
    END LOOP;
END $$;
-- The log and its chain: appended to and read, never changed. Not being the
-- owner, the service cannot switch their triggers off either.
REVOKE UPDATE, DELETE, TRUNCATE ON events, event_chain, seals FROM stockledger_service;
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON schema_migrations FROM stockledger_service;
-- Tables the owner creates later (read models, rebuilt copies) are the
-- service's to read and write; a later migration that adds a log-like table
-- revokes what it must, as above.
ALTER DEFAULT PRIVILEGES FOR ROLE stockledger_owner
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO stockledger_service;
ALTER DEFAULT PRIVILEGES FOR ROLE stockledger_owner
    GRANT USAGE, SELECT ON SEQUENCES TO stockledger_service;

-- Figures as of a past moment need the start of every open transaction here
-- (`pg_stat_activity.xact_start`), and the durability check after a lost
-- commit reply needs the synchronous standbys (`pg_stat_replication`): both
-- are hidden from a role that is not a member of pg_read_all_stats when the
-- session is another login's. Only a superuser (or its admin) can grant it;
-- otherwise say so.
DO $$
BEGIN
    BEGIN
        GRANT pg_read_all_stats TO stockledger_service;
    EXCEPTION WHEN OTHERS THEN
        -- No privilege, or another database's migration granting it at the
        -- same moment (a concurrent update of the shared catalog).
        NULL;
    END;
    IF NOT pg_has_role('stockledger_service', 'pg_read_all_stats', 'MEMBER') THEN
        RAISE WARNING 'grant pg_read_all_stats to stockledger_service (docs/auditing.md, "Roles")';
    END IF;
END $$;
