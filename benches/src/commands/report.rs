//! The flash-sale benchmark's report: the audit, a Markdown table per
//! scenario (on `hot`, each design's throughput against the baselines' at
//! the same callers) and an SVG chart per scenario; or the same as JSON.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use stockledger::audit::AuditReport;
use stockledger_bench::svg::{throughput_and_p99, Series};

use super::{CommandsArgs, Row, Scenario};
use crate::output::{markdown_table, Printer};

const HEADER: [&str; 15] = [
    "design",
    "callers",
    "commands/s",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "ok",
    "refused",
    "failed",
    "vs naive-sql-event",
    "vs redis-lua",
    "server CPU µs/cmd",
    "PG ms: commands / workers / control",
    "caught up ms",
    "check",
];

/// Writes the charts into `--svg-dir` and prints the report.
pub fn report(
    rows: &[Row],
    args: &CommandsArgs,
    audit: &AuditReport,
    printer: &Printer,
) -> anyhow::Result<()> {
    let audit_text = if audit.clean() {
        "clean".to_owned()
    } else {
        format!("{} differences", audit.difference_count)
    };
    let mut markdown = format!(
        "Audit after all runs: {} events, {audit_text}.\n\n",
        audit.events
    );
    for &scenario in &args.scenarios {
        let name = scenario.name();
        let table: Vec<Vec<String>> = rows
            .iter()
            .filter(|r| r.scenario == scenario)
            .map(|r| cells(r, rows))
            .collect();
        markdown.push_str(&format!("### `{name}`\n\n"));
        markdown.push_str(&markdown_table(&HEADER, &table));
        markdown.push_str(&format!("\n![{name}](img/bench-{name}.svg)\n\n"));
        write_chart(rows, scenario, &args.svg_dir)?;
    }
    let runs: Vec<Value> = rows.iter().map(|r| run_json(r, rows)).collect();
    let doc = json!({
        "audit": {"events": audit.events, "clean": audit.clean(),
                  "differences": audit.difference_count},
        "runs": runs,
    });
    printer.result(&doc, &markdown);
    Ok(())
}

/// `row`'s throughput over `design`'s on `hot` at the same callers; only
/// `hot` rows are compared.
fn ratio(row: &Row, rows: &[Row], design: &str) -> Option<f64> {
    if row.scenario != Scenario::Hot {
        return None;
    }
    rows.iter()
        .find(|r| r.scenario == Scenario::Hot && r.design == design && r.callers == row.callers)
        .map(|base| row.stats.per_second() / base.stats.per_second())
}

fn cells(r: &Row, rows: &[Row]) -> Vec<String> {
    let ratio = |design| ratio(r, rows, design).map_or(String::new(), |x| format!("{x:.1}×"));
    vec![
        r.design.clone(),
        r.callers.to_string(),
        format!("{:.0}", r.stats.per_second()),
        format!("{:.2}", r.stats.percentile_ms(50.0)),
        format!("{:.2}", r.stats.percentile_ms(99.0)),
        format!("{:.2}", r.stats.percentile_ms(99.9)),
        r.stats.ok.to_string(),
        r.stats.refused.to_string(),
        r.stats.failed.to_string(),
        ratio("naive-sql-event"),
        ratio("redis-lua"),
        r.server_cpu_us
            .map_or(String::new(), |us| format!("{us:.0}")),
        r.pg.map_or(String::new(), |pg| {
            format!(
                "{:.0} / {:.0} / {:.0} ({:.2}×)",
                pg.commands_ms,
                pg.workers_ms,
                pg.control_ms,
                pg.workers_share()
            )
        }),
        r.caught_up_ms
            .map_or(String::new(), |ms| format!("{ms:.0}")),
        r.check.clone(),
    ]
}

fn run_json(r: &Row, rows: &[Row]) -> Value {
    json!({
        "scenario": r.scenario.name(), "design": r.design, "callers": r.callers,
        "commands_per_second": r.stats.per_second(),
        "p50_ms": r.stats.percentile_ms(50.0), "p99_ms": r.stats.percentile_ms(99.0),
        "p99_9_ms": r.stats.percentile_ms(99.9),
        "ok": r.stats.ok, "refused": r.stats.refused, "failed": r.stats.failed,
        "vs_naive_sql_event": ratio(r, rows, "naive-sql-event"),
        "vs_redis_lua": ratio(r, rows, "redis-lua"),
        "server_cpu_us_per_command": r.server_cpu_us,
        "pg_ms": r.pg.map(|pg| json!({"commands": pg.commands_ms, "workers": pg.workers_ms,
                                      "control": pg.control_ms,
                                      "workers_share": pg.workers_share()})),
        "caught_up_ms": r.caught_up_ms,
        "check": r.check,
    })
}

/// `DIR/bench-SCENARIO.svg`: throughput and p99 against callers, a line per
/// design.
fn write_chart(rows: &[Row], scenario: Scenario, dir: &str) -> anyhow::Result<()> {
    let mine = || rows.iter().filter(|r| r.scenario == scenario);
    let designs: BTreeSet<&str> = mine().map(|r| r.design.as_str()).collect();
    let series = |value: &dyn Fn(&Row) -> f64| -> Vec<Series> {
        designs
            .iter()
            .map(|d| Series {
                name: (*d).to_owned(),
                points: mine()
                    .filter(|r| r.design == *d)
                    .map(|r| (r.callers as f64, value(r)))
                    .collect(),
            })
            .collect()
    };
    let throughput = series(&|r| r.stats.per_second());
    let p99 = series(&|r| r.stats.percentile_ms(99.0));
    std::fs::create_dir_all(dir)?;
    let path = format!("{dir}/bench-{}.svg", scenario.name());
    std::fs::write(
        &path,
        throughput_and_p99(scenario.name(), &throughput, &p99),
    )?;
    Ok(())
}
