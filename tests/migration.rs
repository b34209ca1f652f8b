//! The typed log row (`schema/0007_typed_log.sql`) on a log the old schema
//! wrote: every event reads back as it was written, the typed columns and the
//! indexes on them work, the log is append-only again, and the audit is clean.

mod common;

use std::collections::BTreeMap;
use stockledger::domain::event::{
    ReservationConfirmed, ReservationCreated, ReservationExpired, ReservationReleased,
    StockAdjusted, StockReceived,
};

use chrono::{Duration, SubsecRound, Utc};
use common::*;
use stockledger::domain::command::Line;
use stockledger::domain::shape;
use stockledger::domain::{
    Event, EventMetadata, Item, Location, OrderId, RecordedEvent, Sku, StockDelta,
};
use stockledger::store::Cursor;

/// The schema version before the typed log row.
const OLD_SCHEMA: i32 = 6;

fn item(sku: &str, location: &str) -> Item {
    Item {
        sku: Sku::parse("sku", sku).unwrap(),
        location: Location::parse("location", location).unwrap(),
    }
}

fn line(sku: &str, location: &str, quantity: u32) -> Line {
    Line {
        item: item(sku, location),
        quantity,
    }
}

fn order(id: &str) -> OrderId {
    OrderId::parse("order_id", id).unwrap()
}

/// A log with every event type, multi-line reservations in every end state,
/// a tombstone and an open reservation, in stream order.
fn old_log() -> Vec<(String, i32, Event)> {
    let apple = item("apple", "default");
    let pear = item("pear", "wh-2");
    let two = vec![line("apple", "default", 2), line("pear", "wh-2", 1)];
    // Whole microseconds, as the domain makes every expiry.
    let expires = (Utc::now() + Duration::hours(1)).trunc_subsecs(6);
    let created = |o: &str, lines: &Vec<Line>| {
        Event::ReservationCreated(ReservationCreated {
            order_id: order(o),
            lines: lines.clone(),
            expires_at: expires,
            ttl_seconds: 3600,
            request_hash: format!("hash-{o}"),
        })
    };
    vec![
        (
            "receipt:in-1".into(),
            1,
            Event::StockReceived(StockReceived {
                sku: apple.sku.clone(),
                location: apple.location.clone(),
                quantity: 10,
            }),
        ),
        (
            "receipt:in-2".into(),
            1,
            Event::StockReceived(StockReceived {
                sku: pear.sku.clone(),
                location: pear.location.clone(),
                quantity: 5,
            }),
        ),
        (
            "adjustment:count-1".into(),
            1,
            Event::StockAdjusted(StockAdjusted {
                sku: apple.sku,
                location: apple.location,
                delta: -1,
                reason: "cycle count".into(),
            }),
        ),
        ("reservation:r1".into(), 1, created("o1", &two)),
        (
            "reservation:r1".into(),
            2,
            Event::ReservationConfirmed(ReservationConfirmed {
                order_id: order("o1"),
                lines: two.clone(),
                confirmation_id: None,
            }),
        ),
        ("reservation:r2".into(), 1, created("o2", &two)),
        (
            "reservation:r2".into(),
            2,
            Event::ReservationReleased(ReservationReleased {
                order_id: Some(order("o2")),
                lines: two.clone(),
                reason: "cancelled".into(),
                release_id: None,
            }),
        ),
        (
            "reservation:r3".into(),
            1,
            created("o3", &vec![line("pear", "wh-2", 2)]),
        ),
        (
            "reservation:r3".into(),
            2,
            Event::ReservationExpired(ReservationExpired {
                order_id: order("o3"),
                lines: vec![line("pear", "wh-2", 2)],
            }),
        ),
        (
            "reservation:r4".into(),
            1,
            Event::ReservationReleased(ReservationReleased {
                order_id: None,
                lines: vec![],
                reason: "released_before_reserve".into(),
                release_id: None,
            }),
        ),
        (
            "reservation:r5".into(),
            1,
            created("o5", &vec![line("apple", "default", 3)]),
        ),
    ]
}

