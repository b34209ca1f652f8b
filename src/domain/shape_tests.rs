//! The shapes' rules: versions are consecutive and checked, every change has
//! its upcast, and an event written in an older shape reads as the current
//! one and shows (and hashes) as it was written.

use crate::domain::event::ReservationCreated;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;

use super::*;
use crate::domain::ids::Line;
use crate::domain::ids::{Item, Location, OrderId, Sku};

fn at(seconds: i64, micros: u32) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + seconds, micros * 1000)
        .unwrap()
}

fn created(ttl_seconds: u32) -> Event {
    Event::ReservationCreated(ReservationCreated {
        order_id: OrderId::parse("order_id", "o-1").unwrap(),
        lines: vec![Line {
            item: Item {
                sku: Sku::parse("sku", "hat").unwrap(),
                location: Location::parse_or_default("location", None).unwrap(),
            },
            quantity: 2,
        }],
        expires_at: at(i64::from(ttl_seconds), 250_000),
        ttl_seconds,
        request_hash: "h".into(),
    })
}

#[test]
fn each_types_versions_run_from_2_without_gaps_and_only_grow() {
    for t in EventType::ALL {
        let versions: Vec<Version> = t.changes().iter().map(|c| c.version).collect();
        let expected: Vec<Version> = (2..2 + versions.len() as Version).collect();
        assert_eq!(versions, expected, "{t:?}");
        assert_eq!(current(*t), 1 + versions.len() as Version, "{t:?}");
    }
    assert_eq!(current(EventType::ReservationCreated), 2);
    assert_eq!(current(EventType::StockReceived), 1);
}

#[test]
fn a_version_this_release_cannot_read_is_named() {
    let t = EventType::ReservationCreated;
    assert_eq!(check(t, 1), Ok(1));
    assert_eq!(check(t, 2), Ok(2));
    assert!(matches!(
        check(t, 3),
        Err(ShapeError::Newer { current: 2, .. })
    ));
    assert!(matches!(check(t, 0), Err(ShapeError::NoSuchVersion { .. })));
    assert!(matches!(
        check(t, -1),
        Err(ShapeError::NoSuchVersion { .. })
    ));
    assert!(matches!(check(t, 70_000), Err(ShapeError::Newer { .. })));
    let newer = check(EventType::StockReceived, 2).unwrap_err().to_string();
    assert!(newer.contains("newer release"), "{newer}");
}

#[test]
fn a_version_1_reservation_reads_its_hold_from_its_expiry_and_recording() {
    // Exact seconds, a moment's rounding either way, none, and a log
    // written by hand whose expiry comes first.
    let cases = [
        (at(900, 250_000), at(0, 250_000), 900),
        (at(900, 250_400), at(0, 250_000), 900),
        (at(900, 100_000), at(0, 250_000), 900),
        (at(0, 0), at(0, 0), 0),
        (at(0, 0), at(60, 0), 0),
    ];
    for (expires_at, recorded_at, hold) in cases {
        assert_eq!(hold_of_version_1(expires_at, recorded_at), hold);
    }
}

#[test]
fn an_older_shape_shows_as_written_and_reads_as_the_current_one() {
    let now = created(900);
    let written = written_data(&now, 1);
    assert_eq!(
        written.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["expires_at", "lines", "order_id", "request_hash"],
        "version 1 had no ttl_seconds"
    );
    assert_eq!(
        written_data(&now, 2),
        now.data(),
        "the current shape is the data"
    );
    let recorded_at = at(0, 250_000);
    let back = Event::from_written("ReservationCreated", 1, written.clone(), recorded_at);
    assert_eq!(back, Ok(now.clone()));
    // The current version reads its own field, never a derived one.
    let mut says_60 = now.data();
    says_60["ttl_seconds"] = json!(60);
    let back = Event::from_written("ReservationCreated", 2, says_60, recorded_at).unwrap();
    assert_eq!(back, created_and_says(60));
    // Version 2 without the field it added is refused, not derived.
    let missing = Event::from_written("ReservationCreated", 2, written, recorded_at);
    assert!(missing.unwrap_err().contains("ttl_seconds"));
}

fn created_and_says(ttl_seconds: u32) -> Event {
    let Event::ReservationCreated(ReservationCreated {
        order_id,
        lines,
        expires_at,
        request_hash,
        ..
    }) = created(900)
    else {
        unreachable!()
    };
    Event::ReservationCreated(ReservationCreated {
        order_id,
        lines,
        expires_at,
        ttl_seconds,
        request_hash,
    })
}

#[test]
fn an_event_of_a_type_that_never_changed_reads_as_written() {
    let data = json!({"sku": "hat", "location": "default", "quantity": 3});
    let e = Event::from_written("StockReceived", 1, data.clone(), at(0, 0)).unwrap();
    assert_eq!(written_data(&e, 1), data);
    assert!(Event::from_written("StockReceived", 2, data.clone(), at(0, 0)).is_err());
    assert!(Event::from_written("NoSuchType", 1, data, at(0, 0)).is_err());
    assert!(Event::from_written("StockReceived", 1, json!([1]), at(0, 0)).is_err());
}
