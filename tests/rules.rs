//! Domain rules that need the whole path to show: nothing is written on a
//! rejection, tombstones, conflicts, and every validation limit.

mod common;

use common::*;
use serde_json::json;
use stockledger::domain::{
    command, AdjustRequest, Command, LineRequest, ReceiveRequest, Rejection, ReservationId,
    ReserveRequest,
};

#[tokio::test]
async fn a_release_before_its_reserve_leaves_a_tombstone() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    let answer = db.run(release("late")).await.unwrap();
    assert_eq!(state_of(&answer), "RELEASED");
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT seq, type, data FROM events WHERE stream = 'reservation:late'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 1);
    assert_eq!(row.get::<_, String>(1), "ReservationReleased");
    assert_eq!(
        row.get::<_, serde_json::Value>(2)["reason"],
        "released_before_reserve"
    );

    let late = db
        .run(reserve("late", "o-late", &[("apple", 2)], None))
        .await
        .unwrap_err();
    assert_eq!(late.code().as_str(), "RESERVATION_RELEASED");
    assert_eq!(db.count_stream(&res_stream("late")).await, 1);
    assert_eq!(db.figures("apple").await, (10, 0, 0));
    let shown = db
        .store
        .reservation(&ReservationId::parse("id", "late").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::to_value(stockledger::api::reservation(&shown, None, true)).unwrap()
            ["order_id"],
        json!(null)
    );
}

#[tokio::test]
async fn the_same_id_with_other_lines_is_a_conflict_and_writes_nothing() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.receive("in-2", "pear", 10).await;
    db.run(reserve("r1", "o1", &[("apple", 2)], None))
        .await
        .unwrap();
    let before = db.count_events().await;
    for other in [
        reserve("r1", "o1", &[("apple", 3)], None),
        reserve("r1", "o1", &[("apple", 2), ("pear", 1)], None),
        reserve("r1", "o2", &[("apple", 2)], None),
    ] {
        let err = db.run(other).await.unwrap_err();
        assert_eq!(err.code().as_str(), "IDEMPOTENCY_CONFLICT");
        assert_eq!(err.details()["stream"], res_stream("r1"));
    }
    let err = db.run(receive("in-1", "apple", 11)).await.unwrap_err();
    assert_eq!(err.code().as_str(), "IDEMPOTENCY_CONFLICT");
    assert_eq!(db.count_events().await, before);
    assert_eq!(db.figures("apple").await, (10, 2, 0));
    assert_eq!(db.figures("pear").await, (10, 0, 0));
}

#[tokio::test]
async fn a_multi_line_reserve_with_one_short_line_writes_nothing() {
    let db = TestDb::new().await;
    for (sku, q) in [("a", 10), ("b", 1), ("c", 10)] {
        db.receive(&format!("in-{sku}"), sku, q).await;
    }
    let before = db.count_events().await;
    let err = db
        .run(reserve(
            "r1",
            "o1",
            &[("a", 5), ("b", 2), ("c", 5), ("never-received", 1)],
            None,
        ))
        .await
        .unwrap_err();
    let Rejection::InsufficientStock { shortfalls } = &err else {
        panic!("{err:?}")
    };
    let named: Vec<_> = shortfalls
        .iter()
        .map(|s| (s.sku.as_str(), s.requested, s.available))
        .collect();
    assert_eq!(named, vec![("b", 2, 1), ("never-received", 1, 0)]);
    assert_eq!(db.count_events().await, before);
    for sku in ["a", "b", "c"] {
        assert_eq!(db.figures(sku).await.1, 0, "{sku}: nothing reserved");
    }
    // Nothing was appended, so the same id may succeed later.
    db.receive("in-b2", "b", 1).await;
    db.receive("in-n", "never-received", 1).await;
    let ok = db
        .run(reserve(
            "r1",
            "o1",
            &[("a", 5), ("b", 2), ("c", 5), ("never-received", 1)],
            None,
        ))
        .await
        .unwrap();
    assert!(!ok.replayed());
}

fn lines(n: usize) -> Vec<LineRequest> {
    (0..n)
        .map(|i| LineRequest {
            sku: format!("sku-{i}"),
            location: None,
            quantity: 1,
        })
        .collect()
}

fn res(f: impl FnOnce(&mut ReserveRequest)) -> Result<Command, Rejection> {
    let mut r = ReserveRequest {
        reservation_id: "r1".into(),
        order_id: "o1".into(),
        lines: lines(1),
        ttl_seconds: None,
        backorder: false,
        latest_arrival: None,
    };
    f(&mut r);
    r.validate()
}

fn rec(f: impl FnOnce(&mut ReceiveRequest)) -> Result<Command, Rejection> {
    let mut r = ReceiveRequest {
        receipt_id: "in-1".into(),
        sku: "apple".into(),
        location: None,
        quantity: 1,
        against: None,
    };
    f(&mut r);
    r.validate()
}

