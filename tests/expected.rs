//! Expected receipts and available to promise through the store, HTTP and
//! the CLI, against a real PostgreSQL: what can be promised at each step,
//! refusals that write nothing, retries answered as the first time, and
//! deliveries racing each other and a cancellation.

mod common;

use std::sync::Arc;
use stockledger::domain::event::{ExpectedReceiptCancelled, ExpectedReceiptDelivered};

use common::*;
use serde_json::json;
use stockledger::domain::{Event, ExpectedId, Item, Location, Outcome, RejectionCode, Sku};
use stockledger::store::Cursor;

fn jacket() -> Item {
    Item {
        sku: Sku::parse("sku", "jacket").unwrap(),
        location: Location::parse_or_default("location", None).unwrap(),
    }
}

/// (available now, [(date, available by then)]) once the read models caught up.
async fn promised(db: &TestDb) -> (i64, Vec<(String, i64)>) {
    db.project_all().await;
    let p = db.store.promise(&jacket()).await.unwrap().expect("known");
    let dates = p
        .promise
        .dates
        .iter()
        .map(|d| (d.date.to_string(), d.available))
        .collect();
    (p.promise.available_now, dates)
}

#[tokio::test]
async fn an_expected_receipt_from_record_to_cancellation() {
    let db = TestDb::new().await;
    db.receive("in-0", "jacket", 3).await;
    db.run(reserve("res-1", "o1", &[("jacket", 2)], None))
        .await
        .unwrap();
    assert_eq!(promised(&db).await, (1, vec![]));

    db.run(expect("po-1", "jacket", 10, "2027-01-10"))
        .await
        .unwrap();
    db.run(expect("po-2", "jacket", 5, "2027-01-03"))
        .await
        .unwrap();
    let d = |day: &str, n| (format!("2027-01-{day}"), n);
    assert_eq!(promised(&db).await, (1, vec![d("03", 6), d("10", 16)]));

    // A short delivery: the units are on hand, and no longer incoming.
    let got = db
        .run(receive_against("in-1", "jacket", 4, "po-1"))
        .await
        .unwrap();
    assert!(
        matches!(got, Outcome::Received { ref against, .. } if against.as_deref() == Some("po-1"))
    );
    assert_eq!(promised(&db).await, (5, vec![d("03", 10), d("10", 16)]));
    assert_eq!(db.count_stream("expected:po-1").await, 2);

    // Refusals write nothing.
    let events = db.count_events().await;
    let refusals = [
        (
            receive_against("in-2", "scarf", 1, "po-1"),
            RejectionCode::ExpectedItemMismatch,
        ),
        (
            receive_against("in-2", "jacket", 1, "po-9"),
            RejectionCode::NotFound,
        ),
        (
            expect("po-1", "jacket", 11, "2027-01-10"),
            RejectionCode::IdempotencyConflict,
        ),
        (
            change_expected("po-9", "c1", 3, "2027-01-10"),
            RejectionCode::NotFound,
        ),
    ];
    for (cmd, code) in refusals {
        assert_eq!(db.run(cmd).await.unwrap_err().code(), code);
    }
    assert_eq!(db.count_events().await, events);

    // A retry answers as the first time and appends nothing.
    let again = db
        .run(receive_against("in-1", "jacket", 4, "po-1"))
        .await
        .unwrap();
    assert!(again.replayed());
    assert_eq!(db.count_events().await, events);

    // A change moves the date and the total; what came counts towards it.
    db.run(change_expected("po-1", "c1", 8, "2027-01-12"))
        .await
        .unwrap();
    assert_eq!(promised(&db).await, (5, vec![d("03", 10), d("12", 14)]));

    // Cancelled: the rest is withdrawn, and a delivery is refused.
    db.run(cancel_expected("po-1")).await.unwrap();
    assert_eq!(promised(&db).await, (5, vec![d("03", 10)]));
    let late = db.run(receive_against("in-3", "jacket", 1, "po-1")).await;
    assert_eq!(
        late.unwrap_err().code(),
        RejectionCode::ExpectedReceiptCancelled
    );
    let (e, events) = db
        .store
        .expected_receipt(&ExpectedId::parse("id", "po-1").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((e.quantity, e.delivered, e.outstanding()), (8, 4, 0));
    assert!(matches!(
        events.last().unwrap().event,
        Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled { withdrawn: 4, .. })
    ));
    db.assert_audit_clean().await;
}

