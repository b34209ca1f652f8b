//! `stockledger-bench commands`: the flash-sale benchmark. Scenarios × a
//! sweep of callers, through the library and through HTTP, with the usual
//! designs measured in the same run; Markdown tables on stdout and SVG charts.

mod baseline_runs;
pub(crate) mod http;
mod pg_time;
mod report;
mod rig;
mod runs;
pub(crate) mod workload;

use clap::{Args as ClapArgs, ValueEnum};
use stockledger_bench::load::RunStats;

use crate::output::Printer;
use rig::Rig;
use workload::FLASH_BUYERS;

/// A flash sale with fewer callers at a time is not one: such runs are skipped.
const FLASH_MIN_CALLERS: usize = 16;

#[derive(ClapArgs, Debug)]
pub struct CommandsArgs {
    /// The scenarios to run.
    #[arg(
        long,
        value_enum,
        default_value = "hot,flash,uniform,zipf,mixed",
        value_delimiter = ','
    )]
    scenarios: Vec<Scenario>,
    /// Concurrent callers for each run.
    #[arg(long, default_value = "1,16,64,256,512", value_delimiter = ',')]
    callers: Vec<usize>,
    /// Seconds per run (flash runs until every buyer has tried).
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// The ways into stockledger to measure: `http` is the server as the
    /// README runs it (its workers on), `http-bare` the same without them,
    /// reported beside it.
    #[arg(
        long,
        value_enum,
        default_value = "library,http,http-bare",
        value_delimiter = ','
    )]
    via: Vec<Via>,
    /// Measure naive-sql, naive-sql-event and redis-lua on `hot` too.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    baselines: bool,
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// The benchmark's own database; dropped and recreated.
    #[arg(long, default_value = "stockledger_bench_commands")]
    database: String,
    /// Database connections of every design (the baselines get the same).
    #[arg(long, default_value_t = 64)]
    pool_size: usize,
    /// Group commit: microseconds a batch waits for more commands.
    #[arg(long, default_value_t = stockledger::limits::GROUP_COMMIT_WINDOW_MICROS)]
    group_window_us: u64,
    /// Group commit: how a batch gathers once the queue is empty (adaptive,
    /// the product's default; timer, waiting out `--group-window-us`; or yield).
    #[arg(long, default_value = "adaptive", value_parser = ["adaptive", "timer", "yield"])]
    group_gather: String,
    /// Put back the statement trigger schema 0011 dropped (`pg_notify` in
    /// every transaction that appends events), to measure what dropping it
    /// is worth.
    #[arg(long)]
    commit_notify: bool,
    /// Group commit: batches gathered and committed at once.
    #[arg(long, default_value_t = stockledger::limits::GROUP_COMMIT_PIPELINES)]
    group_pipelines: usize,
    /// Group commit: most commands per transaction.
    #[arg(long, default_value_t = stockledger::limits::GROUP_COMMIT_MAX_BATCH)]
    group_max_batch: usize,
    /// Buyers in the flash sale (each tries once); flash runs only with 16 or more callers.
    #[arg(long, default_value_t = FLASH_BUYERS)]
    flash_buyers: u64,
    /// Where the SVG charts go. Not docs/img by default: a partial run must
    /// not overwrite the published charts (pass `--svg-dir docs/img` to publish).
    #[arg(long, default_value = "target/bench-img")]
    svg_dir: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// Every caller reserves the same item.
    Hot,
    /// Buyers race for a few units of one item, each trying once.
    Flash,
    /// Reservations spread evenly over many items.
    Uniform,
    /// Reservations over many items, a few of them popular.
    Zipf,
    /// Reserve, confirm, release, duplicates and early releases over many items.
    Mixed,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Hot => "hot",
            Scenario::Flash => "flash",
            Scenario::Uniform => "uniform",
            Scenario::Zipf => "zipf",
            Scenario::Mixed => "mixed",
        }
    }
}

/// The way into stockledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// `Store::execute` in this process.
    Library,
    /// The HTTP API over loopback, the server in a process of its own with
    /// its projection runner, expiry worker and sealer, as deployed.
    Http,
    /// The same server without its workers.
    HttpBare,
}

impl Via {
    pub fn name(self) -> &'static str {
        match self {
            Via::Library => "library",
            Via::Http => "http",
            Via::HttpBare => "http-bare",
        }
    }
}

/// One measured run.
pub struct Row {
    scenario: Scenario,
    /// `stockledger (library)`, `naive-sql`...
    design: String,
    callers: usize,
    stats: RunStats,
    /// CPU time of the server process per command, over HTTP.
    server_cpu_us: Option<f64>,
    /// PostgreSQL's time during the run, by who spent it.
    pg: Option<pg_time::PgTime>,
    /// With workers: how long after the load the read models had caught up.
    caught_up_ms: Option<f64>,
    /// The oversell check's verdict; empty for the baselines.
    check: String,
}

pub async fn run(
    args: CommandsArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let rig = Rig::start(&args, database_url).await?;
    let mut rows = Vec::new();
    for &scenario in &args.scenarios {
        rig.receive(workload::initial_stock(scenario)).await?;
        for &callers in &args.callers {
            if scenario == Scenario::Flash && callers < FLASH_MIN_CALLERS {
                continue;
            }
            for &via in &args.via {
                let run = (scenario, via, callers);
                rows.push(runs::stockledger_run(&rig, &args, run, printer).await?);
            }
            if scenario == Scenario::Hot && args.baselines {
                rows.extend(baseline_runs::baseline_runs(&rig, &args, callers, printer).await?);
            }
        }
    }
    let audit = rig.finish(printer).await?;
    report::report(&rows, &args, &audit, printer)
}
