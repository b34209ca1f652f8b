//! `stockledger-bench growth`: a long run with archiving on. Round after
//! round the realistic workload (`fill`) appends events, the sealer seals
//! them, the read models apply them, and `archive --detach` writes them to
//! files and takes the partitions the files hold out of the database.
//! Reported per round: the events written so far, what the database holds
//! for them (the log, the chain, the seals, the directory of archived
//! streams and the carried events, with their indexes) and what the files
//! take, and the read models' live copies and their snapshots at the cut
//! (`projection::snapshot`), which the detach brings forward. At the end the
//! files and the database verify against the last digest as one chain, the
//! audit replays both, and every read model is rebuilt from its snapshot,
//! checked against the files.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args as ClapArgs;
use serde_json::json;
use stockledger::seal::archive::{self, Archive};
use stockledger::store::{pool, Store};
use stockledger_bench::fill::{fill, FillConfig};

use crate::database::{bench_database, table_bytes};
use crate::output::{markdown_table, Printer};

/// Connections of the benchmark's pool.
const POOL_SIZE: usize = 8;
/// How long the read models may take to apply a round's events.
const PROJECT_TIMEOUT: Duration = Duration::from_secs(600);
/// What the database keeps of the log, measured each round.
const TABLES: [&str; 5] = [
    "events",
    "event_chain",
    "seals",
    "archived_streams",
    "carried_events",
];

#[derive(ClapArgs, Debug)]
pub struct GrowthArgs {
    /// The benchmark's own database, dropped and made anew.
    #[arg(long, default_value = "stockledger_bench_growth")]
    database: String,
    #[arg(long, default_value_t = 10)]
    rounds: u64,
    #[arg(long, default_value_t = 50_000)]
    events_per_round: u64,
    /// Positions per partition of the log and the chain.
    #[arg(long, default_value_t = 20_000)]
    rows_per_partition: i64,
    #[arg(long, default_value_t = 2_000)]
    items: u32,
    /// The archive directory; emptied first. A temporary one by default.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Forget the archived streams detached more than this many rounds ago
    /// (the operator's retention, `archive --forget-ids-after-days`); by
    /// default every one is kept.
    #[arg(long)]
    keep_rounds: Option<usize>,
}

/// One round's figures.
struct Round {
    written: u64,
    in_database: i64,
    tables: Vec<i64>,
    file_bytes: u64,
    detached: usize,
    /// The read models' live tables and their snapshots, with indexes.
    read_models: i64,
    snapshots: i64,
    /// How long the archive and the detach took (the snapshots brought
    /// forward included).
    archive_seconds: f64,
}

pub async fn run(
    args: GrowthArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let config = bench_database(database_url, &args.database, true).await?;
    let store = Store::new(pool::build(config, POOL_SIZE)?);
    store.migrate().await?;
    {
        let mut client = pool::get(store.pool()).await?;
        stockledger::store::room::partition_anew(&mut client, args.rows_per_partition, 0).await?;
    }
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("stockledger-bench-growth"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut rounds = Vec::new();
    let mut floors = Vec::new();
    let mut written = 0;
    for round in 1..=args.rounds {
        let cfg = FillConfig {
            events: args.events_per_round,
            items: args.items,
            batch: 1000,
            seed: round,
            prefix: format!("g{round}"),
        };
        written += fill(&store, &cfg, |_| {}).await?.events;
        let started = Instant::now();
        let detached = archive_round(&store, &dir).await?;
        let archive_seconds = started.elapsed().as_secs_f64();
        floors.push(floor(&store).await?);
        if let Some(keep) = args.keep_rounds {
            if floors.len() > keep {
                let below = floors[floors.len() - 1 - keep];
                stockledger::store::detach::forget_archived_below(store.pool(), below).await?;
            }
        }
        let mut r = measure(&store, &dir, written, detached).await?;
        r.archive_seconds = archive_seconds;
        printer.progress(&format!(
            "round {round}: {written} events written, {} in the database, {:.1} MiB there",
            r.in_database,
            r.tables.iter().sum::<i64>() as f64 / f64::from(1 << 20)
        ));
        rounds.push(r);
    }
    let digest = store.digest().await?.expect("a sealed log");
    let rebuild = check_at_the_end(&store, &dir, &digest).await?;
    report(printer, &args, &rounds, digest.block, rebuild);
    Ok(())
}

/// The last digest verifies across the files and the database, the audit
/// from the archive is clean, and every read model rebuilds from its
/// snapshot, checked against the files: what the rebuild took.
async fn check_at_the_end(
    store: &Store,
    dir: &Path,
    digest: &stockledger::seal::Digest,
) -> anyhow::Result<serde_json::Value> {
    let files = Archive::open(dir)?.whole()?;
    let verified =
        stockledger::seal::verify::verify_across(store.pool(), Some(digest), &files).await?;
    anyhow::ensure!(
        verified.clean(),
        "verify --archive: {:?}",
        verified.findings
    );
    let audited = stockledger::audit::audit_from_archive(store.pool(), &files).await?;
    anyhow::ensure!(
        audited.clean(),
        "audit --from-archive: {:?}",
        audited.differences
    );
    let rebuilt = stockledger::projection::rebuild::rebuild_many(
        store.pool(),
        stockledger::read_model::ALL,
        stockledger::limits::REBUILD_BATCH_EVENTS,
        &stockledger::audit::ArchiveReplayVerifier(&files),
        |_| {},
    )
    .await?;
    let rebuild = json!({
        "events_replayed": rebuilt.iter().map(|r| r.events).max(),
        "fill_seconds": rebuilt.iter().map(|r| r.fill.as_secs_f64()).fold(0.0, f64::max),
        "verify_seconds": rebuilt[0].verify.as_secs_f64(),
    });
    Ok(rebuild)
}

/// The tables of every read model in `schema`, with their indexes.
async fn read_model_bytes(client: &tokio_postgres::Client, schema: &str) -> anyhow::Result<i64> {
    let mut bytes = 0;
    for p in stockledger::read_model::ALL {
        for t in p.tables() {
            let name = format!("{schema}.{t}");
            let exists: bool = client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&name])
                .await?
                .get(0);
            if exists {
                bytes += table_bytes(client, &name).await?;
            }
        }
    }
    Ok(bytes)
}

