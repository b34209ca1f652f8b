//! Backorders and pre-orders through the store, HTTP and the CLI, against a
//! real PostgreSQL: a pre-order from placing to shipping, waiting orders
//! filled first come, first served by deliveries racing each other and the
//! backorder worker, a delivery racing a cancellation, and a clean audit
//! after each.

mod common;

use std::sync::Arc;

use common::*;
use serde_json::json;
use stockledger::app::backorders::BACKORDER_ACTOR;
use stockledger::domain::command::LineRequest;
use stockledger::domain::{
    Command, Item, LineView, Location, OrderId, Outcome, RejectionCode, ReservationId,
    ReserveRequest, Sku,
};

fn item(sku: &str) -> Item {
    Item {
        sku: Sku::parse("sku", sku).unwrap(),
        location: Location::parse_or_default("location", None).unwrap(),
    }
}

/// A reservation of `quantity` of `sku` that may wait for expected stock.
fn backorder(id: &str, sku: &str, quantity: i64, latest_arrival: Option<&str>) -> Command {
    ReserveRequest {
        reservation_id: id.into(),
        order_id: format!("o-{id}"),
        lines: vec![LineRequest {
            sku: sku.into(),
            location: None,
            quantity,
        }],
        ttl_seconds: Some(7 * 24 * 3600),
        backorder: true,
        latest_arrival: latest_arrival.map(str::to_owned),
    }
    .validate()
    .unwrap()
}

/// The one line of a reservation's answer.
fn only_line(outcome: &Outcome) -> LineView {
    match outcome {
        Outcome::Reservation { view, .. } => {
            assert_eq!(view.lines.len(), 1, "{view:?}");
            view.lines[0].clone()
        }
        other => panic!("not a reservation: {other:?}"),
    }
}

/// (held, waiting) of reservation `id`'s one line, as its stream says.
async fn held_and_waiting(db: &TestDb, id: &str) -> (u32, u32) {
    let id = ReservationId::parse("id", id).unwrap();
    let details = db.store.reservation(&id).await.unwrap().expect("exists");
    let line = &details.view.lines[0];
    (line.open, line.waiting)
}

/// Runs the backorder worker's pass until it has nothing left to write.
async fn fill_all(db: &TestDb) {
    for _ in 0..20 {
        if db.store.fill_due(BACKORDER_ACTOR).await.unwrap() == 0 {
            return;
        }
    }
    panic!("the backorder worker kept finding work");
}

#[tokio::test]
async fn a_pre_order_from_placing_to_shipping() {
    let db = TestDb::new().await;
    db.run(expect("po-1", "lamp", 10, "2027-01-10"))
        .await
        .unwrap();
    // Nothing on hand: all of it waits.
    let got = db.run(backorder("r1", "lamp", 4, Some("2027-01-10"))).await;
    let line = only_line(&got.unwrap());
    assert_eq!((line.quantity, line.open, line.waiting), (4, 0, 4));
    assert_eq!(db.figures("lamp").await, (0, 0, 0));
    // What is promised counts what waits: 4 less now and by the date.
    db.project_all().await;
    let p = db.store.promise(&item("lamp")).await.unwrap().unwrap();
    assert_eq!(p.promise.available_now, -4);
    assert_eq!(p.promise.dates[0].available, 6);
    // The same reserve again is a replay; more than is left is refused.
    let again = db.run(backorder("r1", "lamp", 4, Some("2027-01-10"))).await;
    assert!(again.unwrap().replayed());
    let too_many = db.run(backorder("r2", "lamp", 7, None)).await.unwrap_err();
    assert_eq!(too_many.code(), RejectionCode::InsufficientStock);
    assert_eq!(too_many.details()["shortfalls"][0]["available"], 6);
    // Confirming before the stock is there is refused, and writes nothing.
    let events = db.count_events().await;
    let early = db.run(confirm("r1")).await.unwrap_err();
    assert_eq!(early.code(), RejectionCode::BackorderWaiting);
    assert_eq!(db.count_events().await, events);
    // Nothing to fill yet.
    assert_eq!(db.store.fill_due(BACKORDER_ACTOR).await.unwrap(), 0);

    db.run(receive_against("in-1", "lamp", 10, "po-1"))
        .await
        .unwrap();
    fill_all(&db).await;
    assert_eq!(held_and_waiting(&db, "r1").await, (4, 0));
    db.project_all().await;
    let view = db
        .store
        .order_view(&OrderId::parse("order_id", "o-r1").unwrap())
        .await
        .unwrap()
        .expect("a row");
    let line = &view.lines[0];
    assert_eq!(
        (line.open, line.waiting, line.quantity),
        (4, 0, 4),
        "{view:?}"
    );
    let types: Vec<&str> = view.history.iter().map(|h| h.1.as_str()).collect();
    assert_eq!(
        types,
        ["ReservationCreated", "BackorderPlaced", "BackorderFilled"]
    );
    db.run(confirm("r1")).await.unwrap();
    db.project_all().await;
    let p = db.store.promise(&item("lamp")).await.unwrap().unwrap();
    assert_eq!((p.promise.available_now, p.promise.incoming), (6, 0));
    db.assert_audit_clean().await;
}

