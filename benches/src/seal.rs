//! `stockledger-bench seal`: tamper evidence on the benchmark log. The
//! chain is thrown away and the whole log sealed from scratch (the backlog
//! rate), then verified against its digest; then a flash sale runs in
//! rounds without and with the sealer beside it, in turn, for the cost per
//! write and the sealer's lag under that load.
//!
//! It needs the `projections` benchmark's log (`--database`, default
//! `stockledger_bench`) and connects as a superuser: throwing the chain
//! away means switching the append-only triggers off.

use std::time::{Duration, Instant};

use clap::Args as ClapArgs;
use serde_json::json;
use stockledger::seal;
use stockledger::store::{pool, Store};
use tokio_util::sync::CancellationToken;

use crate::flash::FlashSale;
use crate::output::{markdown_table, Printer};
use crate::projections::{benchmark_log, count_events};

/// How often the sealer's lag is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// Connections of the benchmark's pool: the writers and the sealer.
const POOL_SIZE: usize = 16;

#[derive(ClapArgs, Debug)]
pub struct SealArgs {
    /// The database holding the benchmark log (see `projections`).
    #[arg(long, default_value = "stockledger_bench")]
    database: String,
    /// Writers of the flash sale.
    #[arg(long, default_value_t = 64)]
    writers: usize,
    /// Seconds of each flash-sale run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Runs without and with the sealer, taken in turn.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// One flash-sale run.
struct Run {
    written: i64,
    seconds: f64,
    /// With the sealer: its lag in events, sampled; and how long it took to
    /// seal everything once the writers stopped.
    lags: Vec<i64>,
    catch_up_seconds: Option<f64>,
}

pub async fn run(
    args: SealArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> anyhow::Result<()> {
    let (store, events) = benchmark_log(database_url, &args.database, POOL_SIZE).await?;

    forget_chain(&store).await?;
    printer.note(&format!("sealing {events} events from scratch..."));
    let started = Instant::now();
    let sealed = seal::sealer::catch_up(store.pool())
        .await?
        .ok_or_else(|| anyhow::anyhow!("another sealer runs on this database"))?;
    let seal_seconds = started.elapsed().as_secs_f64();
    let digest = store.digest().await?.expect("a sealed log");

    printer.note("verifying against the digest...");
    let started = Instant::now();
    let report = seal::verify::verify(store.pool(), Some(&digest)).await?;
    let verify_seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        report.clean(),
        "verify found differences: {:?}",
        report.findings
    );

    let mut pairs = Vec::new();
    for round in 0..args.rounds {
        let without = flash(
            &store,
            &args,
            &format!("seal-bench-{}-{round}-off", std::process::id()),
            false,
        )
        .await?;
        let with = flash(
            &store,
            &args,
            &format!("seal-bench-{}-{round}-on", std::process::id()),
            true,
        )
        .await?;
        printer.progress(&format!(
            "round {round}: {:.0}/s without the sealer, {:.0}/s with it",
            without.written as f64 / without.seconds,
            with.written as f64 / with.seconds
        ));
        pairs.push((without, with));
    }
    report_all(
        printer,
        &args,
        (sealed, seal_seconds),
        (report.events, verify_seconds),
        &pairs,
    );
    Ok(())
}

/// Throws the chain and the seals away, as a superuser with the triggers off.
async fn forget_chain(store: &Store) -> anyhow::Result<()> {
    let client = pool::get(store.pool()).await?;
    client
        .batch_execute(
            "BEGIN; SET LOCAL session_replication_role = replica;
             TRUNCATE event_chain, seals; COMMIT",
        )
        .await?;
    Ok(())
}

async fn flash(store: &Store, args: &SealArgs, tag: &str, sealer: bool) -> anyhow::Result<Run> {
    let cancel = CancellationToken::new();
    let task = sealer.then(|| {
        tokio::spawn(seal::sealer::run(
            store.pool().clone(),
            seal::sealer::default_interval(),
            cancel.clone(),
        ))
    });
    let sale = FlashSale::start(store, tag, args.writers).await?;
    let started = Instant::now();
    let mut lags = Vec::new();
    while started.elapsed() < Duration::from_secs(args.seconds) {
        tokio::time::sleep(SAMPLE_EVERY).await;
        if sealer {
            lags.push(lag(store).await?);
        }
    }
    let written = sale.stop().await?;
    let seconds = started.elapsed().as_secs_f64();
    let mut catch_up_seconds = None;
    if let Some(task) = task {
        let stopped = Instant::now();
        let total = count_events(store).await?;
        while sealed_rows(store).await? < total {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        catch_up_seconds = Some(stopped.elapsed().as_secs_f64());
        cancel.cancel();
        task.await?;
    } else {
        // The next run with the sealer starts from a sealed log.
        seal::sealer::catch_up(store.pool()).await?;
    }
    lags.sort_unstable();
    Ok(Run {
        written,
        seconds,
        lags,
        catch_up_seconds,
    })
}

/// Events written but not sealed yet, roughly: positions past the last
/// sealed one (cheap: two index lookups, so sampling does not load the
/// database it measures).
async fn lag(store: &Store) -> anyhow::Result<i64> {
    let client = pool::get(store.pool()).await?;
    let row = client
        .query_one(
            "SELECT coalesce((SELECT max(position) FROM events), 0)
                  - coalesce((SELECT last_position FROM seals ORDER BY block DESC LIMIT 1), 0)",
            &[],
        )
        .await?;
    Ok(row.get::<_, i64>(0).max(0))
}

async fn sealed_rows(store: &Store) -> anyhow::Result<i64> {
    let client = pool::get(store.pool()).await?;
    let row = client
        .query_one("SELECT coalesce(max(last_seq), 0) FROM seals", &[])
        .await?;
    Ok(row.get(0))
}

fn report_all(
    printer: &Printer,
    args: &SealArgs,
    (sealed, seal_seconds): (u64, f64),
    (verified, verify_seconds): (u64, f64),
    pairs: &[(Run, Run)],
) {
    let rate = |n: f64, s: f64| n / s.max(1e-9);
    let mut md = markdown_table(
        &["step", "events", "seconds", "events/s"],
        &[
            vec![
                "seal the whole log".to_owned(),
                sealed.to_string(),
                format!("{seal_seconds:.2}"),
                format!("**{:.0}**", rate(sealed as f64, seal_seconds)),
            ],
            vec![
                "verify it against its digest".to_owned(),
                verified.to_string(),
                format!("{verify_seconds:.2}"),
                format!("**{:.0}**", rate(verified as f64, verify_seconds)),
            ],
        ],
    );
    md += &format!(
        "\nFlash sale, {} writers on one hot item through group commit, {} s a run, in turn:\n\n",
        args.writers, args.seconds
    );
    let rows: Vec<Vec<String>> = pairs
        .iter()
        .enumerate()
        .map(|(i, (a, b))| {
            let (ra, rb) = (
                rate(a.written as f64, a.seconds),
                rate(b.written as f64, b.seconds),
            );
            vec![
                i.to_string(),
                format!("{ra:.0}"),
                format!("{rb:.0}"),
                format!("{:.2}", rb / ra.max(1e-9)),
                b.lags
                    .get(b.lags.len() / 2)
                    .copied()
                    .unwrap_or(0)
                    .to_string(),
                b.lags.last().copied().unwrap_or(0).to_string(),
                format!("{:.2}", b.catch_up_seconds.unwrap_or(0.0)),
            ]
        })
        .collect();
    md += &markdown_table(
        &[
            "round",
            "without sealer (commands/s)",
            "with sealer (commands/s)",
            "ratio",
            "median lag (events)",
            "max lag (events)",
            "sealed all after the writers stopped (s)",
        ],
        &rows,
    );
    let doc = json!({
        "seal": {"events": sealed, "seconds": seal_seconds},
        "verify": {"events": verified, "seconds": verify_seconds},
        "rounds": pairs.iter().map(|(a, b)| json!({
            "without": {"written": a.written, "seconds": a.seconds},
            "with": {"written": b.written, "seconds": b.seconds, "lags": b.lags, "catch_up_seconds": b.catch_up_seconds},
        })).collect::<Vec<_>>(),
    });
    printer.result(&doc, &md);
}
