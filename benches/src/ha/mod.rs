//! `stockledger-bench ha`: stockledger on a highly available PostgreSQL.
//!
//! Two clusters run side by side, both from `.ci/ha-cluster`: three nodes
//! under Patroni with strict synchronous replication, and one plain node
//! with the same settings. A server process of its own serves each, with
//! the request timeout an HA deployment uses. Then:
//!
//! - **throughput:** the mixed workload over HTTP, the two servers in turn
//!   (A B A B ...), so the ratio holds however the shared machine drifts;
//! - **failover:** reservations through the HA server while the leader's
//!   Patroni and postmaster are SIGKILLed; the time from the kill to the
//!   first write acknowledged on the new primary, the longest stretch with
//!   no write acknowledged, the answers of 503, and every acknowledged
//!   reservation looked up in the new primary's log (lost: goal 0). The
//!   killed node is revived and rejoins before the next failover.
//!
//! It ends with an audit of the HA database.

mod cluster;
mod failover;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args as ClapArgs;
use serde_json::json;
use stockledger::domain::CommandContext;
use stockledger::store::{pool, Store};
use stockledger_bench::load::{closed_loop, RunStats};

use crate::commands::http::HttpTarget;
use crate::commands::workload::{initial_stock, Workload};
use crate::commands::Scenario;
use crate::database::bench_database;
use crate::output::{markdown_table, Printer};
use cluster::ScriptCluster;
use failover::Failover;

/// The benchmark's database on each cluster.
const DATABASE: &str = "stockledger_bench_ha";
/// How long a fresh cluster's leader may take to accept its first migration,
/// and a revived node to rejoin.
const SETTLE_LIMIT: Duration = Duration::from_secs(120);
/// How long the projections may take to catch up before the audit.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(600);

#[derive(ClapArgs, Debug)]
pub struct HaArgs {
    /// The cluster script.
    #[arg(long, default_value = ".ci/ha-cluster")]
    script: PathBuf,
    /// Concurrent HTTP callers, in every run.
    #[arg(long, default_value_t = 64)]
    callers: usize,
    /// Seconds of each throughput run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Throughput runs of each cluster, taken in turn.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Leaders killed, one after another.
    #[arg(long, default_value_t = 3)]
    failovers: usize,
    /// Database connections of each server.
    #[arg(long, default_value_t = 64)]
    pool_size: usize,
    /// The servers' request timeout (30 s, as the README's HA section runs
    /// it: room for a failover in every request).
    #[arg(long, default_value_t = 30_000)]
    request_timeout_ms: u64,
}

/// One cluster and the server in front of it.
struct Side {
    name: &'static str,
    store: Store,
    http: HttpTarget,
}

