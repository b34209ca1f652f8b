//! `stockledger bench commands`: the flash-sale benchmark. Scenarios × a
//! sweep of callers, through the library and through HTTP, with the usual
//! designs measured in the same run; Markdown tables on stdout and SVG charts.

use std::sync::Arc;
use std::time::Duration;

use clap::Args as ClapArgs;
use stockledger::bench::baselines::{self, RedisLua};
use stockledger::bench::load::{closed_loop, RunStats, Sent};
use stockledger::bench::rng::Rng;
use stockledger::bench::svg::{throughput_and_p99, Series};
use stockledger::domain::{
    command, Command, CommandContext, LineRequest, Outcome, ReceiveRequest, Rejection,
    ReserveRequest,
};
use stockledger::store::group::GroupConfig;
use stockledger::store::{pool, Store};

use super::output::Printer;
use super::Failure;

/// Items in the `uniform`, `zipf` and `mixed` scenarios.
const ITEMS: u64 = 10_000;
/// The flash sale: units on sale and buyers.
const FLASH_UNITS: i64 = 10_000;
const FLASH_BUYERS: u64 = 100_000;

#[derive(ClapArgs, Debug)]
pub struct CommandsArgs {
    /// Any of hot, flash, uniform, zipf, mixed.
    #[arg(
        long,
        default_value = "hot,flash,uniform,zipf,mixed",
        value_delimiter = ','
    )]
    scenarios: Vec<String>,
    /// Concurrent callers for each run.
    #[arg(long, default_value = "1,16,64,256,512", value_delimiter = ',')]
    callers: Vec<usize>,
    /// Seconds per run (flash runs until every buyer has tried).
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// library, http or both.
    #[arg(long, default_value = "library,http", value_delimiter = ',')]
    via: Vec<String>,
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
    /// Group commit: batches gathered and committed at once.
    #[arg(long, default_value_t = stockledger::limits::GROUP_COMMIT_PIPELINES)]
    group_pipelines: usize,
    /// Group commit: most commands per transaction.
    #[arg(long, default_value_t = stockledger::limits::GROUP_COMMIT_MAX_BATCH)]
    group_max_batch: usize,
    /// Buyers in the flash sale (each tries once); flash runs only with 16 or more callers.
    #[arg(long, default_value_t = FLASH_BUYERS)]
    flash_buyers: u64,
    /// Where the SVG charts go.
    #[arg(long, default_value = "docs/img")]
    svg_dir: String,
}

struct Row {
    scenario: String,
    design: String,
    callers: usize,
    stats: RunStats,
    check: String,
}

fn receive(id: String, sku: String, quantity: i64) -> Command {
    ReceiveRequest {
        receipt_id: id,
        sku,
        location: None,
        quantity,
    }
    .validate()
    .expect("valid")
}

fn reserve(id: &str, sku: &str) -> Command {
    ReserveRequest {
        reservation_id: id.to_owned(),
        order_id: format!("o-{id}"),
        lines: vec![LineRequest {
            sku: sku.to_owned(),
            location: None,
            quantity: 1,
        }],
        ttl_seconds: None,
    }
    .validate()
    .expect("valid")
}

fn judge(answer: Result<Result<Outcome, Rejection>, stockledger::store::StoreError>) -> Sent {
    match answer {
        Ok(Ok(_)) => Sent::Ok,
        Ok(Err(_)) => Sent::Refused,
        Err(_) => Sent::Failed,
    }
}

/// The item a scenario's command `n` of `caller` touches.
fn item_for(scenario: &str, prefix: &str, caller: usize, n: u64, zipf: &[f64]) -> String {
    let mut rng = Rng::new((caller as u64) << 32 ^ n ^ 0x9e37_79b9);
    let i = match scenario {
        "zipf" => {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            zipf.partition_point(|c| *c < u) as u64
        }
        _ => rng.below(ITEMS),
    };
    format!("{prefix}-{i}")
}

/// The cumulative distribution of a Zipf law (s = 1) over the items.
fn zipf_cdf() -> Vec<f64> {
    let weights: Vec<f64> = (1..=ITEMS).map(|k| 1.0 / k as f64).collect();
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    weights
        .iter()
        .map(|w| {
            acc += w / total;
            acc
        })
        .collect()
}

