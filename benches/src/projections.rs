//! `stockledger-bench projections`: fills a database with a realistic log
//! (or reuses the one there), then times a full rebuild of every projection
//! and a full audit.

use std::time::{Duration, Instant};

use clap::Args as ClapArgs;
use serde_json::{json, Value};
use stockledger::projection::{self, rebuild};
use stockledger::store::{pool, Store};
use stockledger_bench::fill::{fill, FillConfig, FillReport};

use crate::database::{bench_database, table_bytes};
use crate::output::{markdown_table, Printer};

/// Connections of the benchmark's pool (the rebuild takes one per projection).
const POOL_SIZE: usize = 8;
/// Seed of the generated log: the same on every run.
const FILL_SEED: u64 = 42;
/// How often the fill reports its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

#[derive(ClapArgs, Debug)]
pub struct ProjectionsArgs {
    /// Events to generate.
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    /// Distinct items.
    #[arg(long, default_value_t = 10_000)]
    items: u32,
    /// Commands per transaction while filling.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// The benchmark's own database on the server; it is dropped and
    /// recreated unless --reuse is given.
    #[arg(long, default_value = "stockledger_bench")]
    database: String,
    /// Keep the log already in the database instead of filling it again.
    #[arg(long)]
    reuse: bool,
}

/// One timed step of the table.
struct Step {
    name: String,
    /// Events the step went through; none for the swap.
    events: Option<i64>,
    seconds: f64,
    /// A headline figure, in bold.
    headline: bool,
}

pub async fn run(
    args: ProjectionsArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let config = bench_database(database_url, &args.database, !args.reuse).await?;
    let store = Store::new(pool::build(config, POOL_SIZE)?);
    store.migrate().await?;
    let filled = if count_events(&store).await? == 0 {
        Some(fill_log(&store, &args, printer).await?)
    } else {
        None
    };
    let (events, size) = (count_events(&store).await?, log_size(&store).await?);
    printer.note(
        "rebuilding every projection (copies filled side by side, verified in one replay)...",
    );
    let mut steps = rebuild_steps(&store, events).await?;
    printer.note("auditing...");
    steps.push(audit_step(&store).await?);
    let fill_text = filled.as_ref().map_or("reused".to_owned(), |r| {
        format!(
            "{} commands, {} events in {:.1} s ({:.0} commands/s through `execute_batch`, {} per transaction)",
            r.commands, r.events, r.seconds, r.commands as f64 / r.seconds, args.batch
        )
    });
    let markdown = format!(
        "log: {events} events ({size} with indexes); fill: {fill_text}\n\n{}",
        markdown_table(
            &["step", "events", "time", "events/s"],
            &steps.iter().map(Step::cells).collect::<Vec<_>>()
        )
    );
    printer.result(&result_json(events, &size, &filled, &steps), &markdown);
    Ok(())
}

/// Fills the empty log, with a progress line now and then.
async fn fill_log(
    store: &Store,
    args: &ProjectionsArgs,
    printer: &Printer,
) -> anyhow::Result<FillReport> {
    printer.note(&format!(
        "filling {} with {} events over {} items...",
        args.database, args.events, args.items
    ));
    let config = FillConfig {
        events: args.events,
        items: args.items,
        batch: args.batch,
        seed: FILL_SEED,
        prefix: "b".into(),
    };
    let mut last = Instant::now();
    let report = fill(store, &config, |events| {
        if last.elapsed() >= PROGRESS_EVERY {
            last = Instant::now();
            printer.progress(&format!("{events} events"));
        }
    })
    .await?;
    Ok(report)
}

/// The benchmark log this benchmark filled in `database`, for the benchmarks
/// that run on it (relay, seal): a migrated store of `pool_size`
/// connections, and its count of events (refused when there are none).
pub(crate) async fn benchmark_log(
    database_url: Option<&str>,
    database: &str,
    pool_size: usize,
) -> anyhow::Result<(Store, i64)> {
    let config = bench_database(database_url, database, false).await?;
    let store = Store::new(pool::build(config, pool_size)?);
    store.migrate().await?;
    let events = count_events(&store).await?;
    anyhow::ensure!(
        events > 0,
        "the database {database} has no log: run `projections` first"
    );
    Ok((store, events))
}