/// An item that is only expected is known: its row exists with nothing on
/// hand, and what can be promised is what is coming.
#[tokio::test]
async fn an_item_that_is_only_expected() {
    let db = TestDb::new().await;
    assert!(db.store.promise(&jacket()).await.unwrap().is_none());
    db.run(expect("po-1", "jacket", 7, "2027-03-01"))
        .await
        .unwrap();
    assert_eq!(db.figures("jacket").await, (0, 0, 0));
    assert_eq!(promised(&db).await, (0, vec![("2027-03-01".to_owned(), 7)]));
    db.assert_audit_clean().await;
}

/// Eight deliveries at once against one expected receipt: each takes the
/// next place of its stream, what is still expected goes down by each one
/// in stream order, and every unit is on hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_deliveries_go_one_after_another() {
    let db = Arc::new(TestDb::new().await);
    db.run(expect("po-1", "jacket", 25, "2027-01-10"))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            db.run(receive_against(&format!("in-{i}"), "jacket", 5, "po-1"))
                .await
                .unwrap()
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let page = db.store.events(Cursor::START, 100, None).await.unwrap();
    let outstanding: Vec<u32> = page
        .events
        .iter()
        .filter(|e| e.stream.to_string() == "expected:po-1")
        .filter_map(|e| match e.event {
            Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered { outstanding, .. }) => {
                Some((e.seq, outstanding))
            }
            _ => None,
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_values()
        .collect();
    assert_eq!(outstanding, vec![20, 15, 10, 5, 0, 0, 0, 0]);
    assert_eq!(db.figures("jacket").await.0, 40);
    db.assert_audit_clean().await;
}

/// A delivery racing a cancellation: whichever the stream holds first
/// decides. Delivered first, the cancellation withdraws exactly the rest;
/// cancelled first, the delivery is refused and brings nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delivery_racing_a_cancellation() {
    let db = Arc::new(TestDb::new().await);
    for round in 0..12 {
        let po = format!("po-{round}");
        db.run(expect(&po, "jacket", 10, "2027-01-10"))
            .await
            .unwrap();
        let (a, b) = (db.clone(), db.clone());
        let (p1, p2) = (po.clone(), po.clone());
        let receipt = format!("in-{round}");
        let deliver =
            tokio::spawn(async move { a.run(receive_against(&receipt, "jacket", 3, &p1)).await });
        let cancel = tokio::spawn(async move { b.run(cancel_expected(&p2)).await });
        let delivered = deliver.await.unwrap();
        cancel.await.unwrap().unwrap();
        let (e, _) = db
            .store
            .expected_receipt(&ExpectedId::parse("id", &po).unwrap())
            .await
            .unwrap()
            .unwrap();
        match delivered {
            Ok(_) => assert_eq!((e.delivered, e.withdrawn), (3, 7), "{po}"),
            Err(r) => {
                assert_eq!(r.code(), RejectionCode::ExpectedReceiptCancelled, "{po}");
                assert_eq!((e.delivered, e.withdrawn), (0, 10), "{po}");
            }
        }
    }
    db.assert_audit_clean().await;
}