/// The mixed workload: a ten-step pattern per caller covering reserve,
/// confirm, release, a duplicate and a release that overtakes its reserve.
fn mixed(prefix: &str, caller: usize, n: u64) -> Command {
    let id = |k: u64| format!("{prefix}-{caller}-{k}");
    let item = |k: u64| {
        format!(
            "{prefix}-i-{}",
            Rng::new(k ^ (caller as u64) << 20).below(ITEMS)
        )
    };
    let base = n - n % 10;
    match n % 10 {
        0 | 2 | 4 | 8 => reserve(&id(n), &item(n)),
        1 | 9 => command::confirm(&id(n - 1)).expect("valid"),
        3 => command::release(&id(n - 1), None).expect("valid"),
        5 => reserve(&id(base + 4), &item(base + 4)),
        6 => command::release(&id(n), None).expect("valid"),
        _ => reserve(&id(base + 6), &item(base + 6)),
    }
}

fn http_body(cmd: &Command) -> (String, serde_json::Value) {
    use serde_json::json;
    match cmd {
        Command::Reserve(r) => (
            "/v1/reservations".into(),
            json!({"reservation_id": r.reservation_id, "order_id": r.order_id,
                   "lines": r.lines.iter().map(|l| json!({"sku": l.item.sku, "quantity": l.quantity})).collect::<Vec<_>>()}),
        ),
        Command::Confirm { reservation_id } => (
            format!("/v1/reservations/{reservation_id}/confirm"),
            json!({}),
        ),
        Command::Release { reservation_id, .. } => (
            format!("/v1/reservations/{reservation_id}/release"),
            json!({}),
        ),
        other => unreachable!("the benchmark sends no {}", other.kind()),
    }
}

async fn stock_units(store: &Store, prefix: &str, items: u64, units: i64) -> Result<(), Failure> {
    let cmds: Vec<_> = (0..items)
        .map(|i| {
            (
                receive(format!("{prefix}-in-{i}"), format!("{prefix}-{i}"), units),
                CommandContext::new("bench"),
            )
        })
        .collect();
    for r in store.execute_batch(&cmds).await? {
        r?;
    }
    Ok(())
}

