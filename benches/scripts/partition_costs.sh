#!/bin/sh
# What the number of attached partitions of the log costs (docs/archive.md).
# For a log of 1, 8, 64 or 256 partitions of 5,000 rows:
# - reads: the command path's two lookups by name (src/store/statements.rs:
#   `read`, a stream's events; `owners`, an order's reservation), which say
#   nothing of position and so probe every partition; pgbench, prepared, one
#   client, 5 s, one random stream or order each;
# - probe: 5,000 rows appended through the parent in one statement, with and
#   without a row trigger looking up each row's (stream, seq) and order in
#   every partition (the design schema 0021 did not keep), twice each.
# Run on a database migrated to schema 21 with an empty log (DB=name, default
# probe_g), e.g.
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/probe_g stockledger migrate
#   benches/scripts/partition_costs.sh
set -e
DB=${DB:-probe_g}
P="psql -qX -h 127.0.0.1 -U postgres $DB -v ON_ERROR_STOP=1"
dir=$(mktemp -d)
cat > "$dir/read.sql" <<'SQL'
\set n random(1, :rows)
SELECT e.* FROM unnest(ARRAY['reservation:' || (:n)::text]::text[]) AS s(name)
CROSS JOIN LATERAL (SELECT * FROM events WHERE stream = s.name OFFSET 0) AS e
ORDER BY e.stream, e.seq;
SQL
cat > "$dir/owners.sql" <<'SQL'
\set n random(1, :rows)
SELECT e.order_id, e.stream FROM unnest(ARRAY['fo' || (:n)::text]::text[]) AS o(id)
CROSS JOIN LATERAL (SELECT order_id, stream FROM events
                    WHERE type = 'ReservationCreated' AND order_id = o.id OFFSET 0) AS e;
SQL
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
for n in 1 8 64 256; do
  # n partitions, all but the last full (one: 4,000 rows in it).
  rows=$(( n > 1 ? (n - 1) * 5000 : 4000 ))
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
SELECT 'reservation:' || g, 1, 'ReservationCreated', '{}', '{}', 'fo' || g, '{a}', '{default}', '{1}'
FROM generate_series(1, $rows) g;
VACUUM ANALYZE events;
SQL
  for q in read owners; do
    tps=$(pgbench -n -h 127.0.0.1 -U postgres -M prepared -c 1 -T 5 -D rows=$rows \
          -f "$dir/$q.sql" "$DB" | grep -o 'tps = [0-9.]*' | grep -o '[0-9.]*$')
    echo "partitions=$n reads statement=$q per_second=$tps"
  done
  [ "$n" -gt 1 ] || continue
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
    echo "partitions=$n probe trigger=$trigger 5000 rows: $ms"
    $P -c "DROP TRIGGER IF EXISTS events_once_across_partitions ON events"
  done
done
rm -r "$dir"
