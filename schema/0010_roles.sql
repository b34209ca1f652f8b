-- Least privilege (docs/auditing.md, "Roles"). Two group roles, created here
-- when missing (this needs a role that may create roles, once per server):
--
-- stockledger_owner    owns every table; migrations and projection rebuilds
--                      act as it (`SET LOCAL ROLE`), whoever runs them.
-- stockledger_service  what the server and the workers connect as (through a
--                      login role that is a member): SELECT and INSERT on the
--                      log and its chain, and nothing else there; reads and
--                      writes on the read models and the runtime tables.
--
-- Neither may log in: operators make login roles members of them.
DO $$
BEGIN
    BEGIN
        CREATE ROLE stockledger_owner NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL; -- another database on this server made it first
    END;
    BEGIN
        CREATE ROLE stockledger_service NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
    END;
END $$;

-- The owner owns everything this schema holds so far (tables with their
-- identity sequences, views, functions).
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm')
    LOOP
        EXECUTE format('ALTER TABLE public.%I OWNER TO stockledger_owner', r.relname);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'public'
    LOOP
        EXECUTE format('ALTER FUNCTION %s OWNER TO stockledger_owner', r.f);
    END LOOP;
    -- Rebuilds create their copies in schemas of their own.
    EXECUTE format('GRANT CREATE ON DATABASE %I TO stockledger_owner', current_database());
END $$;
GRANT CREATE, USAGE ON SCHEMA public TO stockledger_owner;

GRANT USAGE ON SCHEMA public TO stockledger_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO stockledger_service;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO stockledger_service;
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

-- The safe horizon reads every writer's transaction id in pg_stat_activity,
-- which shows other roles' sessions only to members of pg_read_all_stats;
-- ending an abandoned transaction of another login needs pg_signal_backend.
-- Only a superuser (or their admin) can grant these: otherwise say so.
DO $$
BEGIN
    GRANT pg_read_all_stats, pg_signal_backend TO stockledger_service;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'grant pg_read_all_stats and pg_signal_backend to stockledger_service (docs/auditing.md, "Roles")';
END $$;