pub async fn run(
    args: CommandsArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    let config = super::bench::bench_database(database_url, &args.database, true).await?;
    let plain = Store::new(pool::build(config.clone(), args.pool_size)?);
    plain.migrate().await?;
    let group = GroupConfig {
        window: Duration::from_micros(args.group_window_us),
        pipelines: args.group_pipelines,
        max_batch: args.group_max_batch,
        ..GroupConfig::default()
    };
    let store = Arc::new(plain.grouped(group));

    // The HTTP server, in this process, on its own pool of the same size.
    let http_store = Store::new(pool::build(config.clone(), args.pool_size)?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(anyhow::Error::from)?;
    let base = format!(
        "http://{}",
        listener.local_addr().map_err(anyhow::Error::from)?
    );
    let shutdown = tokio_util::sync::CancellationToken::new();
    let server_config = stockledger::server::ServerConfig {
        dev: true,
        run_projections: false,
        run_expiry: false,
        rate_limit_per_second: u32::MAX / 2,
        rate_limit_burst: u32::MAX / 2,
        ..Default::default()
    };
    let http_task = tokio::spawn(stockledger::server::serve(
        listener,
        http_store,
        config.clone(),
        server_config,
        shutdown.clone(),
    ));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .map_err(anyhow::Error::from)?;

    let zipf = Arc::new(zipf_cdf());
    let duration = Duration::from_secs(args.seconds);
    let mut rows: Vec<Row> = Vec::new();
    let baseline_pool = pool::build(config.clone(), args.pool_size)?;
    for scenario in &args.scenarios {
        let scenario = scenario.as_str();
        match scenario {
            "hot" => stock_units(&store, "hot", 1, 1_000_000).await?,
            "uniform" | "zipf" | "mixed" => {
                let prefix = if scenario == "mixed" {
                    "mixed-i"
                } else {
                    scenario
                };
                stock_units(&store, prefix, ITEMS, 1_000_000).await?;
            }
            "flash" => {}
            other => {
                return Err(stockledger::domain::Rejection::invalid(
                    "scenarios",
                    format!("unknown scenario {other}"),
                )
                .into())
            }
        }
        for &callers in &args.callers {
            // A flash sale with a handful of buyers at a time is not one.
            if scenario == "flash" && callers < 16 {
                continue;
            }
            for via in &args.via {
                let tag = format!("{scenario}-{via}-{callers}");
                if scenario == "hot" {
                    // More hot units, so that no run can exhaust them.
                    for k in 0..5 {
                        store
                            .execute(
                                receive(format!("hot-more-{tag}-{k}"), "hot-0".into(), 1_000_000),
                                CommandContext::new("bench"),
                            )
                            .await??;
                    }
                }
                let flash_item = format!("flash-{tag}");
                if scenario == "flash" {
                    store
                        .execute(
                            receive(format!("in-{flash_item}"), flash_item.clone(), FLASH_UNITS),
                            CommandContext::new("bench"),
                        )
                        .await??;
                }
                let max = (scenario == "flash").then_some(args.flash_buyers);
                let run_for = if scenario == "flash" {
                    Duration::from_secs(600)
                } else {
                    duration
                };
                let (s2, zipf2, tag2, flash2) =
                    (store.clone(), zipf.clone(), tag.clone(), flash_item.clone());
                let scen = scenario.to_owned();
                let command = move |caller: usize, n: u64| -> Command {
                    let id = format!("{tag2}-{caller}-{n}");
                    match scen.as_str() {
                        "hot" => reserve(&id, "hot-0"),
                        "flash" => reserve(&id, &flash2),
                        "mixed" => mixed(&tag2, caller, n),
                        s => reserve(&id, &item_for(s, s, caller, n, &zipf2)),
                    }
                };
                let stats = if via == "library" {
                    closed_loop(callers, run_for, max, move |c, n| {
                        let (s, cmd) = (s2.clone(), command(c, n));
                        async move { judge(s.execute(cmd, CommandContext::new("bench")).await) }
                    })
                    .await
                } else {
                    let (http, base) = (http.clone(), base.clone());
                    closed_loop(callers, run_for, max, move |c, n| {
                        let (path, body) = http_body(&command(c, n));
                        let req = http.post(format!("{base}{path}")).json(&body);
                        async move {
                            match req.send().await {
                                Ok(r) if r.status().is_success() => Sent::Ok,
                                Ok(r) if r.status().is_client_error() => Sent::Refused,
                                _ => Sent::Failed,
                            }
                        }
                    })
                    .await
                };
                // The oversell check: what was reserved never exceeds what was there,
                // and the flash sale sells exactly its units.
                let client = pool::get(store.pool()).await?;
                let bad: i64 = client
                    .query_one("SELECT count(*) FROM item_balances WHERE reserved > on_hand OR reserved < 0", &[])
                    .await
                    .map_err(anyhow::Error::from)?
                    .get(0);
                let mut check = if bad == 0 {
                    "no oversell".to_owned()
                } else {
                    format!("OVERSOLD on {bad} items")
                };
                if scenario == "flash" {
                    let row = client
                        .query_one(
                            "SELECT reserved FROM item_balances WHERE sku = $1",
                            &[&flash_item],
                        )
                        .await
                        .map_err(anyhow::Error::from)?;
                    let reserved: i64 = row.get(0);
                    check = format!(
                        "{check}; {} of {} buyers got one, {reserved} reserved",
                        stats.ok, args.flash_buyers
                    );
                }
                eprintln!(
                    "  {scenario:<8} {via:<8} {callers:>4} callers: {:>8.0} commands/s",
                    stats.per_second()
                );
                rows.push(Row {
                    scenario: scenario.into(),
                    design: format!("stockledger ({via})"),
                    callers,
                    stats,
                    check,
                });
            }
            if scenario == "hot" && args.baselines {
                baselines::setup_sql(&baseline_pool, &["hot".to_owned()], i64::MAX / 4).await?;
                for design in ["naive-sql", "naive-sql-event"] {
                    let p = baseline_pool.clone();
                    let event = design == "naive-sql-event";
                    let tag = format!("{design}-{callers}");
                    let stats = closed_loop(callers, duration, None, move |c, n| {
                        let (p, id) = (p.clone(), format!("{tag}-{c}-{n}"));
                        async move {
                            if event {
                                baselines::naive_sql_event(&p, "hot", &id).await
                            } else {
                                baselines::naive_sql(&p, "hot").await
                            }
                        }
                    })
                    .await;
                    eprintln!(
                        "  hot      {design:<16} {callers:>4} callers: {:>8.0} commands/s",
                        stats.per_second()
                    );
                    rows.push(Row {
                        scenario: "hot".into(),
                        design: design.into(),
                        callers,
                        stats,
                        check: String::new(),
                    });
                }
                match RedisLua::connect(&args.redis_url, &["hot".to_owned()], i64::MAX / 4).await {
                    Some(r) => {
                        let r = Arc::new(r);
                        let tag = format!("redis-{callers}");
                        let stats = closed_loop(callers, duration, None, move |c, n| {
                            let (r, id) = (r.clone(), format!("{tag}-{c}-{n}"));
                            async move { r.reserve("hot", &id).await }
                        })
                        .await;
                        eprintln!(
                            "  hot      redis-lua        {callers:>4} callers: {:>8.0} commands/s",
                            stats.per_second()
                        );
                        rows.push(Row {
                            scenario: "hot".into(),
                            design: "redis-lua".into(),
                            callers,
                            stats,
                            check: String::new(),
                        });
                    }
                    None => printer.note(&format!(
                        "redis-lua skipped: no Redis answers at {}",
                        args.redis_url
                    )),
                }
            }
        }
    }
    shutdown.cancel();
    let _ = http_task.await;

    printer.note("catching up the projections and auditing...");
    stockledger::projection::worker::catch_up_fully(store.pool(), Duration::from_secs(600)).await?;
    let audit = stockledger::audit::audit(store.pool()).await?;
    report(&mut rows, &args, &audit)?;
    Ok(())
}

fn report(
    rows: &mut [Row],
    args: &CommandsArgs,
    audit: &stockledger::audit::AuditReport,
) -> Result<(), Failure> {
    println!(
        "Audit after all runs: {} events, {}.\n",
        audit.events,
        if audit.clean() {
            "clean".to_owned()
        } else {
            format!("{} differences", audit.difference_count)
        }
    );
    for scenario in &args.scenarios {
        println!("### `{scenario}`\n");
        println!("| design | callers | commands/s | p50 ms | p99 ms | p99.9 ms | ok | refused | failed | vs naive-sql-event | vs redis-lua | check |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
        let reference = |design: &str, callers: usize, rows: &[Row]| {
            rows.iter()
                .find(|r| r.scenario == "hot" && r.design == design && r.callers == callers)
                .map(|r| r.stats.per_second())
        };
        let refs: Vec<(usize, Option<f64>, Option<f64>)> = args
            .callers
            .iter()
            .map(|c| {
                (
                    *c,
                    reference("naive-sql-event", *c, rows),
                    reference("redis-lua", *c, rows),
                )
            })
            .collect();
        for r in rows.iter_mut().filter(|r| &r.scenario == scenario) {
            let per_second = r.stats.per_second();
            let (_, naive, redis) = refs
                .iter()
                .find(|(c, _, _)| *c == r.callers)
                .copied()
                .unwrap_or((0, None, None));
            let ratio = |base: Option<f64>| {
                base.filter(|_| scenario == "hot")
                    .map_or("".to_owned(), |b| format!("{:.1}×", per_second / b))
            };
            println!(
                "| {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} |",
                r.design,
                r.callers,
                per_second,
                r.stats.percentile_ms(50.0),
                r.stats.percentile_ms(99.0),
                r.stats.percentile_ms(99.9),
                r.stats.ok,
                r.stats.refused,
                r.stats.failed,
                ratio(naive),
                ratio(redis),
                r.check
            );
        }
        println!();
        let designs: Vec<String> = {
            let mut d: Vec<String> = rows
                .iter()
                .filter(|r| &r.scenario == scenario)
                .map(|r| r.design.clone())
                .collect();
            d.dedup();
            d.sort();
            d.dedup();
            d
        };
        let mut throughput = Vec::new();
        let mut p99 = Vec::new();
        for d in designs {
            let mut t = Series {
                name: d.clone(),
                points: Vec::new(),
            };
            let mut l = Series {
                name: d.clone(),
                points: Vec::new(),
            };
            for r in rows
                .iter_mut()
                .filter(|r| &r.scenario == scenario && r.design == d)
            {
                t.points.push((r.callers as f64, r.stats.per_second()));
                l.points
                    .push((r.callers as f64, r.stats.percentile_ms(99.0)));
            }
            throughput.push(t);
            p99.push(l);
        }
        let path = format!("{}/bench-{scenario}.svg", args.svg_dir);
        std::fs::create_dir_all(&args.svg_dir).map_err(anyhow::Error::from)?;
        std::fs::write(&path, throughput_and_p99(scenario, &throughput, &p99))
            .map_err(anyhow::Error::from)?;
        println!("![{scenario}](img/bench-{scenario}.svg)\n");
    }
    Ok(())
}
