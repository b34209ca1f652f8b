//! `stockledger-bench archive`: archive files on the benchmark log. The log
//! is sealed (if it is not yet) and archived whole into a fresh directory;
//! then `verify` and the audit run from the database alone and across the
//! archive, in turn, for what reading the files costs beside reading the
//! database. The bytes per event of the files are set beside the database's.
//!
//! It needs the `projections` benchmark's log (`--database`, default
//! `stockledger_bench`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args as ClapArgs;
use serde_json::json;
use stockledger::seal::archive::{self, Archive};
use stockledger::store::{pool, Store};

use crate::database::table_bytes;
use crate::output::{markdown_table, Printer};
use crate::projections::benchmark_log;

/// Connections of the benchmark's pool: verify's and the audit's readers.
const POOL_SIZE: usize = 8;

#[derive(ClapArgs, Debug)]
pub struct ArchiveArgs {
    /// The database holding the benchmark log (see `projections`).
    #[arg(long, default_value = "stockledger_bench")]
    database: String,
    /// The archive directory; emptied first. A temporary one by default.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Runs of each reading, from the database and across the archive, in turn.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// Seconds of each reading, per round.
#[derive(Default)]
struct Readings {
    verify: Vec<f64>,
    verify_across: Vec<f64>,
    audit: Vec<f64>,
    audit_across: Vec<f64>,
}

pub async fn run(
    args: ArchiveArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let (store, events) = benchmark_log(database_url, &args.database, POOL_SIZE).await?;
    printer.note(&format!("sealing what is not sealed of {events} events..."));
    stockledger::seal::sealer::catch_up(store.pool())
        .await?
        .ok_or_else(|| anyhow::anyhow!("another sealer runs on this database"))?;
    let digest = store.digest().await?.expect("a sealed log");
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("stockledger-bench-archive"));
    let _ = std::fs::remove_dir_all(&dir);
    printer.note(&format!("archiving into {}...", dir.display()));
    let started = Instant::now();
    let written = archive::write::archive(store.pool(), &dir, None).await?;
    let archive_seconds = started.elapsed().as_secs_f64();
    let archived: u64 = written.iter().map(|m| m.events).sum();
    let file_bytes = dir_bytes(&dir)?;
    let db_bytes = database_bytes(&store).await?;
    let opened = Archive::open(&dir)?.whole()?;
    let mut r = Readings::default();
    for round in 0..args.rounds {
        let timed = Instant::now();
        let report = stockledger::seal::verify::verify(store.pool(), Some(&digest)).await?;
        anyhow::ensure!(report.clean(), "verify: {:?}", report.findings);
        r.verify.push(timed.elapsed().as_secs_f64());
        let timed = Instant::now();
        let report =
            stockledger::seal::verify::verify_across(store.pool(), Some(&digest), &opened).await?;
        anyhow::ensure!(report.clean(), "verify --archive: {:?}", report.findings);
        r.verify_across.push(timed.elapsed().as_secs_f64());
        let timed = Instant::now();
        anyhow::ensure!(stockledger::audit::audit(store.pool()).await?.clean());
        r.audit.push(timed.elapsed().as_secs_f64());
        let timed = Instant::now();
        let report = stockledger::audit::audit_from_archive(store.pool(), &opened).await?;
        anyhow::ensure!(
            report.clean(),
            "audit --from-archive: {:?}",
            report.differences
        );
        r.audit_across.push(timed.elapsed().as_secs_f64());
        printer.progress(&format!("round {round} done"));
    }
    report_all(
        printer,
        (archived, archive_seconds, written.len()),
        (file_bytes, db_bytes),
        &r,
    );
    Ok(())
}

/// Every file's bytes in `dir` (the rows files and the manifests).
fn dir_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        total += entry?.metadata()?.len();
    }
    Ok(total)
}

/// What the log, its chain and its seals take in the database, indexes
/// and TOAST included.
async fn database_bytes(store: &Store) -> anyhow::Result<i64> {
    let client = pool::get(store.pool()).await?;
    let mut bytes = 0;
    for table in ["events", "event_chain", "seals"] {
        bytes += table_bytes(&client, table).await?;
    }
    Ok(bytes)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn report_all(
    printer: &Printer,
    (events, seconds, segments): (u64, f64, usize),
    (file_bytes, db_bytes): (u64, i64),
    r: &Readings,
) {
    let per = |b: f64| b / (events.max(1) as f64);
    let mut md = markdown_table(
        &["", "events", "seconds", "events/s", "bytes per event"],
        &[
            vec![
                format!("archive the whole log ({segments} segments)"),
                events.to_string(),
                format!("{seconds:.2}"),
                format!("**{:.0}**", events as f64 / seconds.max(1e-9)),
                format!("{:.1} in the files", per(file_bytes as f64)),
            ],
            vec![
                "the same in the database (log, chain, seals, with indexes)".to_owned(),
                String::new(),
                String::new(),
                String::new(),
                format!("{:.1}", per(db_bytes as f64)),
            ],
        ],
    );
    let row = |name: &str, db: &[f64], across: &[f64]| {
        let (a, b) = (median(db), median(across));
        vec![
            name.to_owned(),
            format!("{a:.2}"),
            format!("{b:.2}"),
            format!("{:.2}", b / a.max(1e-9)),
        ]
    };
    md += &format!(
        "\nMedians of {} runs each, taken in turn:\n\n",
        r.verify.len()
    );
    md += &markdown_table(
        &["reading", "database (s)", "across the archive (s)", "ratio"],
        &[
            row("verify against the digest", &r.verify, &r.verify_across),
            row("audit", &r.audit, &r.audit_across),
        ],
    );
    let doc = json!({
        "archive": {"events": events, "seconds": seconds, "segments": segments,
                    "file_bytes": file_bytes, "database_bytes": db_bytes},
        "verify": r.verify, "verify_across": r.verify_across,
        "audit": r.audit, "audit_across": r.audit_across,
    });
    printer.result(&doc, &md);
}