impl Side {
    async fn start(
        name: &'static str,
        cluster: &ScriptCluster,
        args: &HaArgs,
        printer: &Printer,
    ) -> anyhow::Result<Side> {
        printer.note(&format!("{name}: {}", cluster.url));
        let config = bench_database(Some(&cluster.url), DATABASE, true).await?;
        let store = Store::new(pool::build(config, 4)?);
        let deadline = tokio::time::Instant::now() + SETTLE_LIMIT;
        // Patroni may call the cluster up a moment before its leader takes
        // writes.
        while let Err(e) = store.migrate().await {
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "{name}: migrate: {e}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let receipts: Vec<_> = initial_stock(Scenario::Mixed)
            .into_iter()
            .map(|c| (c, CommandContext::new("bench")))
            .collect();
        for result in store.execute_batch(&receipts).await? {
            result?;
        }
        let url = Some(cluster.url.as_str());
        let http =
            // Without workers, as the published HA figures were measured
            // (docs/benchmarks.md, "High availability").
            HttpTarget::start(url, DATABASE, args.pool_size, args.request_timeout_ms, false)
                .await?;
        Ok(Side { name, store, http })
    }

    /// One throughput run of the mixed workload, its ids tagged `tag`.
    async fn run(&self, tag: String, args: &HaArgs) -> RunStats {
        let workload = Arc::new(Workload::tagged(Scenario::Mixed, tag));
        let http = self.http.sender();
        let seconds = Duration::from_secs(args.seconds);
        closed_loop(args.callers, seconds, None, move |c, n| {
            http.send(&workload.command(c, n))
        })
        .await
    }
}

pub async fn run(args: HaArgs, printer: &Printer) -> anyhow::Result<()> {
    let base = std::env::temp_dir().join(format!("sl-bench-ha-{}", std::process::id()));
    std::fs::create_dir_all(&base)?;
    printer.note("starting the Patroni cluster and the single node...");
    let ha_cluster = ScriptCluster::start(&args.script, "start", base.join("ha"))?;
    let single_cluster = ScriptCluster::start(&args.script, "single", base.join("single"))?;
    let ha = Side::start("patroni-sync", &ha_cluster, &args, printer).await?;
    let single = Side::start("single", &single_cluster, &args, printer).await?;

    let mut throughput: Vec<(f64, f64)> = Vec::new();
    for round in 0..args.rounds {
        let a = ha.run(format!("ha-r{round}"), &args).await;
        let b = single.run(format!("single-r{round}"), &args).await;
        printer.progress(&format!(
            "round {round}: {} {:.0}/s ({} failed), {} {:.0}/s ({} failed)",
            ha.name,
            a.per_second(),
            a.failed,
            single.name,
            b.per_second(),
            b.failed
        ));
        anyhow::ensure!(
            a.failed + b.failed == 0,
            "commands failed in a throughput run"
        );
        throughput.push((a.per_second(), b.per_second()));
    }
    single.http.stop().await;

    let mut failovers = Vec::new();
    for f in 0..args.failovers {
        wait_until(SETTLE_LIMIT, "the cluster is whole", || ha_cluster.whole()).await?;
        let run = failover::run(&ha.http, &ha_cluster, &ha.store, &args, f).await?;
        printer.progress(&format!(
            "failover {f}: node {} killed, first write on the new primary after {:.2} s, {} acknowledged, {} lost",
            run.killed, run.to_first_write_s, run.acknowledged, run.lost
        ));
        ha_cluster.revive(run.killed)?;
        failovers.push(run);
    }
    ha.http.stop().await;
    printer.note("catching up the projections and auditing...");
    stockledger::projection::worker::catch_up_fully(ha.store.pool(), CATCH_UP_LIMIT).await?;
    let audit = stockledger::audit::audit(ha.store.pool()).await?;
    report(&args, &throughput, &failovers, audit.clean(), printer);
    anyhow::ensure!(
        audit.clean(),
        "the audit found differences: {:?}",
        audit.differences
    );
    anyhow::ensure!(
        failovers.iter().all(|f| f.lost == 0),
        "acknowledged writes were lost"
    );
    drop((ha_cluster, single_cluster));
    let _ = std::fs::remove_dir_all(&base);
    Ok(())
}

/// Polls `ready` every 200 ms until it holds, for at most `limit`.
async fn wait_until(limit: Duration, what: &str, ready: impl Fn() -> bool) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + limit;
    while !ready() {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

fn report(
    args: &HaArgs,
    throughput: &[(f64, f64)],
    failovers: &[Failover],
    audit_clean: bool,
    printer: &Printer,
) {
    let ratios: Vec<f64> = throughput.iter().map(|(a, b)| a / b.max(1e-9)).collect();
    let mut md = format!(
        "Throughput, mixed workload over HTTP, {} callers, {} s a run, in turn:\n\n",
        args.callers, args.seconds
    );
    let rows: Vec<Vec<String>> = throughput
        .iter()
        .zip(&ratios)
        .enumerate()
        .map(|(i, ((a, b), r))| {
            vec![
                i.to_string(),
                format!("{a:.0}"),
                format!("{b:.0}"),
                format!("{r:.2}"),
            ]
        })
        .collect();
    md += &markdown_table(
        &[
            "round",
            "patroni-sync commands/s",
            "single commands/s",
            "ratio",
        ],
        &rows,
    );
    md += &format!(
        "\nMedian ratio sync/single: {:.2}\n\n",
        median(ratios.clone())
    );
    md += &format!(
        "Failover: the leader's Patroni and postmaster SIGKILLed under {} callers reserving:\n\n",
        args.callers
    );
    let rows: Vec<Vec<String>> = failovers.iter().map(Failover::row).collect();
    md += &markdown_table(Failover::HEADER, &rows);
    md += &format!(
        "\nMedian kill → first write acknowledged on the new primary: {:.2} s; acknowledged lost in all: {}; audit clean: {audit_clean}\n",
        median(failovers.iter().map(|f| f.to_first_write_s).collect()),
        failovers.iter().map(|f| f.lost).sum::<usize>()
    );
    let doc = json!({
        "callers": args.callers,
        "throughput": throughput.iter().map(|(a, b)| json!({"patroni_sync": a, "single": b})).collect::<Vec<_>>(),
        "median_ratio": median(ratios),
        "failovers": failovers.iter().map(Failover::json).collect::<Vec<_>>(),
        "audit_clean": audit_clean,
    });
    printer.result(&doc, &md);
}
