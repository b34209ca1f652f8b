//! `stockledger-bench storage`: what the log costs on disk, per event, and
//! what each column and each index of it costs (issue 28).
//!
//! It writes the hot-reservation workload (`commands --scenarios hot`: one
//! unit of one item per reservation, 64 callers, group commit) through the
//! command path, or measures a log already there (`--reuse`, e.g. the
//! `projections` benchmark's), then:
//! - the `events` table as it is: its heap, the average stored size of each
//!   column, and each index, per event;
//! - a candidate lean layout of the same events (`LEAN_TABLE`), filled in
//!   log order with its indexes in place, so that its indexes grow as the
//!   live ones do, measured the same way. It is a measurement, not a
//!   migration: which layout the log takes is decided from these figures
//!   (docs/benchmarks.md, "Issue 28").

use std::sync::Arc;

use clap::Args as ClapArgs;
use serde_json::json;
use stockledger::domain::{CommandContext, EventType, LineRequest, ReserveRequest};
use stockledger::domain::{ReceiveRequest, StreamKind};
use stockledger::store::group::GroupConfig;
use stockledger::store::{pool, Store};
use tokio_postgres::Client;

use crate::database::{bench_database, LEAVES};
use crate::output::{markdown_table, Printer};

/// Units of the hot item: more than any run reserves.
const HOT_UNITS: i64 = 1_000_000;

#[derive(ClapArgs, Debug)]
pub struct StorageArgs {
    /// Reservations to write.
    #[arg(long, default_value_t = 100_000)]
    events: u64,
    /// Concurrent callers writing them.
    #[arg(long, default_value_t = 64)]
    callers: u64,
    /// The benchmark's own database (dropped and recreated, unless `--reuse`).
    #[arg(long, default_value = "stockledger_bench_storage")]
    database: String,
    /// Measure the log already in `--database`; write nothing.
    #[arg(long)]
    reuse: bool,
    /// Partitions of this many rows for the log written (the product's
    /// default, 2^24, holds the whole run in one open partition): with
    /// `--pack`, the full ones are packed and measured again.
    #[arg(long)]
    rows_per_partition: Option<i64>,
    /// After the first measurement, run `pack` (the full, sealed
    /// partitions' indexes rebuilt) and measure the log again.
    #[arg(long)]
    pack: bool,
}

