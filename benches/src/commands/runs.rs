//! One run of stockledger itself: a scenario through the library or HTTP at
//! one number of callers, then the oversell check.

use std::sync::Arc;
use std::time::Duration;

use stockledger::domain::{CommandContext, Outcome, Rejection};
use stockledger::store::{pool, StoreError};
use stockledger_bench::load::{closed_loop, RunStats, Sent};

use super::pg_time::{self, PgTime};
use super::rig::Rig;
use super::workload::Workload;
use super::{CommandsArgs, Row, Scenario, Via};
use crate::output::Printer;

/// A flash sale runs until every buyer has tried, or this long.
const FLASH_TIME_LIMIT: Duration = Duration::from_secs(600);

/// Statements listed (in the log, at info) after each HTTP run, by time.
const PROFILE_TOP_STATEMENTS: i64 = 12;

/// Runs `scenario` through `via` with `callers` callers.
pub async fn stockledger_run(
    rig: &Rig,
    args: &CommandsArgs,
    (scenario, via, callers): (Scenario, Via, usize),
    printer: &Printer,
) -> anyhow::Result<Row> {
    let workload = Arc::new(Workload::new(scenario, via, callers));
    rig.receive(workload.run_stock()).await?;
    let (run_for, max) = if scenario == Scenario::Flash {
        (FLASH_TIME_LIMIT, Some(args.flash_buyers))
    } else {
        (Duration::from_secs(args.seconds), None)
    };
    let w = workload.clone();
    let measured = match via {
        Via::Library => {
            let store = rig.store.clone();
            let stats = closed_loop(callers, run_for, max, move |c, n| {
                let (store, cmd) = (store.clone(), w.command(c, n));
                async move { judge(store.execute(cmd, CommandContext::new("bench")).await) }
            })
            .await;
            Measured {
                stats,
                server_cpu_us: None,
                pg: None,
                caught_up_ms: None,
            }
        }
        Via::Http | Via::HttpBare => {
            let spec = (callers, run_for, max);
            http_run(rig, &workload, spec, via == Via::Http, printer).await?
        }
    };
    let check = oversell_check(rig, &workload, &measured.stats, args.flash_buyers).await?;
    printer.progress(&format!(
        "{:<8} {:<9} {callers:>4} callers: {:>8.0} commands/s",
        scenario.name(),
        via.name(),
        measured.stats.per_second()
    ));
    Ok(Row {
        scenario,
        design: format!("stockledger ({})", via.name()),
        callers,
        stats: measured.stats,
        server_cpu_us: measured.server_cpu_us,
        pg: measured.pg,
        caught_up_ms: measured.caught_up_ms,
        check,
    })
}

/// What one run measured.
struct Measured {
    stats: RunStats,
    server_cpu_us: Option<f64>,
    pg: Option<PgTime>,
    caught_up_ms: Option<f64>,
}

/// One run over HTTP against a server started for it (with its workers or
/// without): the load, the server's CPU per command, PostgreSQL's time by
/// who spent it and, with workers, how long the read models took to catch
/// up once the load stopped.
async fn http_run(
    rig: &Rig,
    workload: &Arc<Workload>,
    (callers, run_for, max): (usize, Duration, Option<u64>),
    workers: bool,
    printer: &Printer,
) -> anyhow::Result<Measured> {
    let target = rig.start_http(workers).await?;
    let profiled = pg_time::reset(&rig.baseline_pool).await?;
    let cpu_before = target.cpu_time()?;
    let (http, w) = (target.sender(), workload.clone());
    let stats = closed_loop(callers, run_for, max, move |c, n| {
        http.send(&w.command(c, n))
    })
    .await;
    let used = target.cpu_time()?.saturating_sub(cpu_before);
    let commands = (stats.ok + stats.refused + stats.failed).max(1);
    // Read before the lag is watched: that watching is not the workers' work.
    let pg = if profiled {
        let top = pg_time::top(&rig.baseline_pool, PROFILE_TOP_STATEMENTS).await?;
        printer.note(&format!(
            "PostgreSQL's time by statement:\n{}",
            top.join("\n")
        ));
        Some(pg_time::read(&rig.baseline_pool).await?)
    } else {
        None
    };
    let caught_up_ms = if workers {
        rig.time_to_caught_up().await?
    } else {
        None
    };
    target.stop().await;
    Ok(Measured {
        stats,
        server_cpu_us: Some(used.as_micros() as f64 / commands as f64),
        pg,
        caught_up_ms,
    })
}

fn judge(answer: Result<Result<Outcome, Rejection>, StoreError>) -> Sent {
    match answer {
        Ok(Ok(_)) => Sent::Ok,
        Ok(Err(_)) => Sent::Refused,
        Err(_) => Sent::Failed,
    }
}

/// What was reserved never exceeds what was there, and the flash sale sells
/// exactly its units.
async fn oversell_check(
    rig: &Rig,
    workload: &Workload,
    stats: &RunStats,
    flash_buyers: u64,
) -> anyhow::Result<String> {
    let client = pool::get(rig.store.pool()).await?;
    let bad: i64 = client
        .query_one(
            "SELECT count(*) FROM item_balances WHERE reserved > on_hand OR reserved < 0",
            &[],
        )
        .await?
        .get(0);
    let check = if bad == 0 {
        "no oversell".to_owned()
    } else {
        format!("OVERSOLD on {bad} items")
    };
    if workload.scenario() != Scenario::Flash {
        return Ok(check);
    }
    let reserved: i64 = client
        .query_one(
            "SELECT reserved FROM item_balances WHERE sku = $1",
            &[&workload.flash_item()],
        )
        .await?
        .get(0);
    Ok(format!(
        "{check}; {} of {} buyers got one, {reserved} reserved",
        stats.ok, flash_buyers
    ))
}
