//! The usual designs on the `hot` scenario, at the same number of callers as
//! stockledger's runs: naive-sql, naive-sql-event and, when Redis answers,
//! redis-lua.

use std::sync::Arc;
use std::time::Duration;

use stockledger_bench::baselines::{self, RedisLua};
use stockledger_bench::load::closed_loop;

use super::rig::Rig;
use super::{CommandsArgs, Row, Scenario};
use crate::output::Printer;

/// The baselines' stock of the hot item: more than any run can take.
const BASELINE_STOCK: i64 = i64::MAX / 4;
/// The baselines' one item.
const HOT_SKU: &str = "hot";

/// Every baseline at `callers` callers, one row each.
pub async fn baseline_runs(
    rig: &Rig,
    args: &CommandsArgs,
    callers: usize,
    printer: &Printer,
) -> anyhow::Result<Vec<Row>> {
    let duration = Duration::from_secs(args.seconds);
    let skus = [HOT_SKU.to_owned()];
    baselines::setup_sql(&rig.baseline_pool, &skus, BASELINE_STOCK).await?;
    let mut rows = Vec::new();
    for design in ["naive-sql", "naive-sql-event"] {
        let pool = rig.baseline_pool.clone();
        let event = design == "naive-sql-event";
        let tag = format!("{design}-{callers}");
        let stats = closed_loop(callers, duration, None, move |c, n| {
            let (pool, id) = (pool.clone(), format!("{tag}-{c}-{n}"));
            async move {
                if event {
                    baselines::naive_sql_event(&pool, HOT_SKU, &id).await
                } else {
                    baselines::naive_sql(&pool, HOT_SKU).await
                }
            }
        })
        .await;
        rows.push(row(design, callers, stats, printer));
    }
    let Some(redis) = RedisLua::connect(&args.redis_url, &skus, BASELINE_STOCK).await else {
        printer.note(&format!(
            "redis-lua skipped: no Redis answers at {}",
            args.redis_url
        ));
        return Ok(rows);
    };
    let redis = Arc::new(redis);
    let tag = format!("redis-{callers}");
    let stats = closed_loop(callers, duration, None, move |c, n| {
        let (redis, id) = (redis.clone(), format!("{tag}-{c}-{n}"));
        async move { redis.reserve(HOT_SKU, &id).await }
    })
    .await;
    rows.push(row("redis-lua", callers, stats, printer));
    Ok(rows)
}

fn row(
    design: &str,
    callers: usize,
    stats: stockledger_bench::load::RunStats,
    printer: &Printer,
) -> Row {
    printer.progress(&format!(
        "hot      {design:<16} {callers:>4} callers: {:>8.0} commands/s",
        stats.per_second()
    ));
    Row {
        scenario: Scenario::Hot,
        design: design.into(),
        callers,
        stats,
        server_cpu_us: None,
        pg: None,
        caught_up_ms: None,
        check: String::new(),
    }
}