pub async fn run(
    args: StorageArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let config = bench_database(database_url, &args.database, !args.reuse).await?;
    let store = Store::new(pool::build(config.clone(), args.callers as usize)?);
    store.migrate().await?;
    if !args.reuse {
        if let Some(rows) = args.rows_per_partition {
            let (mut client, connection) = config.connect(tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            stockledger::store::room::partition_anew(&mut client, rows, 0).await?;
        }
        printer.progress(&format!("writing {} hot reservations", args.events));
        write_hot(&store, &args).await?;
    }
    let client = pool::get(store.pool()).await?;
    // A copy, a VACUUM and a REINDEX of a long log outlast the pool's
    // statement timeout, which is for commands.
    client.batch_execute("SET statement_timeout = 0").await?;
    let live = measure(&client, "events").await?;
    let packed_live = if args.pack {
        Some(pack_and_measure(&store, &client, printer).await?)
    } else {
        None
    };
    printer.progress("copying the log into the lean layout");
    fill_lean(&client).await?;
    let lean = measure(&client, LEAN).await?;
    // What a partition that takes no more writes could cost: its indexes
    // rebuilt once, packed, instead of grown by splits.
    client
        .batch_execute(&format!("REINDEX TABLE {LEAN}"))
        .await?;
    let packed = measure(&client, LEAN).await?;
    let mut markdown = format!(
        "### The log as it is (`events`)\n\n{}\n### The lean layout (`{LEAN}`)\n\n{}\n\
         ### The lean layout, its indexes rebuilt\n\n{}",
        live.markdown(),
        lean.markdown(),
        packed.markdown()
    );
    if let Some(p) = &packed_live {
        markdown.push_str(&format!("\n### The log after `pack`\n\n{}", p.markdown()));
    }
    printer.result(
        &json!({"events": live.json(), "lean": lean.json(), "lean_reindexed": packed.json(),
                "events_packed": packed_live.as_ref().map(Footprint::json)}),
        &markdown,
    );
    Ok(())
}

/// Seals the log, packs its full, sealed partitions (`stockledger pack`)
/// and measures it again.
async fn pack_and_measure(
    store: &Store,
    client: &Client,
    printer: &Printer,
) -> anyhow::Result<Footprint> {
    printer.progress("sealing, then packing the full partitions");
    stockledger::seal::sealer::catch_up(store.pool()).await?;
    let packed = stockledger::store::pack::pack_sealed(store.pool()).await?;
    printer.progress(&format!("packed {} partitions", packed.len()));
    measure(client, "events").await
}

/// The hot workload: a receipt, then `events` reservations of one unit of
/// the one item, from `callers` tasks, through group commit.
async fn write_hot(store: &Store, args: &StorageArgs) -> anyhow::Result<()> {
    let store = Arc::new(store.grouped(GroupConfig::default()));
    let receipt = ReceiveRequest {
        receipt_id: "hot-stock".into(),
        sku: "hot-0".into(),
        location: None,
        quantity: HOT_UNITS,
        against: None,
    }
    .validate()?;
    store
        .execute(receipt, CommandContext::new("bench"))
        .await?
        .map_err(|r| anyhow::anyhow!("the receipt was refused: {r:?}"))?;
    let mut tasks = tokio::task::JoinSet::new();
    for caller in 0..args.callers {
        let (store, per_caller) = (store.clone(), args.events / args.callers);
        tasks.spawn(async move {
            for n in 0..per_caller {
                let id = format!("hot-storage-{caller}-{n}");
                let reserve = ReserveRequest {
                    reservation_id: id.clone(),
                    order_id: format!("o-{id}"),
                    lines: vec![LineRequest {
                        sku: "hot-0".into(),
                        location: None,
                        quantity: 1,
                    }],
                    ttl_seconds: None,
                    backorder: false,
                    latest_arrival: None,
                }
                .validate()?;
                store
                    .execute(reserve, CommandContext::new("bench"))
                    .await?
                    .map_err(|r| anyhow::anyhow!("{id} was refused: {r:?}"))?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

/// Bytes per event of one table: its heap, its columns, its indexes.
struct Footprint {
    events: i64,
    heap: f64,
    /// TOAST, free space and visibility maps.
    other: f64,
    columns: Vec<(String, f64)>,
    indexes: Vec<(String, f64)>,
    /// Indexes measured as alternatives to some of `indexes`: not counted.
    alternatives: Vec<(String, f64)>,
}

impl Footprint {
    fn total(&self) -> f64 {
        self.heap + self.other + self.indexes.iter().map(|(_, b)| b).sum::<f64>()
    }

    fn markdown(&self) -> String {
        let mut rows = vec![vec!["heap".into(), format!("{:.1}", self.heap)]];
        rows.extend(
            self.columns
                .iter()
                .map(|(c, b)| vec![format!("· column `{c}`"), format!("{b:.1}")]),
        );
        rows.push(vec![
            "TOAST, free space, visibility".into(),
            format!("{:.1}", self.other),
        ]);
        rows.extend(
            self.indexes
                .iter()
                .map(|(i, b)| vec![format!("index `{i}`"), format!("{b:.1}")]),
        );
        rows.push(vec!["**total**".into(), format!("**{:.1}**", self.total())]);
        rows.extend(self.alternatives.iter().map(|(i, b)| {
            vec![
                format!("alternative index `{i}` (not in the total)"),
                format!("{b:.1}"),
            ]
        }));
        format!(
            "{} events.\n\n{}",
            self.events,
            markdown_table(&["what", "bytes per event"], &rows)
        )
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "events": self.events, "heap": self.heap, "other": self.other,
            "columns": self.columns, "indexes": self.indexes, "total": self.total(),
            "alternatives": self.alternatives,
        })
    }
}

/// Measures `table` after a VACUUM (so that what is counted is what stays).
async fn measure(client: &Client, table: &str) -> anyhow::Result<Footprint> {
    client
        .batch_execute(&format!("VACUUM ANALYZE {table}"))
        .await?;
    let oid: u32 = client
        .query_one("SELECT $1::text::regclass::oid", &[&table])
        .await?
        .get(0);
    let events: i64 = client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await?
        .get(0);
    let per = |bytes: i64| bytes as f64 / events.max(1) as f64;
    // Summed over the tables that hold its rows.
    let sizes = client
        .query_one(
            &format!(
                "SELECT coalesce(sum(pg_relation_size(relid)), 0)::int8,
                        coalesce(sum(pg_total_relation_size(relid) - pg_relation_size(relid)
                                     - pg_indexes_size(relid)), 0)::int8
                 FROM ({LEAVES}) l"
            ),
            &[&oid],
        )
        .await?;
    let names: Vec<String> = client
        .query(
            "SELECT attname FROM pg_attribute WHERE attrelid = $1 AND attnum > 0
             AND NOT attisdropped ORDER BY attnum",
            &[&oid],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut columns = Vec::new();
    for c in names {
        let avg: f64 = client
            .query_one(
                // Per event, NULLs as the 0 bytes they take (an average
                // of the sizes alone would leave them out).
                &format!(
                    "SELECT coalesce(avg(coalesce(pg_column_size({c:?}), 0)), 0)::float8 \
                     FROM {table}"
                ),
                &[],
            )
            .await?
            .get(0);
        columns.push((c, avg));
    }
    let (alternatives, indexes): (Vec<_>, Vec<_>) = index_bytes(client, oid)
        .await?
        .into_iter()
        .map(|(name, bytes)| (name, per(bytes)))
        .partition(|(name, _)| ALTERNATIVES.contains(&name.as_str()));
    Ok(Footprint {
        events,
        heap: per(sizes.get(0)),
        other: per(sizes.get(1)),
        columns,
        indexes,
        alternatives,
    })
}

/// Each index of `table` (oid) and its bytes, summed over the partitions:
/// each partition's index counted as its parent's; the unique indexes a
/// partitioned log keeps per partition (no parent holds them) by their name
/// without the partition's.
async fn index_bytes(client: &Client, oid: u32) -> anyhow::Result<Vec<(String, i64)>> {
    Ok(client
        .query(
            &format!(
                "SELECT coalesce(h.inhparent::regclass::text,
                                 regexp_replace(x.indexrelid::regclass::text,
                                                '^(events|event_chain)_(from_[0-9]+|history)_',
                                                '\\1_')),
                        sum(pg_relation_size(x.indexrelid))::int8
                 FROM pg_index x LEFT JOIN pg_inherits h ON h.inhrelid = x.indexrelid
                 WHERE x.indrelid IN ({LEAVES})
                 GROUP BY 1 ORDER BY 2 DESC"
            ),
            &[&oid],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

/// The candidate lean table.
const LEAN: &str = "lean_events";

/// A candidate lean layout of the log row, with the same keys:
/// - fixed-size columns first, so that none needs padding;
/// - the type and the stream kind as small numbers (their names are Rust's,
///   passed in as parameters: `EventType::ALL`, `StreamKind::ALL`), and the
///   stream's id without its kind's prefix;
/// - the metadata as typed columns: the command id as a uuid, the
///   fingerprint as its 32 bytes, the rest as text only when there is any;
/// - `locations` NULL when every line is at the default location;
/// - a hold's `expires_at` and `ttl_seconds` (a reservation's, an
///   extension's) as typed columns;
/// - `data` without them, without a reservation's `request_hash` where it
///   repeats the fingerprint, and NULL when nothing is left.
///
/// Its indexes are the live ones on the new columns; `lean_commit_brin`,
/// `lean_stream_hash` and `lean_order_hash` are alternatives measured beside
/// them (a BRIN over positions, as a commit-order walk could use in
/// place of the B-tree on (tx_id, position): PostgreSQL has no BRIN for
/// xid8; hash indexes for the lookups by
/// stream and by order), not counted in its total.
const LEAN_TABLE: &str = "
    DROP TABLE IF EXISTS lean_events;
    CREATE TABLE lean_events (
        position       bigint      NOT NULL PRIMARY KEY,
        tx_id          xid8        NOT NULL,
        recorded_at    timestamptz NOT NULL,
        expires_at     timestamptz,
        command_id     uuid        NOT NULL,
        ttl_seconds    integer,
        seq            integer     NOT NULL,
        kind           smallint    NOT NULL,
        type           smallint    NOT NULL,
        version        smallint    NOT NULL,
        stream         text        NOT NULL,
        actor          text        NOT NULL,
        fingerprint    bytea,
        correlation_id text,
        causation_id   text,
        order_id       text,
        skus           text[]      NOT NULL,
        locations      text[],
        quantities     bigint[]    NOT NULL,
        data           jsonb
    );
    CREATE UNIQUE INDEX lean_stream_seq ON lean_events (kind, stream, seq);
    CREATE INDEX lean_commit_order ON lean_events (tx_id, position);
    CREATE UNIQUE INDEX lean_order_once ON lean_events (order_id)
        WHERE type = {reservation_created};
    CREATE INDEX lean_items ON lean_events USING gin (skus);";

/// The indexes `LEAN_ALTERNATIVES` makes.
const ALTERNATIVES: [&str; 3] = ["lean_commit_brin", "lean_stream_hash", "lean_order_hash"];

/// The alternatives, created after the copy (each is built as it would be
/// kept: BRIN summarises ranges, hash indexes grow by splitting buckets).
const LEAN_ALTERNATIVES: &str = "
    CREATE INDEX lean_commit_brin ON lean_events USING brin (position);
    CREATE INDEX lean_stream_hash ON lean_events USING hash (stream);
    CREATE INDEX lean_order_hash ON lean_events USING hash (order_id);";

const LEAN_COPY: &str = "
    INSERT INTO lean_events
    SELECT e.position, e.tx_id, e.recorded_at, (e.data ->> 'expires_at')::timestamptz,
           (e.metadata ->> 'command_id')::uuid, (e.data ->> 'ttl_seconds')::int4, e.seq,
           k.n, t.n, e.version, substr(e.stream, length(k.prefix) + 1),
           e.metadata ->> 'actor',
           -- Since schema 20 a reservation's row keeps its fingerprint in
           -- `data` only, as its request_hash.
           decode(CASE WHEN e.metadata ? 'fingerprint' THEN e.metadata ->> 'fingerprint'
                       ELSE e.data ->> 'request_hash' END, 'hex'),
           e.metadata ->> 'correlation_id', e.metadata ->> 'causation_id',
           e.order_id, e.skus,
           CASE WHEN e.locations <@ ARRAY[$3] THEN NULL ELSE e.locations END,
           e.quantities,
           nullif(CASE WHEN NOT e.metadata ? 'fingerprint'
                         OR e.data ->> 'request_hash' = e.metadata ->> 'fingerprint'
                       THEN e.data - 'request_hash' ELSE e.data END
                  - 'expires_at' - 'ttl_seconds', '{}')
    FROM events AS e
    JOIN unnest($1::text[]) WITH ORDINALITY AS t(name, n) ON t.name = e.type
    JOIN unnest($2::text[]) WITH ORDINALITY AS k(prefix, n) ON starts_with(e.stream, k.prefix)
    ORDER BY e.position";

async fn fill_lean(client: &Client) -> anyhow::Result<()> {
    let created = EventType::ALL
        .iter()
        .position(|t| *t == EventType::ReservationCreated)
        .expect("a type")
        + 1;
    client
        .batch_execute(&LEAN_TABLE.replace("{reservation_created}", &created.to_string()))
        .await?;
    let types: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
    let kinds: Vec<&str> = StreamKind::ALL.iter().map(|k| k.prefix()).collect();
    let default = stockledger::domain::ids::DEFAULT_LOCATION;
    client
        .execute(LEAN_COPY, &[&types, &kinds, &default])
        .await?;
    client.batch_execute(LEAN_ALTERNATIVES).await?;
    Ok(())
}
