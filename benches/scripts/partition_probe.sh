#!/bin/sh
# The cost of a row trigger probing every partition of the log for the
# (stream, seq) and the order being appended (the design schema 0021 did not
# keep): 5,000 rows appended through the parent, with and without it, as the
# log has 8, 64 or 256 partitions of 5,000 rows. Run on a database migrated to
# schema 21 with an empty log (DB=name, default probe_g), e.g.
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/probe_g stockledger migrate
#   benches/scripts/partition_probe.sh
set -e
P="psql -qX -h 127.0.0.1 -U postgres ${DB:-probe_g} -v ON_ERROR_STOP=1"
$P <<'SQL'
CREATE OR REPLACE FUNCTION events_once_across_partitions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM events WHERE stream = NEW.stream AND seq = NEW.seq) THEN
        RAISE EXCEPTION 'stream % already has an event at %', NEW.stream, NEW.seq
            USING ERRCODE = 'unique_violation';
    END IF;
    IF NEW.type = 'ReservationCreated' AND EXISTS (
        SELECT 1 FROM events WHERE order_id = NEW.order_id AND type = 'ReservationCreated'
    ) THEN
        RAISE EXCEPTION 'order % already has a reservation', NEW.order_id
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NEW;
END;
$$;
SQL
for n in 8 64 256; do
  $P <<SQL
UPDATE log_partitioning SET rows_per_partition = 5000;
DO \$\$
DECLARE r record;
BEGIN
    FOR r IN SELECT parent, name FROM log_partitions WHERE parent = 'events' LOOP
        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', r.parent, r.name);
        EXECUTE format('DROP TABLE %I', r.name);
    END LOOP;
    DELETE FROM log_partitions WHERE parent = 'events';
    FOR i IN 0..$n - 1 LOOP
        PERFORM log_add_partition('events', 1 + i * 5000, 1 + (i + 1) * 5000);
    END LOOP;
END \$\$;
SELECT setval('events_position', 1, false);
INSERT INTO events (stream, seq, type, data, metadata, order_id, skus, locations, quantities)
SELECT 'reservation:f' || g, 1, 'ReservationCreated', '{}', '{}', 'fo' || g, '{a}', '{default}', '{1}'
FROM generate_series(1, ($n - 1) * 5000) g;
VACUUM ANALYZE events;
SQL
  for trigger in on off on off; do
    if [ $trigger = on ]; then
      $P -c "CREATE TRIGGER events_once_across_partitions BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_once_across_partitions()"
    fi
    ms=$($P -At <<SQL | grep -o '[0-9.]* ms' | tail -1
SELECT setval('events_position', ($n - 1) * 5000);
BEGIN;
\timing on
INSERT INTO events (stream, seq, type, data, metadata, order_id, skus, locations, quantities)
SELECT 'reservation:n' || g, 1, 'ReservationCreated', '{}', '{}', 'no' || g, '{a}', '{default}', '{1}'
FROM generate_series(1, 5000) g;
\timing off
ROLLBACK;
SQL
)
    echo "partitions=$n trigger=$trigger 5000 rows: $ms"
    $P -c "DROP TRIGGER IF EXISTS events_once_across_partitions ON events"
  done
done
