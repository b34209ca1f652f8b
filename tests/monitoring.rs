//! The dashboard and the alert rules (docs/monitoring/) read what a real
//! server exposes: every metric they name is one a running server's
//! `/metrics` has, with the series the rules' tests assume, and `promtool`
//! checks the rules and runs their tests against recorded series.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use common::needs::{self, PROMTOOL};
use common::server::{test_config, TestServer};
use reqwest::Method;
use serde_json::json;

const MONITORING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/monitoring");

/// A server with its workers on, after a receipt, a reservation, a request
/// with a made-up key and a pause long enough for the sealer and the
/// projections to have run: its `/metrics` text.
async fn scrape() -> String {
    let mut s = TestServer::start(test_config()).await;
    // A relay that has started (its checkpoint), as `relay run` leaves it:
    // the relay's figures are read from the checkpoints.
    s.db.client()
        .await
        .execute(
            "INSERT INTO relay_checkpoints (stream_name, tx_id, position, last_msg_id, published)
             VALUES ('LEDGER', 0, 0, '', 0)",
            &[],
        )
        .await
        .unwrap();
    let (status, _) = s
        .post(
            "/v1/stock/receipts",
            json!({"receipt_id": "in-1", "sku": "apple", "quantity": 10}),
        )
        .await;
    assert_eq!(status, 201);
    let (status, _) = s
        .post(
            "/v1/reservations",
            json!({"reservation_id": "r-1", "order_id": "o-1",
                   "lines": [{"sku": "apple", "quantity": 2}]}),
        )
        .await;
    assert_eq!(status, 201);
    let made_up = s
        .http
        .get(format!("{}/v1/stock/apple", s.base))
        .bearer_auth("sk_made_up")
        .send()
        .await
        .unwrap();
    assert_eq!(made_up.status(), 401);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    // With a key: the business's figures (reservations by state) are shown
    // only to callers with one.
    let text = s
        .req(Method::GET, "/metrics", Some("reader"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    s.stop().await;
    text
}

/// The sample names a scrape can have: a counter's `_total`, a histogram's
/// `_bucket`, `_sum` and `_count`, a gauge's own name. Read from the `# TYPE`
/// lines, which name every registered metric even before it has a series.
fn sample_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let (name, kind) = rest.split_once(' ').unwrap();
        match kind {
            "counter" => {
                names.insert(format!("{name}_total"));
            }
            "histogram" => {
                for s in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{s}"));
                }
            }
            _ => {
                names.insert(name.to_owned());
            }
        }
    }
    names
}

/// Every `stockledger_…` name in `text`.
fn named_metrics(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("stockledger_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        found.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    found
}

fn read(file: &str) -> String {
    std::fs::read_to_string(Path::new(MONITORING).join(file)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_and_the_alerts_read_what_the_server_exposes() {
    let text = scrape().await;
    let exposed = sample_names(&text);
    assert!(exposed.contains("stockledger_seal_lag_seconds"), "{text}");

    // The series the rules' tests are written against are the server's.
    for series in [
        "stockledger_worker_up{worker=\"sealer\"} 1",
        "stockledger_worker_up{worker=\"projections\"} 1",
        "stockledger_key_lookups_total{outcome=\"unknown\"} 1",
        "stockledger_database_up 1",
        "stockledger_seal_lag_events{} 0",
        "stockledger_worker_restarts_total{worker=\"sealer\"} 0",
        "stockledger_key_lookups_total{outcome=\"refused\"} 0",
        "stockledger_relay_lag_events{stream=\"LEDGER\"} 2",
    ] {
        assert!(text.contains(series), "no {series} in\n{text}");
    }
    assert!(
        text.contains(
            "stockledger_http_requests_total{route=\"/v1/reservations\",status=\"201\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains("stockledger_projection_lag_seconds{projection=\"stock_levels\"}"),
        "{text}"
    );

    let alerts = read("alerts.yml");
    let rule_tests = read("alerts.test.yml");
    let dashboard = read("dashboard.json");
    for (file, body) in [
        ("alerts.yml", &alerts),
        ("alerts.test.yml", &rule_tests),
        ("dashboard.json", &dashboard),
    ] {
        let unknown: Vec<String> = named_metrics(body)
            .into_iter()
            .filter(|m| !exposed.contains(m))
            .collect();
        assert!(
            unknown.is_empty(),
            "{file} names metrics the server does not expose: {unknown:?}"
        );
    }

    // Every alert has a test that makes it fire.
    for line in alerts.lines() {
        if let Some(name) = line.trim().strip_prefix("- alert: ") {
            let fires = format!("alertname: {name}\n        exp_alerts:\n          - exp_labels");
            assert!(rule_tests.contains(&fires), "no test fires {name}");
        }
    }

    // The dashboard: valid JSON, unique panel ids, every query on the
    // dashboard's Prometheus variable.
    let d: serde_json::Value = serde_json::from_str(&dashboard).unwrap();
    let panels = d["panels"].as_array().unwrap();
    let ids: BTreeSet<i64> = panels.iter().map(|p| p["id"].as_i64().unwrap()).collect();
    assert_eq!(ids.len(), panels.len(), "panel ids repeat");
    let queries: Vec<&serde_json::Value> = panels
        .iter()
        .filter(|p| p["type"] != "row")
        .flat_map(|p| p["targets"].as_array().unwrap())
        .collect();
    assert!(queries.len() >= 15, "{}", queries.len());
    for q in queries {
        assert_eq!(q["datasource"]["uid"], "${datasource}", "{q}");
        assert!(q["expr"].as_str().unwrap().contains("stockledger_"), "{q}");
    }

    if !needs::programs(&[PROMTOOL]) {
        return;
    }
    promtool(&["check", "rules", "alerts.yml"]);
    promtool(&["test", "rules", "alerts.test.yml"]);
    // Not `promtool check metrics`: it reads Prometheus' own text format,
    // and the server serves OpenMetrics, whose counters' HELP lines name the
    // family without `_total` (it reports each as "no help text").
}

/// Runs `promtool` in docs/monitoring; asserts it succeeds.
fn promtool(args: &[&str]) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(MONITORING)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool {args:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
