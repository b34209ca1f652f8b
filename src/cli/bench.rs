//! `stockledger bench ...`: benchmarks, run from one command, printing
//! Markdown tables that go into docs/benchmarks.md.

use std::time::Instant;

use clap::{Args as ClapArgs, Subcommand};
use stockledger::bench::fill::{fill, FillConfig};
use stockledger::db;
use stockledger::projection::{self, rebuild};
use stockledger::store::{pool, Store};

use super::output::Printer;
use super::Failure;

#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// Fill a database with a realistic log, then time a full rebuild of
    /// every projection and a full audit.
    Projections(ProjectionsArgs),
    /// The flash-sale benchmark: scenarios × callers, library and HTTP, against
    /// the usual designs, with an oversell check and an audit.
    Commands(super::bench_commands::CommandsArgs),
}

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

pub async fn run(
    cmd: BenchCmd,
    database_url: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    match cmd {
        BenchCmd::Projections(args) => projections(args, database_url, printer).await,
        BenchCmd::Commands(args) => super::bench_commands::run(args, database_url, printer).await,
    }
}

/// The benchmark's own database on the server: `name`, dropped and created
/// afresh when `recreate`, migrated by the caller. Returns its settings.
pub async fn bench_database(
    database_url: Option<&str>,
    name: &str,
    recreate: bool,
) -> Result<tokio_postgres::Config, Failure> {
    let server = db::server(database_url)
        .await
        .map_err(anyhow::Error::from)?;
    stockledger::domain::ids::check_id("database", name)?;
    if recreate {
        db::drop_database(&server.config, name).await?;
    }
    db::ensure_database(&server.config, name).await?;
    let mut config = server.config.clone();
    config.dbname(name);
    Ok(config)
}

async fn projections(
    args: ProjectionsArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    let config = bench_database(database_url, &args.database, !args.reuse).await?;
    let store = Store::new(pool::build(config, 8)?);
    store.migrate().await?;

    let client = store.pool().get().await.map_err(anyhow::Error::from)?;
    let existing: i64 = client
        .query_one("SELECT count(*) FROM events", &[])
        .await
        .map_err(anyhow::Error::from)?
        .get(0);
    let mut fill_line = String::from("reused");
    if existing == 0 {
        printer.note(&format!(
            "filling {} with {} events over {} items...",
            args.database, args.events, args.items
        ));
        let mut last = Instant::now();
        let report = fill(
            &store,
            &FillConfig {
                events: args.events,
                items: args.items,
                batch: args.batch,
                seed: 42,
                prefix: "b".into(),
            },
            |events| {
                if last.elapsed().as_secs() >= 5 {
                    last = Instant::now();
                    eprintln!("  {events} events");
                }
            },
        )
        .await?;
        fill_line = format!(
            "{} commands, {} events in {:.1} s ({:.0} commands/s through `execute_batch`, {} per transaction)",
            report.commands, report.events, report.seconds, report.commands as f64 / report.seconds, args.batch
        );
    }
    let events: i64 = client
        .query_one("SELECT count(*) FROM events", &[])
        .await
        .map_err(anyhow::Error::from)?
        .get(0);
    let size: String = client
        .query_one(
            "SELECT pg_size_pretty(pg_total_relation_size('events'))",
            &[],
        )
        .await
        .map_err(anyhow::Error::from)?
        .get(0);
    drop(client);

    let mut rows = Vec::new();
    printer.note(
        "rebuilding every projection (copies filled side by side, verified in one replay)...",
    );
    let all_started = Instant::now();
    let reports = rebuild::rebuild_many(
        store.pool(),
        projection::ALL,
        stockledger::limits::REBUILD_BATCH_EVENTS,
        |_| {},
    )
    .await
    .map_err(anyhow::Error::from)?;
    let all = all_started.elapsed().as_secs_f64();
    for r in &reports {
        rows.push(format!(
            "| fill `{}` (concurrently with the others) | {} | {:.2} s | {:.0} |",
            r.projection,
            r.events,
            r.fill.as_secs_f64(),
            r.events as f64 / r.fill.as_secs_f64()
        ));
    }
    let verify = reports[0].verify.as_secs_f64();
    let swap: f64 = reports.iter().map(|r| r.swap.as_secs_f64()).sum();
    rows.push(format!(
        "| verify all three copies (one replay of the log) | {events} | {verify:.2} s | {:.0} |",
        events as f64 / verify
    ));
    rows.push(format!("| swap all three | | {swap:.3} s | |"));
    rows.push(format!(
        "| **rebuild `--all`**: fill + verify + swap, wall time | {events} | {all:.2} s | **{:.0}** |",
        events as f64 / all
    ));
    printer.note("auditing...");
    let audit = stockledger::audit::audit(store.pool()).await?;
    rows.push(format!(
        "| **audit**: replay + compare balances and 3 projections | {} | {:.2} s | **{:.0}** |",
        audit.events, audit.seconds, audit.events_per_second
    ));
    if !audit.clean() {
        return Err(anyhow::anyhow!(
            "the audit of the benchmark log found {} differences",
            audit.difference_count
        )
        .into());
    }
    println!("log: {events} events ({size} with indexes); fill: {fill_line}\n");
    println!("| step | events | time | events/s |\n|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    Ok(())
}
