//! `stockledger-bench relay`: the event relay's throughput on the benchmark
//! log (every event published to a fresh JetStream stream and acknowledged),
//! then its lag while writers load the ledger and after they stop.
//!
//! It needs the `projections` benchmark's log (`--database`, default
//! `stockledger_bench`; run `projections` first to fill it) and a NATS
//! server with JetStream (`--nats-url`). The stream it publishes to is its
//! own and is deleted at the end.

use std::time::{Duration, Instant};

use clap::Args as ClapArgs;
use serde_json::json;
use stockledger::relay::{self, RelayConfig};
use stockledger::store::Store;
use tokio_util::sync::CancellationToken;

use crate::flash::FlashSale;
use crate::output::{markdown_table, Printer};
use crate::projections::{benchmark_log, count_events};

/// How often the relay's standing is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// Connections of the benchmark's pool: the relay and the writers.
const POOL_SIZE: usize = 16;

#[derive(ClapArgs, Debug)]
pub struct RelayArgs {
    /// The database holding the benchmark log (see `projections`).
    #[arg(long, default_value = "stockledger_bench")]
    database: String,
    /// The NATS server (with JetStream).
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    nats_url: String,
    /// Writers during the load phase: a flash sale, each reserving one unit
    /// of the same hot item for one new order after another, through group
    /// commit.
    #[arg(long, default_value_t = 64)]
    writers: usize,
    /// Length of the load phase.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
}

pub async fn run(
    args: RelayArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let (store, events) = benchmark_log(database_url, &args.database, POOL_SIZE).await?;
    let name = format!("BENCH_RELAY_{}", std::process::id());
    let js = relay::context(relay::connect(&args.nats_url).await?);
    let cancel = CancellationToken::new();
    let relay_config = RelayConfig {
        stream: name.clone(),
        subject_prefix: format!("benchrelay{}", std::process::id()),
        ..RelayConfig::default()
    };
    let task = tokio::spawn(relay::run(
        store.clone(),
        js.clone(),
        relay_config,
        cancel.clone(),
    ));

    printer.note(&format!("publishing {events} events to {name}..."));
    let started = Instant::now();
    wait_published(&store, &name, events).await?;
    let backlog_seconds = started.elapsed().as_secs_f64();

    printer.note(&format!(
        "{} writers for {} s while the relay runs...",
        args.writers, args.seconds
    ));
    let load = load_phase(&store, &name, &args).await?;

    cancel.cancel();
    task.await??;
    js.delete_stream(&name).await?;
    relay::forget(&store, &name).await?;

    report(printer, &args, events, backlog_seconds, &load);
    Ok(())
}

fn report(printer: &Printer, args: &RelayArgs, events: i64, backlog_seconds: f64, load: &Load) {
    let rows = vec![
        vec![
            "backlog: the whole log".to_owned(),
            events.to_string(),
            format!("{backlog_seconds:.2}"),
            format!("**{:.0}**", events as f64 / backlog_seconds),
        ],
        vec![
            format!(
                "under a flash sale: {} writers on one hot item",
                args.writers
            ),
            load.written.to_string(),
            format!("{:.2}", load.seconds),
            format!("{:.0}", load.written as f64 / load.seconds),
        ],
    ];
    let table = markdown_table(
        &["phase", "events", "seconds", "events/s published and acked"],
        &rows,
    );
    let lag = format!(
        "lag under load, sampled every {} ms: median {} events, max {} events; caught up {:.2} s after the writers stopped",
        SAMPLE_EVERY.as_millis(),
        load.median_lag,
        load.max_lag,
        load.catch_up_seconds
    );
    printer.result(
        &json!({
            "backlog": {"events": events, "seconds": backlog_seconds, "events_per_second": events as f64 / backlog_seconds},
            "load": {"writers": args.writers, "events": load.written, "seconds": load.seconds,
                     "median_lag_events": load.median_lag, "max_lag_events": load.max_lag,
                     "catch_up_seconds": load.catch_up_seconds},
        }),
        &format!("{table}\n{lag}\n"),
    );
}

struct Load {
    written: i64,
    seconds: f64,
    median_lag: i64,
    max_lag: i64,
    catch_up_seconds: f64,
}

async fn load_phase(store: &Store, stream: &str, args: &RelayArgs) -> anyhow::Result<Load> {
    let tag = format!("relay-bench-{}", std::process::id());
    let sale = FlashSale::start(store, &tag, args.writers).await?;
    let started = Instant::now();
    let mut lags = Vec::new();
    while started.elapsed() < Duration::from_secs(args.seconds) {
        tokio::time::sleep(SAMPLE_EVERY).await;
        lags.push(lag(store, stream).await?);
    }
    let written = sale.stop().await?;
    let seconds = started.elapsed().as_secs_f64();
    let stopped = Instant::now();
    let total = count_events(store).await?;
    wait_published(store, stream, total).await?;
    lags.sort_unstable();
    Ok(Load {
        written,
        seconds,
        median_lag: lags.get(lags.len() / 2).copied().unwrap_or(0),
        max_lag: lags.last().copied().unwrap_or(0),
        catch_up_seconds: stopped.elapsed().as_secs_f64(),
    })
}

async fn lag(store: &Store, stream: &str) -> anyhow::Result<i64> {
    let all = relay::status(store).await?;
    Ok(all
        .iter()
        .find(|s| s.stream == stream)
        .map_or(0, |s| s.lag_events))
}

/// Waits until the checkpoint says `events` were published. It reads only
/// the checkpoint row: counting the lag each time would itself load the
/// database while it is measured.
async fn wait_published(store: &Store, stream: &str, events: i64) -> anyhow::Result<()> {
    while relay::published(store, stream).await? < events {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}