/// Seals, projects, archives and detaches; returns the partitions taken out.
async fn archive_round(store: &Store, dir: &Path) -> anyhow::Result<usize> {
    stockledger::seal::sealer::catch_up(store.pool())
        .await?
        .ok_or_else(|| anyhow::anyhow!("another sealer runs on this database"))?;
    let current =
        stockledger::projection::worker::catch_up_fully(store.pool(), PROJECT_TIMEOUT).await?;
    anyhow::ensure!(current, "the read models did not catch up");
    archive::write::archive(store.pool(), dir, None).await?;
    let files = Archive::open(dir)?.whole()?;
    Ok(archive::detach::detach(
        store.pool(),
        &files,
        &stockledger::projection::snapshot::Snapshots,
    )
    .await?
    .detached
    .len())
}

/// Every position below this left the database.
async fn floor(store: &Store) -> anyhow::Result<i64> {
    let client = pool::get(store.pool()).await?;
    Ok(client
        .query_opt("SELECT floor FROM log_cut", &[])
        .await?
        .map_or(1, |r| r.get(0)))
}

async fn measure(
    store: &Store,
    dir: &Path,
    written: u64,
    detached: usize,
) -> anyhow::Result<Round> {
    let client = pool::get(store.pool()).await?;
    let mut tables = Vec::with_capacity(TABLES.len());
    for t in TABLES {
        tables.push(table_bytes(&client, t).await?);
    }
    let in_database: i64 = client
        .query_one("SELECT count(*) FROM events", &[])
        .await?
        .get(0);
    let mut file_bytes = 0;
    for entry in std::fs::read_dir(dir)? {
        file_bytes += entry?.metadata()?.len();
    }
    use stockledger::projection::{LIVE_SCHEMA, SNAPSHOT_SCHEMA};
    Ok(Round {
        written,
        in_database,
        tables,
        file_bytes,
        detached,
        read_models: read_model_bytes(&client, LIVE_SCHEMA).await?,
        snapshots: read_model_bytes(&client, SNAPSHOT_SCHEMA).await?,
        archive_seconds: 0.0,
    })
}

fn report(
    printer: &Printer,
    args: &GrowthArgs,
    rounds: &[Round],
    block: i64,
    rebuild: serde_json::Value,
) {
    let mib = |b: i64| format!("{:.1}", b as f64 / f64::from(1 << 20));
    let rows: Vec<Vec<String>> = rounds
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut row = vec![
                (i + 1).to_string(),
                r.written.to_string(),
                r.in_database.to_string(),
                r.detached.to_string(),
            ];
            row.extend(r.tables.iter().map(|b| mib(*b)));
            row.push(mib(r.tables.iter().sum()));
            row.push(mib(r.file_bytes as i64));
            row.push(mib(r.read_models));
            row.push(mib(r.snapshots));
            row.push(format!("{:.1}", r.archive_seconds));
            row
        })
        .collect();
    let mut header = vec!["round", "events written", "in the database", "detached"];
    header.extend(TABLES.iter().copied());
    header.extend([
        "database MiB",
        "files MiB",
        "read models MiB",
        "snapshots MiB",
        "archive s",
    ]);
    let kept = args
        .keep_rounds
        .map_or("every archived stream kept".to_owned(), |k| {
            format!("archived streams forgotten {k} rounds after they left")
        });
    let md = format!(
        "{} events a round, partitions of {} rows, {kept}; tables in MiB with their \
         indexes; the last digest (block {block}) verifies across the files and the \
         database, and the audit from the archive is clean. Every read model rebuilt from \
         its snapshot: {} events replayed, filled in {:.2} s, checked against the files in \
         {:.2} s.\n\n{}",
        args.events_per_round,
        args.rows_per_partition,
        rebuild["events_replayed"],
        rebuild["fill_seconds"].as_f64().unwrap_or_default(),
        rebuild["verify_seconds"].as_f64().unwrap_or_default(),
        markdown_table(&header, &rows)
    );
    let doc = json!({
        "rounds": rounds.iter().map(|r| json!({
            "written": r.written, "in_database": r.in_database, "detached": r.detached,
            "tables": TABLES.iter().zip(&r.tables).map(|(t, b)| (t.to_string(), json!(b)))
                .collect::<serde_json::Map<_, _>>(),
            "file_bytes": r.file_bytes, "read_model_bytes": r.read_models,
            "snapshot_bytes": r.snapshots, "archive_seconds": r.archive_seconds,
        })).collect::<Vec<_>>(),
        "digest_block": block,
        "rebuild": rebuild,
    });
    printer.result(&doc, &md);
}
