#!/bin/sh
# What schema 0021 costs on a log already there: a database at schema 20 (an
# older release's `migrate`), one million events appended by INSERT, then
# this release's `migrate`, timed; the table's and its indexes' files
# (relfilenodes) before and after say whether anything was copied.
#   OLD=/path/to/release-at-schema-20/stockledger NEW=target/release/stockledger \
#     benches/scripts/partition_migration.sh
set -e
DB=${DB:-partition_migration}
URL=postgres://postgres@127.0.0.1:5432/$DB
P="psql -qX -h 127.0.0.1 -U postgres -v ON_ERROR_STOP=1"
$P -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
DATABASE_URL=$URL "$OLD" migrate
$P "$DB" <<'SQL'
INSERT INTO events (stream, seq, type, data, metadata, order_id, skus, locations, quantities)
SELECT 'reservation:f' || g, 1, 'ReservationCreated',
       '{"lines":[{"sku":"apple","location":"default","quantity":1}]}', '{"actor":"t"}',
       'fo' || g, '{apple}', '{default}', '{1}'
FROM generate_series(1, 1000000) g;
VACUUM ANALYZE events;
SQL
files="SELECT c.relname, c.relfilenode FROM pg_class c
       WHERE c.oid = 'events'::regclass OR c.oid IN (SELECT indexrelid FROM pg_index
                                                     WHERE indrelid = 'events'::regclass)
       ORDER BY 2"
$P "$DB" -At -c "$files" > /tmp/partition_migration.before
start=$(date +%s%N)
DATABASE_URL=$URL "$NEW" migrate
end=$(date +%s%N)
echo "migrate to schema 21 on 1,000,000 events: $(( (end - start) / 1000000 )) ms"
$P "$DB" -At -c "$(echo "$files" | sed "s/'events'/'events_history'/g")" > /tmp/partition_migration.after
echo "files before (table events, its indexes):"; cat /tmp/partition_migration.before
echo "files after (partition events_history, its indexes):"; cat /tmp/partition_migration.after
$P "$DB" -At -c "SELECT 'partitions: ' || string_agg(name || ' [' || first || ', ' || next || ')', ', ' ORDER BY parent, first) FROM log_partitions"
