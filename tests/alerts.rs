//! Reorder points and low-stock alerts through the store, HTTP and the CLI:
//! each crossing of an item's reorder point is written into the log with
//! the command that made it, once, also when reserves, releases and point
//! changes race on one item; the log's alerts agree with the figures, and
//! the audit checks both.

mod common;

use std::sync::Arc;
use stockledger::domain::event::{ReorderPointSet, StockLow, StockRecovered};

use common::*;
use serde_json::json;
use stockledger::domain::{Event, EventType, Item};
use stockledger::store::Cursor;

fn point(id: &str, sku: &str, p: Option<i64>) -> stockledger::domain::Command {
    reorder_point(id, sku, p)
}

async fn log_types(db: &TestDb) -> Vec<EventType> {
    let page = db.store.events(Cursor::START, 1000, None).await.unwrap();
    page.events.iter().map(|e| e.event.event_type()).collect()
}

#[tokio::test]
async fn a_crossing_is_written_with_the_command_that_made_it() {
    use EventType::*;
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.run(point("p1", "apple", Some(5))).await.unwrap();
    db.run(reserve("r1", "o1", &[("apple", 6)], None))
        .await
        .unwrap();
    db.run(reserve("r2", "o2", &[("apple", 1)], None))
        .await
        .unwrap();
    db.run(release("r1")).await.unwrap();
    assert_eq!(
        log_types(&db).await,
        [
            StockReceived,
            ReorderPointSet,
            ReservationCreated,
            StockLow,
            ReservationCreated,
            ReservationReleased,
            StockRecovered
        ]
    );
    // The reservation's answer shows its own stream only.
    let shown = db
        .store
        .reservation(&stockledger::domain::ReservationId::parse("id", "r1").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(shown.events.len(), 2);
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// The audit holds the last alert of each item to its figures: an alert
/// removed from the log, or a point changed behind its back, is named.
#[tokio::test]
async fn the_audit_names_an_alert_the_figures_do_not_explain() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.run(point("p1", "apple", Some(20))).await.unwrap();
    db.project_all().await;
    db.assert_audit_clean().await;
    db.client()
        .await
        .batch_execute(
            "SET session_replication_role = replica;
             UPDATE item_balances SET reorder_point = 3 WHERE sku = 'apple';
             SET session_replication_role = DEFAULT;",
        )
        .await
        .unwrap();
    let report = stockledger::audit::audit(db.store.pool()).await.unwrap();
    let found: Vec<String> = report.differences.iter().map(|d| d.to_string()).collect();
    assert!(
        found.contains(&"item_balances apple@default reorder_point: expected 20, found 3".into()),
        "{found:#?}"
    );
    assert_eq!(report.difference_count, 1, "{found:#?}");
}

/// A crossing that was not written (here the row's flag is cleared behind
/// the ledger's back, as a writer of an older release would leave it) is
/// named by the audit, and written by the next command on the item, after
/// which the audit is clean again.
#[tokio::test]
async fn a_missing_alert_is_named_and_then_written_by_the_next_command() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.run(point("p1", "apple", Some(20))).await.unwrap();
    db.client()
        .await
        .batch_execute(
            "SET session_replication_role = replica;
             DELETE FROM events WHERE type = 'StockLow';
             UPDATE item_balances SET alerted_low = false WHERE sku = 'apple';
             SET session_replication_role = DEFAULT;",
        )
        .await
        .unwrap();
    let report = stockledger::audit::audit(db.store.pool()).await.unwrap();
    let found: Vec<String> = report.differences.iter().map(|d| d.to_string()).collect();
    assert!(
        found.iter().any(|f| f.contains("apple@default last alert")),
        "{found:#?}"
    );
    db.receive("in-2", "apple", 1).await;
    assert_eq!(log_types(&db).await.last(), Some(&EventType::StockLow));
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// Reserves, releases and point changes race on one item. Read in the
/// order of positions (the order the item's commands were decided in: each
/// holds the item's row while it appends), its alerts alternate (low,
/// recovered, low, ...), each follows the event that crossed the point in
/// force, and the last one says what the figures say at the end. (The
/// log's reading order, by transaction id, may put two of the item's
/// transactions the other way round: a transaction's id is drawn when it
/// first locks a row, before it waits for it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_commands_write_each_crossing_once() {
    let db = Arc::new(TestDb::new().await);
    db.receive("in-1", "apple", 40).await;
    db.run(point("p0", "apple", Some(20))).await.unwrap();
    // Twelve holds of 2 to release in the race: 16 available, low.
    for k in 0..12 {
        db.run(reserve(
            &format!("h{k}"),
            &format!("ho{k}"),
            &[("apple", 2)],
            None,
        ))
        .await
        .unwrap();
    }
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..48usize {
        let db = db.clone();
        tasks.spawn(async move {
            let n = k / 4;
            let cmd = match k % 4 {
                0 => release(&format!("h{n}")),
                1 => reserve(&format!("r{n}"), &format!("o{n}"), &[("apple", 2)], None),
                2 => point(&format!("p{n}"), "apple", Some([8, 18, 28][n % 3])),
                _ => receive(&format!("in-r{n}"), "apple", 1),
            };
            let _ = db.run(cmd).await;
        });
    }
    while tasks.join_next().await.is_some() {}
    let mut page = db.store.events(Cursor::START, 1000, None).await.unwrap();
    page.events.sort_by_key(|e| e.position);
    let apple: Item = Item {
        sku: stockledger::domain::Sku::parse("sku", "apple").unwrap(),
        location: stockledger::domain::Location::parse("location", "default").unwrap(),
    };
    let (mut on_hand, mut reserved, mut point_now, mut low) = (0i64, 0i64, None, false);
    let mut alerts = 0;
    for e in &page.events {
        match &e.event {
            Event::StockLow(StockLow { available, .. }) => {
                assert!(!low, "two StockLow in a row at {}", e.position);
                assert_eq!(*available, on_hand - reserved);
                low = true;
                alerts += 1;
                continue;
            }
            Event::StockRecovered(StockRecovered { available, .. }) => {
                assert!(low, "StockRecovered without StockLow at {}", e.position);
                assert_eq!(*available, on_hand - reserved);
                low = false;
                alerts += 1;
                continue;
            }
            Event::ReorderPointSet(ReorderPointSet { reorder_point, .. }) => {
                point_now = *reorder_point
            }
            _ => {}
        }
        for (item, d) in e.event.stock_effects() {
            if item == apple {
                on_hand += d.on_hand;
                reserved += d.reserved;
            }
        }
        // The alert, if any, follows at once: check the next event did so.
        let should_be_low = point_now.is_some_and(|p| on_hand - reserved < i64::from(p));
        let next = page.events.iter().find(|n| n.position > e.position);
        let alerted = next.is_some_and(|n| {
            matches!(
                n.event.event_type(),
                EventType::StockLow | EventType::StockRecovered
            )
        });
        assert_eq!(should_be_low != low, alerted, "after {}", e.position);
    }
    let (h, r, _) = db.figures("apple").await;
    assert_eq!((h, r), (on_hand, reserved));
    assert!(alerts >= 2, "the race crossed the point: {alerts} alerts");
    // The read model lists the item exactly when the last alert says low,
    // however its batches fell.
    db.project_all().await;
    let (listed, _) = db.store.low_stock().await.unwrap();
    assert_eq!(!listed.is_empty(), low);
    db.assert_audit_clean().await;
}