#[tokio::test]
async fn expected_receipts_over_http_and_the_cli() {
    let mut server = common::server::TestServer::start(common::server::test_config()).await;
    let body = json!({"expected_id": "po-1", "sku": "jacket", "quantity": 10, "expected_on": "2027-01-10"});
    let (status, answer) = server.post("/v1/expected-receipts", body.clone()).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        answer,
        json!({"expected_id": "po-1", "sku": "jacket", "location": "default", "quantity": 10,
               "delivered": 0, "outstanding": 10, "expected_on": "2027-01-10", "state": "open",
               "replayed": false})
    );
    assert_eq!(server.post("/v1/expected-receipts", body).await.0, 200);
    for bad in ["2027-1-10", "+12345-01-01", "0000-01-01", "2027-02-30", ""] {
        let body =
            json!({"expected_id": "po-2", "sku": "jacket", "quantity": 1, "expected_on": bad});
        let (status, answer) = server.post("/v1/expected-receipts", body).await;
        assert_eq!(
            (status, answer["details"]["field"].clone()),
            (400, json!("expected_on")),
            "{bad}"
        );
    }
    let receipt = json!({"receipt_id": "in-1", "sku": "jacket", "quantity": 4, "against": "po-1"});
    let (status, answer) = server.post("/v1/stock/receipts", receipt).await;
    assert_eq!(
        (status, answer["against"].clone()),
        (201, json!("po-1")),
        "{answer}"
    );
    let change = json!({"change_id": "c1", "quantity": 12, "expected_on": "2027-01-11"});
    let (status, answer) = server
        .post("/v1/expected-receipts/po-1/changes", change)
        .await;
    assert_eq!(
        (status, answer["outstanding"].clone()),
        (201, json!(8)),
        "{answer}"
    );
    let (status, read) = server.get("/v1/expected-receipts/po-1", "reader").await;
    assert_eq!(status, 200);
    assert_eq!(read["delivered"], 4);
    assert!(read.get("replayed").is_none(), "{read}");
    let (code, doc) = cli_json(&server.db.url(), &["show-expected", "po-1"]);
    assert_eq!((code, &doc), (Some(0), &read));

    server.db.project_all().await;
    let (status, promise) = server.get("/v1/stock/jacket/promise", "reader").await;
    assert_eq!(status, 200, "{promise}");
    assert_eq!(
        (
            promise["available_now"].clone(),
            promise["incoming"].clone()
        ),
        (json!(4), json!(8))
    );
    assert_eq!(
        promise["dates"],
        json!([{"date": "2027-01-11", "arriving": 8, "available": 12}])
    );
    let (code, doc) = cli_json(&server.db.url(), &["promise", "jacket"]);
    assert_eq!((code, &doc), (Some(0), &promise));
    let (status, _) = server.get("/v1/stock/nothing/promise", "reader").await;
    assert_eq!(status, 404);

    let (status, answer) = server
        .post("/v1/expected-receipts/po-1/cancel", json!({}))
        .await;
    assert_eq!((status, answer["state"].clone()), (201, json!("cancelled")));
    let (status, answer) = server
        .post("/v1/expected-receipts/po-9/cancel", json!({}))
        .await;
    assert_eq!((status, answer["code"].clone()), (404, json!("NOT_FOUND")));
    let args = [
        "receive",
        "--receipt-id",
        "in-2",
        "--sku",
        "jacket",
        "--quantity",
        "1",
        "--against",
        "po-1",
    ];
    let (code, doc) = cli_json(&server.db.url(), &args);
    assert_eq!(
        (code, doc["code"].clone()),
        (Some(3), json!("EXPECTED_RECEIPT_CANCELLED"))
    );
    server.stop().await;
}

