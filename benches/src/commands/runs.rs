//! One run of stockledger itself: a scenario through the library or HTTP at
//! one number of callers, then the oversell check.

use std::sync::Arc;
use std::time::Duration;

use stockledger::domain::{CommandContext, Outcome, Rejection};
use stockledger::store::{pool, StoreError};
use stockledger_bench::load::{closed_loop, RunStats, Sent};

use super::rig::Rig;
use super::workload::Workload;
use super::{CommandsArgs, Row, Scenario, Via};
use crate::output::Printer;

/// A flash sale runs until every buyer has tried, or this long.
const FLASH_TIME_LIMIT: Duration = Duration::from_secs(600);

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
    let server_cpu_before = match via {
        Via::Http => Some(rig.http.cpu_time()?),
        Via::Library => None,
    };
    let stats = match via {
        Via::Library => {
            let store = rig.store.clone();
            closed_loop(callers, run_for, max, move |c, n| {
                let (store, cmd) = (store.clone(), w.command(c, n));
                async move { judge(store.execute(cmd, CommandContext::new("bench")).await) }
            })
            .await
        }
        Via::Http => {
            let http = rig.http.sender();
            closed_loop(callers, run_for, max, move |c, n| {
                http.send(&w.command(c, n))
            })
            .await
        }
    };
    let server_cpu_us = match server_cpu_before {
        Some(before) => {
            let used = rig.http.cpu_time()?.saturating_sub(before);
            let commands = (stats.ok + stats.refused + stats.failed).max(1);
            Some(used.as_micros() as f64 / commands as f64)
        }
        None => None,
    };
    let check = oversell_check(rig, &workload, &stats, args.flash_buyers).await?;
    printer.progress(&format!(
        "{:<8} {:<8} {callers:>4} callers: {:>8.0} commands/s",
        scenario.name(),
        via.name(),
        stats.per_second()
    ));
    Ok(Row {
        scenario,
        design: format!("stockledger ({})", via.name()),
        callers,
        stats,
        server_cpu_us,
        check,
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
