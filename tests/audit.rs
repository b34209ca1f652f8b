//! The audit finds what is wrong, names it with both values, and exits 0
//! only on a clean ledger.

mod common;

use std::process::Command;

use common::*;

async fn ledger() -> TestDb {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.receive("in-2", "pear", 4).await;
    db.run(reserve("r1", "o1", &[("apple", 3), ("pear", 1)], None))
        .await
        .unwrap();
    db.run(reserve("r2", "o2", &[("apple", 2)], None))
        .await
        .unwrap();
    db.run(confirm("r2")).await.unwrap();
    db.run(release("ghost")).await.unwrap();
    db.project_all().await;
    db
}

fn audit_cli(db: &TestDb) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .args(["audit", "--json"])
        .env("DATABASE_URL", db.url())
        .output()
        .expect("run stockledger audit");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_ledger_audits_clean_and_exits_0() {
    let db = ledger().await;
    let report = db.assert_audit_clean().await;
    assert_eq!(report.events, 6);
    assert_eq!(report.streams, 5);
    assert_eq!(report.orders, 2);
    let (code, doc) = tokio::task::spawn_blocking(move || {
        let r = audit_cli(&db);
        drop(db);
        r
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["difference_count"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_read_rows_and_balances_are_reported() {
    let db = ledger().await;
    let client = db.client().await;
    // Read models may be changed by anyone with access; the audit must notice.
    client
        .batch_execute("UPDATE stock_levels SET on_hand = on_hand + 7 WHERE sku = 'apple'")
        .await
        .unwrap();
    client
        .batch_execute("UPDATE order_view SET state = 'CONFIRMED' WHERE order_id = 'o1'")
        .await
        .unwrap();
    client
        .batch_execute("DELETE FROM reservation_expiry WHERE reservation_id = 'r1'")
        .await
        .unwrap();
    // Balances refuse changes without events; a test goes around the trigger
    // to play a corrupted row (never the log).
    client
        .batch_execute(
            "SET session_replication_role = replica;
             UPDATE item_balances SET reserved = reserved + 1 WHERE sku = 'pear';
             SET session_replication_role = DEFAULT;",
        )
        .await
        .unwrap();

    let report = stockledger::audit::audit(db.store.pool()).await.unwrap();
    let found: Vec<String> = report.differences.iter().map(|d| d.to_string()).collect();
    let want = [
        "stock_levels apple@default on_hand: expected 8, found 15",
        "order_view o1 state: expected RESERVED, found CONFIRMED",
        "reservation_expiry r1 row: expected present, found missing",
        "item_balances pear@default reserved: expected 1, found 2",
    ];
    for w in want {
        assert!(found.iter().any(|f| f == w), "missing {w:?} in {found:#?}");
    }
    assert_eq!(report.difference_count, 4, "{found:#?}");

    let (code, doc) = tokio::task::spawn_blocking(move || {
        let r = audit_cli(&db);
        drop(db);
        r
    })
    .await
    .unwrap();
    assert_eq!(code, 4, "{doc}");
    assert_eq!(doc["difference_count"], 4);
}