/// Deliveries written by hand: one naming a receipt the log does not hold,
/// one naming a receipt of other units, one written apart from its receipt.
/// The audit names each.
#[tokio::test]
async fn the_audit_names_a_delivery_without_its_receipt() {
    let db = TestDb::new().await;
    db.run(expect("po-1", "jacket", 10, "2027-01-10"))
        .await
        .unwrap();
    db.receive("in-1", "jacket", 2).await;
    db.receive("in-2", "jacket", 3).await;
    db.assert_audit_clean().await;
    let client = db.client().await;
    let meta = json!({"command_id": uuid::Uuid::new_v4(), "actor": "test"});
    let delivered = |receipt: &str, quantity, outstanding| {
        Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
            receipt_id: stockledger::domain::ReceiptId::parse("id", receipt).unwrap(),
            sku: Sku::parse("sku", "jacket").unwrap(),
            location: Location::parse("location", "default").unwrap(),
            quantity,
            expected_on: chrono::NaiveDate::from_ymd_opt(2027, 1, 10).unwrap(),
            outstanding,
        })
    };
    insert_event(&client, "expected:po-1", 2, &delivered("in-9", 3, 7), &meta).await;
    insert_event(&client, "expected:po-1", 3, &delivered("in-1", 3, 4), &meta).await;
    insert_event(&client, "expected:po-1", 4, &delivered("in-2", 3, 1), &meta).await;
    db.project_all().await;
    let report = stockledger::audit::audit(db.store.pool()).await.unwrap();
    let deliveries: Vec<String> = report
        .differences
        .iter()
        .filter(|d| d.field == "delivery")
        .map(|d| d.actual.clone())
        .collect();
    assert_eq!(
        deliveries,
        vec![
            "no such receipt",
            "receipt:in-1 of 2 × jacket@default",
            "in another one"
        ],
        "{:#?}",
        report.differences
    );
}

/// Several commands on one expected receipt in one store batch (as group
/// commit sends them): each is decided against the ones before it, and the
/// batch's events of one stream go in one INSERT in stream order.
#[tokio::test]
async fn commands_on_one_expected_receipt_in_one_batch() {
    let db = TestDb::new().await;
    let ctx = || stockledger::domain::CommandContext::new("test");
    let batch = vec![
        (expect("po-1", "jacket", 10, "2027-01-10"), ctx()),
        (receive_against("in-1", "jacket", 3, "po-1"), ctx()),
        (change_expected("po-1", "c1", 12, "2027-01-11"), ctx()),
        (receive_against("in-2", "jacket", 4, "po-1"), ctx()),
        (cancel_expected("po-1"), ctx()),
        (receive_against("in-3", "jacket", 1, "po-1"), ctx()),
    ];
    let answers = db.store.execute_batch(&batch).await.unwrap();
    let codes: Vec<String> = answers
        .iter()
        .map(|a| match a {
            Ok(_) => "ok".to_owned(),
            Err(r) => r.code().as_str().to_owned(),
        })
        .collect();
    assert_eq!(
        codes,
        ["ok", "ok", "ok", "ok", "ok", "EXPECTED_RECEIPT_CANCELLED"]
    );
    let (e, events) = db
        .store
        .expected_receipt(&ExpectedId::parse("id", "po-1").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(events.len(), 5);
    assert_eq!((e.delivered, e.withdrawn), (7, 5));
    assert_eq!(db.figures("jacket").await.0, 7);
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// A log whose expected receipt names a delivery by a receipt that is not
/// there (written by hand): a receipt under that id against it is refused as
/// a reused id, not written twice, and nothing else in its batch fails.
#[tokio::test]
async fn a_receipt_id_the_expected_receipt_names_already_is_refused() {
    let db = TestDb::new().await;
    db.run(expect("po-1", "jacket", 10, "2027-01-10"))
        .await
        .unwrap();
    let client = db.client().await;
    let meta = json!({"command_id": uuid::Uuid::new_v4(), "actor": "test"});
    let lost = Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
        receipt_id: stockledger::domain::ReceiptId::parse("id", "in-9").unwrap(),
        sku: Sku::parse("sku", "jacket").unwrap(),
        location: Location::parse("location", "default").unwrap(),
        quantity: 3,
        expected_on: chrono::NaiveDate::from_ymd_opt(2027, 1, 10).unwrap(),
        outstanding: 7,
    });
    insert_event(&client, "expected:po-1", 2, &lost, &meta).await;
    let ctx = || stockledger::domain::CommandContext::new("test");
    let batch = vec![
        (receive_against("in-9", "jacket", 3, "po-1"), ctx()),
        (receive("in-10", "jacket", 2), ctx()),
    ];
    let answers = db.store.execute_batch(&batch).await.unwrap();
    assert_eq!(
        answers[0].as_ref().unwrap_err().code(),
        RejectionCode::IdempotencyConflict
    );
    assert!(answers[1].is_ok(), "{:?}", answers[1]);
}