pub(crate) async fn count_events(store: &Store) -> anyhow::Result<i64> {
    let client = pool::get(store.pool()).await?;
    Ok(client
        .query_one("SELECT count(*) FROM events", &[])
        .await?
        .get(0))
}

/// The log's size on disk with its indexes, for people.
async fn log_size(store: &Store) -> anyhow::Result<String> {
    let client = pool::get(store.pool()).await?;
    let bytes = table_bytes(&client, "events").await?;
    Ok(client
        .query_one("SELECT pg_size_pretty($1::int8)", &[&bytes])
        .await?
        .get(0))
}

/// Rebuilds every projection at once and times its parts: each fill, the one
/// verifying replay, the swaps, and the whole.
async fn rebuild_steps(store: &Store, events: i64) -> anyhow::Result<Vec<Step>> {
    let started = Instant::now();
    let reports = rebuild::rebuild_many(
        store.pool(),
        projection::ALL,
        stockledger::limits::REBUILD_BATCH_EVENTS,
        &stockledger::audit::ReplayVerifier,
        |_| {},
    )
    .await?;
    let all = started.elapsed().as_secs_f64();
    let step = |name: String, events, seconds, headline| Step {
        name,
        events,
        seconds,
        headline,
    };
    let mut steps: Vec<Step> = reports
        .iter()
        .map(|r| {
            let name = format!("fill `{}` (concurrently with the others)", r.projection);
            step(name, Some(r.events), r.fill.as_secs_f64(), false)
        })
        .collect();
    let verify = reports.first().map_or(0.0, |r| r.verify.as_secs_f64());
    let copies = reports.len();
    let name = format!("verify all {copies} copies (one replay of the log)");
    steps.push(step(name, Some(events), verify, false));
    let swap = reports.iter().map(|r| r.swap.as_secs_f64()).sum();
    steps.push(step(format!("swap all {copies}"), None, swap, false));
    let name = "**rebuild `--all`**: fill + verify + swap, wall time".to_owned();
    steps.push(step(name, Some(events), all, true));
    Ok(steps)
}

/// Audits the whole ledger; differences are an error.
async fn audit_step(store: &Store) -> anyhow::Result<Step> {
    let audit = stockledger::audit::audit(store.pool()).await?;
    if !audit.clean() {
        anyhow::bail!(
            "the audit of the benchmark log found {} differences",
            audit.difference_count
        );
    }
    Ok(Step {
        name: format!(
            "**audit**: replay + compare balances and {} projections",
            audit.projections.len()
        ),
        events: Some(i64::try_from(audit.events)?),
        seconds: audit.seconds,
        headline: true,
    })
}

impl Step {
    fn per_second(&self) -> Option<f64> {
        self.events.map(|e| e as f64 / self.seconds)
    }

    fn cells(&self) -> Vec<String> {
        let (time, rate) = match self.per_second() {
            Some(rate) if self.headline => {
                (format!("{:.2} s", self.seconds), format!("**{rate:.0}**"))
            }
            Some(rate) => (format!("{:.2} s", self.seconds), format!("{rate:.0}")),
            None => (format!("{:.3} s", self.seconds), String::new()),
        };
        let events = self.events.map_or(String::new(), |e| e.to_string());
        vec![self.name.clone(), events, time, rate]
    }
}

fn result_json(events: i64, size: &str, filled: &Option<FillReport>, steps: &[Step]) -> Value {
    let fill = filled
        .as_ref()
        .map(|r| json!({"commands": r.commands, "events": r.events, "seconds": r.seconds}));
    let steps: Vec<Value> = steps
        .iter()
        .map(|s| {
            json!({"step": s.name.replace("**", ""), "events": s.events, "seconds": s.seconds,
                   "events_per_second": s.per_second()})
        })
        .collect();
    json!({"log": {"events": events, "size": size}, "fill": fill, "steps": steps})
}