/// Writes `log` exactly as the old writer did: the whole event as `data`,
/// and the balances it explains, in one transaction.
async fn write_old_log(db: &TestDb, log: &[(String, i32, Event)]) {
    let mut client = db.client().await;
    let tx = client.transaction().await.unwrap();
    let mut balances: BTreeMap<Item, StockDelta> = BTreeMap::new();
    for (stream, seq, event) in log {
        let meta = serde_json::to_value(EventMetadata {
            command_id: uuid::Uuid::new_v4(),
            actor: "old-release".into(),
            ..Default::default()
        })
        .unwrap();
        tx.execute(
            "INSERT INTO events (stream, seq, type, data, metadata) VALUES ($1, $2, $3, $4, $5)",
            // As the old release wrote it: version 1 of its shape.
            &[
                stream,
                seq,
                &event.type_name(),
                &shape::written_data(event, 1),
                &meta,
            ],
        )
        .await
        .unwrap();
        event.for_each_effect(|item, d| {
            let b = balances.entry(item.clone()).or_default();
            b.on_hand += d.on_hand;
            b.reserved += d.reserved;
            b.confirmed += d.confirmed;
        });
    }
    for (item, b) in &balances {
        tx.execute(
            "INSERT INTO item_balances (sku, location, on_hand, reserved, confirmed) VALUES ($1, $2, $3, $4, $5)",
            &[&item.sku.as_str(), &item.location.as_str(), &b.on_hand, &b.reserved, &b.confirmed],
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
}

async fn read_all(db: &TestDb) -> Vec<RecordedEvent> {
    db.store
        .events(Cursor::START, 1000, None)
        .await
        .unwrap()
        .events
}

#[tokio::test]
async fn a_log_written_by_the_old_schema_reads_back_the_same_after_the_migration() {
    let db = TestDb::at_schema(8, OLD_SCHEMA).await;
    let log = old_log();
    write_old_log(&db, &log).await;
    // This release cannot read the old rows (it selects the typed columns).
    let old_positions: Vec<i64> = db
        .column("SELECT position FROM events ORDER BY position")
        .await;

    let applied = db.store.migrate().await.unwrap();
    // The typed log row first, then whatever came after it.
    assert_eq!(applied.first(), Some(&7), "{applied:?}");

    // Every event is the one written, at the same place in the log.
    let after = read_all(&db).await;
    assert_eq!(after.len(), log.len());
    let positions: Vec<i64> = after.iter().map(|e| e.position).collect();
    assert_eq!(positions, old_positions);
    // Each is still version 1, shows as it was written, and reads in the
    // current shape: a reservation's hold from its expiry and recording.
    for (e, (stream, seq, event)) in after.iter().zip(&log) {
        assert_eq!(
            (&e.stream.to_string(), e.seq as i32, e.version),
            (stream, *seq, 1)
        );
        assert_eq!(e.written_data(), shape::written_data(event, 1));
        assert_eq!(e.event.type_name(), event.type_name());
        if let Event::ReservationCreated(ReservationCreated { ttl_seconds, .. }) = &e.event {
            assert!((3598..=3600).contains(ttl_seconds), "{ttl_seconds}");
        }
    }

    // The typed columns hold the order and the lines; `data` only the rest.
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT order_id, skus, locations, quantities, data FROM events
             WHERE stream = 'reservation:r1' AND seq = 1",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<String>>(0).as_deref(), Some("o1"));
    assert_eq!(row.get::<_, Vec<String>>(1), ["apple", "pear"]);
    assert_eq!(row.get::<_, Vec<String>>(2), ["default", "wh-2"]);
    assert_eq!(row.get::<_, Vec<i64>>(3), [2, 1]);
    let rest: serde_json::Value = row.get(4);
    let keys: Vec<&String> = rest.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["expires_at", "request_hash"]);
    let adjusted: Vec<i64> = db
        .column("SELECT quantities[1] FROM events WHERE type = 'StockAdjusted'")
        .await;
    assert_eq!(adjusted, [-1]);

    // The log is append-only again.
    let refused = client
        .execute("UPDATE events SET data = '{}' WHERE seq = 1", &[])
        .await
        .unwrap_err();
    assert_eq!(refused.code().map(|c| c.code()), Some("SL001"));

    // The item index finds every line, whatever its place in the event.
    let pear = db.store.item_history(&item("pear", "wh-2")).await.unwrap();
    let streams: Vec<String> = pear.iter().map(|e| e.stream.to_string()).collect();
    assert_eq!(
        streams,
        [
            "receipt:in-2",
            "reservation:r1",
            "reservation:r1",
            "reservation:r2",
            "reservation:r2",
            "reservation:r3",
            "reservation:r3"
        ]
    );

    // One order, one reservation, on the typed column too; new commands work.
    let again = db
        .run(reserve("r6", "o5", &[("apple", 1)], None))
        .await
        .unwrap_err();
    assert_eq!(again.code().as_str(), "ORDER_ALREADY_RESERVED");
    db.run(confirm("r5")).await.unwrap();
    db.run(reserve("r7", "o7", &[("apple", 4)], None))
        .await
        .unwrap();
    assert_eq!(db.figures("apple").await, (4, 4, 5));

    db.project_all().await;
    db.assert_audit_clean().await;
}