#[tokio::test]
async fn a_reorder_point_over_http_and_the_cli() {
    let mut server = common::server::TestServer::start(common::server::test_config()).await;
    let receipt = json!({"receipt_id": "in-1", "sku": "apple", "quantity": 5});
    assert_eq!(server.post("/v1/stock/receipts", receipt).await.0, 201);
    let body = json!({"reorder_point_id": "p1", "sku": "apple", "reorder_point": 6});
    let (status, answer) = server.post("/v1/stock/reorder-points", body.clone()).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        answer,
        json!({"reorder_point_id": "p1", "sku": "apple", "location": "default", "reorder_point": 6, "replayed": false})
    );
    assert_eq!(server.post("/v1/stock/reorder-points", body).await.0, 200);
    // The alert is in the log, for readers of /v1/events: once no older
    // transaction is open (a worker's, say), which the page waits for.
    let types = || async {
        let (status, page) = server.get("/v1/events?limit=10", "auditor").await;
        assert_eq!(status, 200);
        page["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect::<Vec<String>>()
    };
    eventually("the alert is read", || async { types().await.len() == 3 }).await;
    assert_eq!(
        types().await,
        ["StockReceived", "ReorderPointSet", "StockLow"]
    );
    let (status, answer) = server
        .post(
            "/v1/stock/reorder-points",
            json!({"reorder_point_id": "p2", "sku": "apple", "reorder_point": -1}),
        )
        .await;
    assert_eq!(
        (status, answer["details"]["field"].clone()),
        (400, json!("reorder_point"))
    );
    // The low_stock read model lists it, over HTTP and the CLI alike.
    server.db.project_all().await;
    let (status, low) = server.get("/v1/low-stock", "reader").await;
    assert_eq!(status, 200, "{low}");
    assert_eq!(low["items"][0]["sku"], "apple");
    assert_eq!(
        (
            low["items"][0]["available"].clone(),
            low["items"][0]["reorder_point"].clone()
        ),
        (json!(5), json!(6))
    );
    assert_eq!(low["truncated"], false);
    let (code, doc) = cli_json(&server.db.url(), &["low-stock"]);
    assert_eq!((code, &doc), (Some(0), &low));
    let args = [
        "reorder-point",
        "--reorder-point-id",
        "p3",
        "--sku",
        "apple",
        "--none",
    ];
    let (code, doc) = cli_json(&server.db.url(), &args);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["reorder_point"], json!(null));
    server.db.project_all().await;
    let (_, low) = server.get("/v1/low-stock", "reader").await;
    assert_eq!(low["items"], json!([]), "no point, not low");
    server.stop().await;
}
