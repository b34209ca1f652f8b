//! Transfers between locations through the store, the CLI and HTTP, and
//! under concurrency: stock moves at once, never below what the source has
//! available, and the audit stays clean.

mod common;

use common::*;
use serde_json::json;

#[tokio::test]
async fn a_transfer_moves_stock_between_locations_in_every_view() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.run(reserve("r1", "o1", &[("apple", 4)], None))
        .await
        .unwrap();
    let outcome = db
        .run(transfer("t1", "apple", "default", "north", 6))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(stockledger::api::answer(&outcome)).unwrap()["from_location"],
        "default"
    );
    assert_eq!(
        db.figures("apple").await,
        (4, 4, 0),
        "on_hand, reserved, confirmed at the source"
    );
    // All that was free has gone: one more unit is short, by the source's figures.
    let short = db
        .run(transfer("t2", "apple", "default", "south", 1))
        .await
        .unwrap_err();
    assert_eq!(short.details()["shortfalls"][0]["available"], 0);
    db.project_all().await;
    let north = stockledger::domain::Item {
        sku: stockledger::domain::Sku::parse("sku", "apple").unwrap(),
        location: stockledger::domain::Location::parse("location", "north").unwrap(),
    };
    let balance = db
        .store
        .balance(&north)
        .await
        .unwrap()
        .expect("the destination has a balance");
    assert_eq!((balance.on_hand, balance.reserved), (6, 0));
    // The destination's history shows the move; the audit agrees with it all.
    let history = db.store.item_history(&north).await.unwrap();
    assert!(
        history
            .iter()
            .any(|e| e.event.type_name() == "StockTransferred"),
        "{history:?}"
    );
    db.assert_audit_clean().await;
}

/// Two transfers draining the same source, and reservations of it, all at
/// once: together they never take more than it had.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transfers_racing_for_one_source_never_overdraw_it() {
    let db = std::sync::Arc::new(TestDb::new().await);
    db.receive("in-1", "apple", 20).await;
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..16 {
        let db = db.clone();
        tasks.spawn(async move {
            let cmd = if k % 4 == 0 {
                reserve(&format!("r{k}"), &format!("o{k}"), &[("apple", 2)], None)
            } else {
                transfer(
                    &format!("t{k}"),
                    "apple",
                    "default",
                    &format!("l{}", k % 2),
                    2,
                )
            };
            db.run(cmd).await.is_ok()
        });
    }
    let mut done = 0;
    while let Some(ok) = tasks.join_next().await {
        done += usize::from(ok.unwrap());
    }
    assert_eq!(done, 10, "20 units, 2 a command: ten get through");
    let (on_hand, reserved, _) = db.figures("apple").await;
    assert!(on_hand >= reserved && reserved >= 0, "{on_hand} {reserved}");
    db.project_all().await;
    db.assert_audit_clean().await;
}

#[tokio::test]
async fn a_transfer_over_http_and_the_cli() {
    let mut server = common::server::TestServer::start(common::server::test_config()).await;
    let receipt = json!({"receipt_id": "in-1", "sku": "apple", "quantity": 5});
    assert_eq!(server.post("/v1/stock/receipts", receipt).await.0, 201);
    let body = json!({"transfer_id": "t1", "sku": "apple", "from_location": "default",
                      "to_location": "north", "quantity": 2});
    let (status, answer) = server.post("/v1/stock/transfers", body.clone()).await;
    assert_eq!(
        (status, answer["replayed"].clone()),
        (201, json!(false)),
        "{answer}"
    );
    let (status, answer) = server.post("/v1/stock/transfers", body.clone()).await;
    assert_eq!((status, answer["replayed"].clone()), (200, json!(true)));
    let mut other = body.clone();
    other["quantity"] = json!(3);
    assert_eq!(
        server.post("/v1/stock/transfers", other).await.1["code"],
        "IDEMPOTENCY_CONFLICT"
    );
    let mut short = body.clone();
    short["transfer_id"] = json!("t2");
    short["quantity"] = json!(4);
    let (status, answer) = server.post("/v1/stock/transfers", short).await;
    assert_eq!(
        (status, answer["code"].clone()),
        (422, json!("INSUFFICIENT_STOCK"))
    );
    let mut same = body.clone();
    same["transfer_id"] = json!("t3");
    same["to_location"] = json!("default");
    let (status, answer) = server.post("/v1/stock/transfers", same).await;
    assert_eq!(
        (status, answer["details"]["field"].clone()),
        (400, json!("to_location"))
    );
    let (_, north) = server.get("/v1/stock/apple?location=north", "reader").await;
    assert_eq!(north["on_hand"], 2, "{north}");
    // The CLI sends the same command, and a replay exits 0.
    let args = [
        "transfer",
        "--transfer-id",
        "t1",
        "--sku",
        "apple",
        "--from",
        "default",
        "--to",
        "north",
        "--quantity",
        "2",
    ];
    let (code, doc) = cli_json(&server.db.url(), &args);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["replayed"], true);
    server.stop().await;
}
