//! `stockledger project` runs the workers, keeps the read models current, and
//! stops cleanly (exit 0) on SIGTERM.

mod common;

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
