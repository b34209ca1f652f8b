//! `stockledger project` runs the workers, keeps the read models current, and
//! stops cleanly (exit 0) on SIGTERM.

mod common;

use stockledger::domain::{page_limit, AsOf};

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_runs_until_sigterm_and_exits_0() {
    let db = TestDb::new().await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .arg("project")
        .env("DATABASE_URL", db.url())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start stockledger project");
    db.receive("in-1", "apple", 10).await;
    db.run(reserve("r1", "o1", &[("apple", 4)], None))
        .await
        .unwrap();
    db.wait_caught_up().await;
    let row = db
        .client()
        .await
        .query_one(
            "SELECT on_hand, reserved FROM stock_levels WHERE sku = 'apple'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (10, 4));

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || {
        for _ in 0..100 {
            if let Some(s) = child.try_wait().unwrap() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        None
    })
    .await
    .unwrap();
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "exits 0 after SIGTERM"
    );
}

/// An item never received is NOT_FOUND from the CLI, as from the API
/// (docs/domain.md); an item received a moment ago is answered at once, from
/// the write-side balance if the read model has not caught up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_of_an_item_never_received_is_not_found() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    let url = db.url();
    let stock = move |sku: &'static str| {
        let url = url.clone();
        move || {
            Command::new(env!("CARGO_BIN_EXE_stockledger"))
                .args(["stock", sku, "--json"])
                .env("DATABASE_URL", url)
                .output()
                .expect("run stockledger stock")
        }
    };
    let missing = tokio::task::spawn_blocking(stock("pear")).await.unwrap();
    assert_eq!(missing.status.code(), Some(3));
    let doc: serde_json::Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert_eq!(doc["code"], "NOT_FOUND", "{doc}");
    let found = tokio::task::spawn_blocking(stock("apple")).await.unwrap();
    assert_eq!(found.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(doc["on_hand"], 10, "{doc}");
}

/// The CLI refuses a read's bad moment and bad page size exactly as the API
/// does (one validation, `domain::read_query`): the same code, field and
/// message, and nothing else wins silently.
#[tokio::test]
async fn the_cli_refuses_bad_read_queries_as_the_api_does() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    let url = db.url();
    let run = move |args: Vec<&'static str>| {
        let url = url.clone();
        move || {
            Command::new(env!("CARGO_BIN_EXE_stockledger"))
                .args(args)
                .arg("--json")
                .env("DATABASE_URL", url)
                .output()
                .expect("run stockledger")
        }
    };
    let cases = [
        (
            vec![
                "stock",
                "apple",
                "--as-of",
                "2026-01-01T00:00:00Z",
                "--as-of-position",
                "1",
            ],
            AsOf::parse(Some("2026-01-01T00:00:00Z"), Some("1")).unwrap_err(),
        ),
        (
            vec!["stock", "apple", "--as-of-position", "-1"],
            AsOf::parse(None, Some("-1")).unwrap_err(),
        ),
        (
            vec!["events", "--limit", "0"],
            page_limit(Some("0")).unwrap_err(),
        ),
    ];
    for (args, expected) in cases {
        let out = tokio::task::spawn_blocking(run(args.clone()))
            .await
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{args:?}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(doc["code"], "INVALID_ARGUMENT", "{args:?}: {doc}");
        assert_eq!(doc["message"], expected.to_string(), "{args:?}: {doc}");
        assert_ne!(out.status.code(), Some(0), "{args:?}");
    }
}

/// Forty CLI processes reserve one item (15 units) at once while another
/// process holds the migration lock for longer than the lock timeout (as a
/// busy machine or a slow migration does): each waits its turn, and every one
/// ends with 0 (reserved) or 3 (insufficient stock), never with an internal
/// error; exactly 15 win.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contended_cli_commands_wait_their_turn() {
    let db = TestDb::new().await;
    db.receive("in-1", "hot", 15).await;
    let holder = db.client().await;
    holder
        .execute(
            "SELECT pg_advisory_lock($1)",
            &[&stockledger::store::migrate::MIGRATION_LOCK_KEY],
        )
        .await
        .unwrap();
    let mut runs = Vec::new();
    for i in 0..40 {
        let url = db.url();
        runs.push(tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_stockledger"))
                .args(["--json", "reserve", "--reservation-id"])
                .arg(format!("r{i}"))
                .arg("--order-id")
                .arg(format!("o{i}"))
                .args(["--line", "hot:1"])
                .env("DATABASE_URL", url)
                .output()
                .expect("run stockledger reserve")
        }));
    }
    // Longer than the lock timeout: before, every process waiting here got
    // a lock timeout, reported as INTERNAL.
    tokio::time::sleep(std::time::Duration::from_millis(
        stockledger::limits::LOCK_TIMEOUT_MS * 2,
    ))
    .await;
    holder
        .execute(
            "SELECT pg_advisory_unlock($1)",
            &[&stockledger::store::migrate::MIGRATION_LOCK_KEY],
        )
        .await
        .unwrap();
    let mut won = 0;
    for run in runs {
        let out = run.await.unwrap();
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(3)),
            "exit {code:?}: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        won += usize::from(code == Some(0));
    }
    assert_eq!(won, 15);
    assert_eq!(db.figures("hot").await, (15, 15, 0));
}

/// `stockledger chaos` (the binary's own run, `src/chaos_run.rs`) on a
/// scratch database of its own: load with injected faults, then a verdict
/// with nothing lost, doubled or oversold and a clean audit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chaos_command_runs_and_reports_a_clean_verdict() {
    let db = TestDb::new().await;
    let scratch = format!("{}_chaos", db.name);
    let url = db.admin_url();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_stockledger"))
            .args([
                "chaos",
                "--seconds",
                "2",
                "--writers",
                "8",
                "--json",
                "--database",
            ])
            .arg(&scratch)
            .env("DATABASE_URL", url)
            .output()
            .expect("run stockledger chaos")
    })
    .await
    .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert!(doc["acknowledged"].as_u64().unwrap() > 0, "{doc}");
    for zero in ["lost", "duplicated", "oversold", "failed"] {
        assert_eq!(doc[zero], 0, "{zero}: {doc}");
    }
    assert_eq!(doc["audit_clean"], true, "{doc}");
}