fn adj(f: impl FnOnce(&mut AdjustRequest)) -> Result<Command, Rejection> {
    let mut r = AdjustRequest {
        adjustment_id: "adj-1".into(),
        sku: "apple".into(),
        location: None,
        delta: 1,
        reason: "count".into(),
    };
    f(&mut r);
    r.validate()
}

/// Every limit of domain.md's "Validation": rejected with INVALID_ARGUMENT
/// naming the field, and nothing written; the values at the limits pass.
#[tokio::test]
async fn every_validation_limit() {
    let db = TestDb::new().await;
    let long = |n: usize| "x".repeat(n);
    let refused: Vec<(&str, Result<Command, Rejection>)> = vec![
        ("reservation_id", res(|r| r.reservation_id = String::new())),
        ("reservation_id", res(|r| r.reservation_id = long(65))),
        (
            "reservation_id",
            res(|r| r.reservation_id = "has space".into()),
        ),
        ("order_id", res(|r| r.order_id = "o/1".into())),
        ("order_id", res(|r| r.order_id = long(65))),
        ("lines", res(|r| r.lines = Vec::new())),
        ("lines", res(|r| r.lines = lines(101))),
        ("lines[0].sku", res(|r| r.lines[0].sku = "bad sku".into())),
        ("lines[0].sku", res(|r| r.lines[0].sku = String::new())),
        (
            "lines[1].location",
            res(|r| {
                r.lines = lines(2);
                r.lines[1].location = Some(long(65));
            }),
        ),
        ("lines[0].quantity", res(|r| r.lines[0].quantity = 0)),
        ("lines[0].quantity", res(|r| r.lines[0].quantity = -5)),
        (
            "lines[0].quantity",
            res(|r| r.lines[0].quantity = 1_000_001),
        ),
        (
            "lines[0].quantity",
            res(|r| {
                r.lines = vec![
                    LineRequest {
                        sku: "a".into(),
                        location: None,
                        quantity: 600_000,
                    },
                    LineRequest {
                        sku: "a".into(),
                        location: None,
                        quantity: 600_000,
                    },
                ]
            }),
        ),
        ("ttl_seconds", res(|r| r.ttl_seconds = Some(0))),
        (
            "ttl_seconds",
            res(|r| r.ttl_seconds = Some(7 * 24 * 3600 + 1)),
        ),
        ("receipt_id", rec(|r| r.receipt_id = "in 1".into())),
        ("sku", rec(|r| r.sku = long(65))),
        ("location", rec(|r| r.location = Some("north;drop".into()))),
        ("quantity", rec(|r| r.quantity = 0)),
        ("quantity", rec(|r| r.quantity = 1_000_001)),
        ("adjustment_id", adj(|r| r.adjustment_id = String::new())),
        ("delta", adj(|r| r.delta = 0)),
        ("delta", adj(|r| r.delta = 1_000_001)),
        ("delta", adj(|r| r.delta = -1_000_001)),
        ("reason", adj(|r| r.reason = String::new())),
        ("reason", adj(|r| r.reason = long(201))),
        ("reason", adj(|r| r.reason = "line\nbreak".into())),
        ("reason", command::release("r1", Some(&long(201)))),
        ("reservation_id", command::confirm("r 1")),
        ("reservation_id", command::expire(&long(65))),
    ];
    for (field, result) in refused {
        match result {
            Err(Rejection::InvalidArgument { field: named, .. }) => assert_eq!(named, field),
            other => panic!("{field}: expected INVALID_ARGUMENT, got {other:?}"),
        }
    }
    assert_eq!(db.count_events().await, 0, "nothing written");

    // The limits themselves are accepted, and the store writes them.
    let accepted = vec![
        rec(|r| r.quantity = 1_000_000),
        rec(|r| {
            r.receipt_id = long(64);
            r.sku = format!("A-z.0_9:{}", long(56));
        }),
        adj(|r| {
            r.delta = -1_000_000;
            r.adjustment_id = "adj-min".into();
            r.reason = long(200);
            r.sku = "big".into();
        }),
        res(|r| {
            r.lines = lines(100);
            r.ttl_seconds = Some(7 * 24 * 3600);
        }),
        res(|r| {
            r.reservation_id = "r2".into();
            r.order_id = "o2".into();
            r.lines[0].sku = "apple".into();
            r.lines[0].quantity = 1_000_000;
            r.ttl_seconds = Some(1);
        }),
    ];
    db.receive("in-big", "big", 1_000_000).await;
    for i in 0..100 {
        db.receive(&format!("in-sku-{i}"), &format!("sku-{i}"), 1)
            .await;
    }
    for cmd in accepted {
        db.run(cmd.expect("valid at the limit"))
            .await
            .expect("accepted");
    }
}
