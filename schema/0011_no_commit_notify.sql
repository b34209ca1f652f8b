-- Command transactions no longer notify. The statement trigger of 0003 called
-- pg_notify in every transaction that appended events, and PostgreSQL
-- serialises the commits of notifying transactions on one global lock held
-- through the commit. The server wakes its own projection workers when its
-- own commands commit (in-process); events appended by any other writer (the
-- CLI, another server) are found by the workers' poll
-- (PROJECTION_POLL_INTERVAL_MS, src/limits.rs).
DROP TRIGGER IF EXISTS events_wake_readers ON events;
DROP FUNCTION IF EXISTS events_notify();