/// Eight orders wait for 5 units each; eight deliveries of 3 race each
/// other and four backorder workers. However they interleave, the 24 units
/// go to the orders in the order they were placed: 5, 5, 5, 5, 4, 0, 0, 0.
#[tokio::test]
async fn waiting_orders_are_filled_in_placing_order_by_concurrent_deliveries() {
    let db = Arc::new(TestDb::new().await);
    db.run(expect("po-1", "lamp", 40, "2027-01-10"))
        .await
        .unwrap();
    for i in 0..8 {
        db.run(backorder(&format!("r{i}"), "lamp", 5, None))
            .await
            .unwrap();
    }
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let db = db.clone();
        tasks.spawn(async move {
            db.run(receive_against(&format!("in-{i}"), "lamp", 3, "po-1"))
                .await
                .unwrap();
        });
    }
    for _ in 0..4 {
        let db = db.clone();
        tasks.spawn(async move {
            for _ in 0..10 {
                db.store.fill_due(BACKORDER_ACTOR).await.unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    fill_all(&db).await;
    let mut held = Vec::new();
    for i in 0..8 {
        held.push(held_and_waiting(&db, &format!("r{i}")).await.0);
    }
    assert_eq!(held, vec![5, 5, 5, 5, 4, 0, 0, 0]);
    let (on_hand, reserved, _) = db.figures("lamp").await;
    assert_eq!((on_hand, reserved), (24, 24));
    db.assert_audit_clean().await;
}

/// A delivery races the cancellation of what it delivers, with two orders
/// waiting for it: either the delivery wins and both are filled, or the
/// cancellation wins, the delivery is refused, and both are dropped as
/// unfillable, by name. Never anything in between.
#[tokio::test]
async fn a_delivery_racing_a_cancellation_with_orders_waiting() {
    let db = Arc::new(TestDb::new().await);
    for round in 0..8 {
        let sku = format!("lamp-{round}");
        let po = format!("po-{round}");
        db.run(expect(&po, &sku, 10, "2027-01-10")).await.unwrap();
        let (a, b) = (format!("a{round}"), format!("b{round}"));
        db.run(backorder(&a, &sku, 6, None)).await.unwrap();
        db.run(backorder(&b, &sku, 4, None)).await.unwrap();
        let deliver = {
            let (db, sku, po) = (db.clone(), sku.clone(), po.clone());
            tokio::spawn(async move {
                db.run(receive_against(&format!("in-{round}"), &sku, 10, &po))
                    .await
            })
        };
        let cancel = {
            let (db, po) = (db.clone(), po.clone());
            tokio::spawn(async move { db.run(cancel_expected(&po)).await })
        };
        let delivered = deliver.await.unwrap();
        cancel.await.unwrap().unwrap();
        fill_all(&db).await;
        let (ha, hb) = (
            held_and_waiting(&db, &a).await,
            held_and_waiting(&db, &b).await,
        );
        match delivered {
            Ok(_) => assert_eq!((ha, hb), ((6, 0), (4, 0)), "round {round}"),
            Err(r) => {
                assert_eq!(r.code(), RejectionCode::ExpectedReceiptCancelled);
                assert_eq!((ha, hb), ((0, 0), (0, 0)), "round {round}");
                let events = db.count_stream(&format!("reservation:{b}")).await;
                assert_eq!(events, 4, "placed, dropped, released: round {round}");
            }
        }
    }
    db.assert_audit_clean().await;
}

/// A release and an expiry of a reservation whose units wait drop them
/// first; what they waited for is promised again.
#[tokio::test]
async fn release_and_expiry_drop_what_waits() {
    let db = TestDb::new().await;
    db.receive("in-0", "lamp", 2).await;
    db.run(expect("po-1", "lamp", 10, "2027-01-10"))
        .await
        .unwrap();
    db.run(backorder("r1", "lamp", 5, None)).await.unwrap();
    assert_eq!(held_and_waiting(&db, "r1").await, (2, 3));
    let released = db.run(release("r1")).await.unwrap();
    let line = only_line(&released);
    assert_eq!((line.released, line.dropped, line.waiting), (2, 3, 0));
    let mut short = backorder("r2", "lamp", 12, None);
    if let Command::Reserve(r) = &mut short {
        r.ttl_seconds = 1;
    }
    db.run(short).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    db.project_all().await;
    assert_eq!(db.store.expire_due("test", 10).await.unwrap(), 1);
    assert_eq!(held_and_waiting(&db, "r2").await, (0, 0));
    assert_eq!(db.figures("lamp").await, (2, 0, 0));
    db.assert_audit_clean().await;
}

#[tokio::test]
async fn backorders_over_http_and_the_cli() {
    let mut server = common::server::TestServer::start(common::server::test_config()).await;
    let po =
        json!({"expected_id": "po-1", "sku": "lamp", "quantity": 10, "expected_on": "2027-01-10"});
    assert_eq!(server.post("/v1/expected-receipts", po).await.0, 201);
    let body = json!({"reservation_id": "r1", "order_id": "o1", "ttl_seconds": 86400,
                      "lines": [{"sku": "lamp", "quantity": 3}],
                      "backorder": true, "latest_arrival": "2027-01-10"});
    let (status, answer) = server.post("/v1/reservations", body).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        answer["lines"],
        json!([{"sku": "lamp", "location": "default", "quantity": 3, "open": 0,
                "confirmed": 0, "released": 0, "expired": 0, "waiting": 3}])
    );
    let too_early = json!({"reservation_id": "r2", "order_id": "o2",
                           "lines": [{"sku": "lamp", "quantity": 1}],
                           "backorder": true, "latest_arrival": "2027-01-09"});
    let (status, answer) = server.post("/v1/reservations", too_early).await;
    assert_eq!(
        (status, answer["code"].clone()),
        (422, json!("INSUFFICIENT_STOCK"))
    );
    let (status, answer) = server.post("/v1/reservations/r1/confirm", json!({})).await;
    assert_eq!(
        (status, answer["code"].clone()),
        (409, json!("BACKORDER_WAITING"))
    );
    let args = [
        "reserve",
        "--reservation-id",
        "r3",
        "--order-id",
        "o3",
        "--line",
        "lamp:2",
        "--ttl",
        "86400",
        "--backorder",
    ];
    let (code, doc) = cli_json(&server.db.url(), &args);
    assert_eq!(
        (code, doc["lines"][0]["waiting"].clone()),
        (Some(0), json!(2)),
        "{doc}"
    );
    // The server's backorder worker fills both as the stock arrives.
    let receipt = json!({"receipt_id": "in-1", "sku": "lamp", "quantity": 10, "against": "po-1"});
    assert_eq!(server.post("/v1/stock/receipts", receipt).await.0, 201);
    let mut filled = false;
    for _ in 0..100 {
        let (_, r1) = server.get("/v1/reservations/r1", "reader").await;
        let (_, r3) = server.get("/v1/reservations/r3", "reader").await;
        if r1["lines"][0]["open"] == 3 && r3["lines"][0]["open"] == 2 {
            filled = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(filled, "the backorder worker filled both");
    let (status, _) = server.post("/v1/reservations/r1/confirm", json!({})).await;
    assert_eq!(status, 200);
    server.db.assert_audit_clean().await;
    server.stop().await;
}

/// A database as schema 18 left it, with an open expected receipt, one
/// cancelled and one delivered in full: after the migration the open one is
/// on its item's backlog (a backorder can draw on it), the others are not,
/// the live `stock_levels` has the new figure, and the audit is clean.
#[tokio::test]
async fn upgrading_past_schema_19_puts_open_expected_receipts_on_the_backlog() {
    let db = TestDb::at_schema(4, 18).await;
    let mut client = db.client().await;
    // The rows release 18 keeps in `event_types` for the expected receipts'
    // events (this binary fills the table only from schema 19 on).
    for name in [
        "ReceiptExpected",
        "ExpectedReceiptChanged",
        "ExpectedReceiptDelivered",
        "ExpectedReceiptCancelled",
    ] {
        client
            .execute(
                "INSERT INTO event_types (name, on_hand, reserved, confirmed, opens_reservation,
                                          moves_to, settles, low_stock, incoming)
                 VALUES ($1, 0, 0, 0, false, NULL, false, 0, true)",
                &[&name],
            )
            .await
            .unwrap();
    }
    let meta = json!({"command_id": uuid::Uuid::new_v4(), "actor": "test"});
    let on = |d| chrono::NaiveDate::from_ymd_opt(2027, 1, d).unwrap();
    let expected = |q, d| {
        stockledger::domain::Event::ReceiptExpected(stockledger::domain::event::ReceiptExpected {
            sku: item("lamp").sku,
            location: item("lamp").location,
            quantity: q,
            expected_on: on(d),
        })
    };
    let cancelled = stockledger::domain::Event::ExpectedReceiptCancelled(
        stockledger::domain::event::ExpectedReceiptCancelled {
            sku: item("lamp").sku,
            location: item("lamp").location,
            expected_on: on(12),
            withdrawn: 4,
        },
    );
    let tx = client.transaction().await.unwrap();
    insert_event(&tx, "expected:po-open", 1, &expected(6, 10), &meta).await;
    insert_event(&tx, "expected:po-gone", 1, &expected(4, 12), &meta).await;
    insert_event(&tx, "expected:po-gone", 2, &cancelled, &meta).await;
    tx.execute(
        "INSERT INTO item_balances (sku, location) VALUES ('lamp', 'default')",
        &[],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    db.owner_store().migrate().await.unwrap();
    let backlog: Vec<serde_json::Value> = db
        .column("SELECT backlog FROM item_balances WHERE sku = 'lamp'")
        .await;
    assert_eq!(
        backlog,
        [json!({"queue": [], "incoming": {"po-open": {"on": "2027-01-10", "units": 6}}})]
    );
    let columns: Vec<String> = db
        .column(
            "SELECT column_name::text FROM information_schema.columns
             WHERE table_schema = 'public' AND table_name = 'stock_levels'
               AND column_name IN ('backordered', 'available') ORDER BY 1",
        )
        .await;
    assert_eq!(columns, ["available", "backordered"]);
    let got = db.run(backorder("r1", "lamp", 6, None)).await.unwrap();
    assert_eq!(only_line(&got).waiting, 6);
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// Before the read models have an item, its promise comes from its balance
/// row alone: what waits and what is expected, at one moment, never "2
/// promised and nothing coming".
#[tokio::test]
async fn a_promise_before_the_read_models_have_the_item_is_one_moment() {
    let db = TestDb::new().await;
    db.run(expect("po-1", "lamp", 5, "2027-01-01"))
        .await
        .unwrap();
    db.run(backorder("r1", "lamp", 2, None)).await.unwrap();
    let p = db.store.promise(&item("lamp")).await.unwrap().unwrap();
    assert_eq!(p.promise.available_now, -2);
    assert_eq!(p.promise.incoming, 5);
    let dates: Vec<(String, i64)> = p
        .promise
        .dates
        .iter()
        .map(|d| (d.date.to_string(), d.available))
        .collect();
    assert_eq!(dates, [("2027-01-01".to_owned(), 3)]);
}
