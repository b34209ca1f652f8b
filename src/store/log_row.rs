//! How an event is laid out in its log row (`schema/0007_typed_log.sql`),
//! run for the store: each event's module lays out and reads back its own
//! row (`domain::event::row`); this module adds the row's metadata and the
//! shape's version, and names what is wrong with a row that holds no event.
//!
//! `encode` and `decode` are each other's inverse; a test below holds them to
//! that for every event type, and the migration test checks that rows the old
//! schema wrote decode to the events they were written from.

use chrono::{DateTime, Utc};

pub use crate::domain::event::row::LogRow;
use crate::domain::event::row::RowWriter;
pub(crate) use crate::domain::event::row::{Columns, Rest};
use crate::domain::shape;
use crate::domain::{Event, EventMetadata, EventType};

/// The typed columns of a row as a SELECT list names them, in the order
/// `columns_at` reads them back: the one place that says which columns hold
/// an event's order and lines, for every query that decodes events.
macro_rules! typed_columns_sql {
    () => {
        "order_id, skus, locations, quantities"
    };
}
pub(crate) use typed_columns_sql;

/// The typed columns of `row`, selected from column `at` on as
/// `typed_columns_sql!` lists them.
pub(crate) fn columns_at(row: &tokio_postgres::Row, at: usize) -> Columns<'_> {
    Columns {
        order_id: row.get(at),
        skus: row.get(at + 1),
        locations: row.get(at + 2),
        quantities: row.get(at + 3),
    }
}

/// Lays `event` out as its row would have been in `version` of its type's
/// shape: without the fields later versions added (`FactType::CHANGES`). For
/// logs written as an older release wrote them: fixtures and upgrade tests.
pub fn encode_in(event: &Event, version: shape::Version) -> LogRow<'_> {
    let mut row = encode(event);
    if let serde_json::Value::Object(data) = &mut row.data {
        shape::remove_later_fields(event.event_type(), version, data);
    }
    row
}

/// Lays `event` out as its row, in its type's current shape.
pub fn encode(event: &Event) -> LogRow<'_> {
    let mut row = RowWriter::new();
    event.fact().write_row(&mut row);
    row.finish()
}

/// Parses the `data` column as JSON text (the audit's fast path).
pub(crate) fn rest_from_str(data: &str) -> Result<Rest, String> {
    serde_json::from_str(data).map_err(|e| format!("data: {e}"))
}

/// Parses the `data` column as read into a JSON value.
pub(crate) fn rest_from_value(data: serde_json::Value) -> Result<Rest, String> {
    serde_json::from_value(data).map_err(|e| format!("data: {e}"))
}

/// What a row says of how it was written: its shape's version (the
/// `version` column) and when (`recorded_at`), which an upcast may need.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Written {
    pub version: i64,
    pub recorded_at: DateTime<Utc>,
}

/// The field of the metadata a reservation's row leaves out.
const FINGERPRINT: &str = "fingerprint";

/// Whether `event`'s row leaves its fingerprint out of `metadata`: a
/// reservation written from version 2 of its shape on, whose `request_hash`
/// (in `data`) is the same 64 characters. Rows written before keep both, and
/// read as they always did.
fn fingerprint_in_data(event: &Event, version: shape::Version) -> Option<&str> {
    event.fact().fingerprint_in_data(version)
}

/// The `metadata` column of `event`'s row, written in `version`: the
/// metadata, without a fingerprint its data already holds (about 80 bytes a
/// reservation). A reservation with no fingerprint, which the command path
/// never writes, says so with `null`, so that it cannot read as one.
pub fn metadata_row(
    event: &Event,
    version: shape::Version,
    metadata: &EventMetadata,
) -> serde_json::Value {
    let mut row = serde_json::to_value(metadata).expect("metadata serialises");
    if let (Some(hash), serde_json::Value::Object(fields)) =
        (fingerprint_in_data(event, version), &mut row)
    {
        match metadata.fingerprint.as_deref() {
            Some(f) if f == hash => fields.remove(FINGERPRINT),
            Some(_) => None,
            None => fields.insert(FINGERPRINT.to_owned(), serde_json::Value::Null),
        };
    }
    row
}

/// The metadata of `event` from its row's `metadata` column (the inverse
/// of `metadata_row`).
pub(crate) fn metadata_from_row(
    event: &Event,
    version: shape::Version,
    row: serde_json::Value,
) -> Result<EventMetadata, serde_json::Error> {
    let left_out = row.get(FINGERPRINT).is_none();
    let mut metadata: EventMetadata = serde_json::from_value(row)?;
    if let Some(hash) = fingerprint_in_data(event, version).filter(|_| left_out) {
        metadata.fingerprint = Some(hash.to_owned());
    }
    Ok(metadata)
}

/// Decodes `row` as the log would give it back for `e` (its version and
/// its recording): what a fixture of an older release checks its rows by.
pub fn decode_row(row: &LogRow<'_>, e: &crate::domain::RecordedEvent) -> Result<Event, String> {
    let written = Written {
        version: i64::from(e.version),
        recorded_at: e.recorded_at,
    };
    let columns = Columns {
        order_id: row.order_id,
        skus: row.skus.clone(),
        locations: row.locations.clone(),
        quantities: row.quantities.clone(),
    };
    decode(
        e.event.type_name(),
        written,
        columns,
        rest_from_value(row.data.clone())?,
    )
}

/// Rebuilds the event a row holds, in the current shape: a row written in
/// an older shape is brought up to the current one first (its type's
/// `upcast_row`); says what is wrong with a row that holds none.
pub(crate) fn decode(
    type_name: &str,
    written: Written,
    c: Columns<'_>,
    rest: Rest,
) -> Result<Event, String> {
    let kind = EventType::parse(type_name).ok_or_else(|| format!("unknown type {type_name}"))?;
    let version = shape::check(kind, written.version).map_err(|e| e.to_string())?;
    kind.read_row(version, written.recorded_at, &c, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::TOMBSTONE_REASON;
    use crate::domain::event::*;
    use crate::domain::ids::Line;
    use crate::domain::StockDelta;
    use crate::domain::{
        ChangeId, ConfirmationId, ExtensionId, Item, Location, OrderId, ReceiptId, ReleaseId, Sku,
    };

    fn line(sku: &str, location: &str, quantity: u32) -> Line {
        Line {
            item: Item {
                sku: Sku::parse("sku", sku).unwrap(),
                location: Location::parse("location", location).unwrap(),
            },
            quantity,
        }
    }

    fn every_type() -> Vec<Event> {
        let mut all = stock_events();
        all.extend(expected_events());
        all.extend(reservation_events());
        all.extend(backorder_events());
        all
    }

    fn backorder_events() -> Vec<Event> {
        let lines = vec![line("a", "x", 2), line("b", "y", 1)];
        let order = OrderId::parse("order_id", "o-1").unwrap();
        vec![
            Event::BackorderPlaced(BackorderPlaced {
                order_id: order.clone(),
                lines: lines.clone(),
                latest_arrival: chrono::NaiveDate::from_ymd_opt(2026, 12, 10),
            }),
            Event::BackorderPlaced(BackorderPlaced {
                order_id: order.clone(),
                lines: lines.clone(),
                latest_arrival: None,
            }),
            Event::BackorderFilled(BackorderFilled {
                order_id: order.clone(),
                lines: lines.clone(),
            }),
            Event::BackorderDropped(BackorderDropped {
                order_id: order.clone(),
                lines: lines.clone(),
                reason: DropReason::Unfillable,
            }),
            Event::BackorderDropped(BackorderDropped {
                order_id: order.clone(),
                lines: lines.clone(),
                reason: DropReason::Expired,
            }),
        ]
    }

    fn stock_events() -> Vec<Event> {
        vec![
            Event::StockReceived(StockReceived {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                quantity: 7,
            }),
            Event::StockAdjusted(StockAdjusted {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                delta: -3,
                reason: "count".into(),
            }),
            Event::StockTransferred(StockTransferred {
                sku: Sku::parse("sku", "a").unwrap(),
                from_location: Location::parse("location", "x").unwrap(),
                to_location: Location::parse("location", "y").unwrap(),
                quantity: 4,
            }),
            Event::StockCounted(StockCounted {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                counted: 6,
                books: 8,
            }),
            Event::OrderLimitSet(OrderLimitSet {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                max_per_order: Some(3),
            }),
            Event::OrderLimitSet(OrderLimitSet {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                max_per_order: None,
            }),
            Event::ReorderPointSet(ReorderPointSet {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                reorder_point: Some(4),
            }),
            Event::ReorderPointSet(ReorderPointSet {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                reorder_point: None,
            }),
            Event::StockLow(StockLow {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                available: 3,
                reorder_point: 4,
            }),
            Event::StockRecovered(StockRecovered {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                available: 3,
                reorder_point: None,
            }),
        ]
    }

    fn expected_events() -> Vec<Event> {
        vec![
            Event::ReceiptExpected(ReceiptExpected {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                quantity: 10,
                expected_on: day(10),
            }),
            Event::ExpectedReceiptChanged(ExpectedReceiptChanged {
                change_id: ChangeId::parse("change_id", "c1").unwrap(),
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                quantity: 12,
                expected_on: day(11),
                outstanding: 8,
            }),
            Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
                receipt_id: ReceiptId::parse("receipt_id", "r1").unwrap(),
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                quantity: 4,
                expected_on: day(11),
                outstanding: 0,
            }),
            Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                expected_on: day(11),
                withdrawn: 3,
            }),
        ]
    }

    fn day(d: u32) -> chrono::NaiveDate {
        chrono::NaiveDate::from_ymd_opt(2026, 12, d).unwrap()
    }

    fn reservation_events() -> Vec<Event> {
        let lines = vec![line("a", "x", 2), line("b", "y", 1)];
        let order = OrderId::parse("order_id", "o-1").unwrap();
        vec![
            Event::ReservationCreated(ReservationCreated {
                order_id: order.clone(),
                lines: lines.clone(),
                expires_at: Utc::now(),
                ttl_seconds: 600,
                request_hash: "h".into(),
            }),
            Event::ReservationConfirmed(ReservationConfirmed {
                order_id: order.clone(),
                lines: lines.clone(),
                confirmation_id: None,
            }),
            Event::ReservationConfirmed(ReservationConfirmed {
                order_id: order.clone(),
                lines: lines.clone(),
                confirmation_id: Some(ConfirmationId::parse("id", "ship-2").unwrap()),
            }),
            Event::ReservationReleased(ReservationReleased {
                order_id: Some(order.clone()),
                lines: lines.clone(),
                reason: "cancelled".into(),
                release_id: None,
            }),
            Event::ReservationReleased(ReservationReleased {
                order_id: Some(order.clone()),
                lines: lines.clone(),
                reason: "cancelled".into(),
                release_id: Some(ReleaseId::parse("id", "drop-b").unwrap()),
            }),
            Event::ReservationReleased(ReservationReleased {
                order_id: None,
                lines: vec![],
                reason: TOMBSTONE_REASON.into(),
                release_id: None,
            }),
            Event::ReservationLinesConfirmed(ReservationLinesConfirmed {
                order_id: order.clone(),
                confirmation_id: ConfirmationId::parse("id", "ship-1").unwrap(),
                lines: lines.clone(),
            }),
            Event::ReservationLinesReleased(ReservationLinesReleased {
                order_id: order.clone(),
                release_id: ReleaseId::parse("id", "drop-a").unwrap(),
                lines: lines.clone(),
                reason: "out of stock".into(),
            }),
            Event::ReservationExtended(ReservationExtended {
                order_id: order.clone(),
                extension_id: ExtensionId::parse("id", "more-time").unwrap(),
                ttl_seconds: 600,
                expires_at: Utc::now(),
            }),
            Event::ReservationExpired(ReservationExpired {
                order_id: order,
                lines,
            }),
        ]
    }

    /// How the store writes `e` today: in its type's current shape.
    fn now_written(e: &Event) -> Written {
        Written {
            version: i64::from(shape::current(e.event_type())),
            recorded_at: chrono::DateTime::UNIX_EPOCH,
        }
    }

    fn round_trip(e: &Event) -> Result<Event, String> {
        let row = encode(e);
        let columns = Columns {
            order_id: row.order_id,
            skus: row.skus,
            locations: row.locations,
            quantities: row.quantities,
        };
        decode(
            e.type_name(),
            now_written(e),
            columns,
            rest_from_value(row.data)?,
        )
    }

    /// `line_effect` over a row's lines moves every item exactly as the
    /// domain's one definition of an event's effects says.
    #[test]
    fn line_effects_are_the_events_effects() {
        let every = stock_events()
            .into_iter()
            .chain(expected_events())
            .chain(reservation_events())
            .chain(backorder_events());
        for e in every {
            let row = encode(&e);
            let sign = e.event_type().line_effect();
            let mut by_lines = std::collections::BTreeMap::new();
            for ((sku, location), q) in row.skus.iter().zip(&row.locations).zip(&row.quantities) {
                let d: &mut StockDelta = by_lines
                    .entry((sku.to_string(), location.to_string()))
                    .or_default();
                d.on_hand += sign.on_hand * q;
                d.reserved += sign.reserved * q;
                d.confirmed += sign.confirmed * q;
                d.backordered += sign.backordered * q;
            }
            let mut by_effects = std::collections::BTreeMap::new();
            e.for_each_effect(|item, delta| {
                let d: &mut StockDelta = by_effects
                    .entry((
                        item.sku.as_str().to_owned(),
                        item.location.as_str().to_owned(),
                    ))
                    .or_default();
                d.on_hand += delta.on_hand;
                d.reserved += delta.reserved;
                d.confirmed += delta.confirmed;
                d.backordered += delta.backordered;
            });
            by_lines.retain(|_, d| *d != StockDelta::default());
            by_effects.retain(|_, d| *d != StockDelta::default());
            assert_eq!(by_lines, by_effects, "{e:?}");
        }
    }

    #[test]
    fn every_event_type_decodes_to_what_was_encoded() {
        let all = every_type();
        for t in EventType::ALL {
            assert!(all.iter().any(|e| e.event_type() == *t), "{t} untested");
        }
        for e in &all {
            assert_eq!(round_trip(e).as_ref(), Ok(e));
        }
    }

    /// A version-1 reservation's hold is always derived, from its row as
    /// from its JSON, even where the row holds one (which no release wrote):
    /// it is shown and hashed without it, so nothing may read it.
    #[test]
    fn a_version_1_hold_is_derived_the_same_way_from_a_row_and_from_json() {
        let created = reservation_events()[0].clone();
        let Event::ReservationCreated(ReservationCreated { expires_at, .. }) = created else {
            unreachable!()
        };
        let recorded_at = expires_at - chrono::Duration::seconds(900);
        let row = encode(&created);
        assert!(row.data.get("ttl_seconds").is_some(), "the row holds one");
        let e = crate::domain::RecordedEvent {
            position: 1,
            stream: crate::domain::StreamId::parse("s", "reservation:r").unwrap(),
            seq: 1,
            event: created.clone(),
            version: 1,
            metadata: EventMetadata::default(),
            recorded_at,
            tx_id: 1,
        };
        let from_row = decode_row(&row, &e).unwrap();
        let from_json =
            Event::from_written("ReservationCreated", 1, created.data(), recorded_at).unwrap();
        assert_eq!(from_row, from_json);
        assert!(matches!(
            from_row,
            Event::ReservationCreated(ReservationCreated {
                ttl_seconds: 900,
                ..
            })
        ));
    }

    /// A reservation's row from version 2 on leaves out the fingerprint its
    /// `request_hash` repeats, and reads it back; nothing else is left out,
    /// and a version 1 row reads as it was written.
    #[test]
    fn a_reservations_fingerprint_is_stored_once() {
        let created = &reservation_events()[0];
        let hash = "h".to_owned();
        let with = |fingerprint: Option<&str>| EventMetadata {
            command_id: uuid::Uuid::nil(),
            actor: "t".into(),
            fingerprint: fingerprint.map(str::to_owned),
            ..Default::default()
        };
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        let cases = [
            // (version, fingerprint, its row's keys)
            (2, Some(hash.as_str()), vec!["actor", "command_id"]),
            (2, Some("other"), vec!["actor", "command_id", "fingerprint"]),
            (2, None, vec!["actor", "command_id", "fingerprint"]),
            (
                1,
                Some(hash.as_str()),
                vec!["actor", "command_id", "fingerprint"],
            ),
            (1, None, vec!["actor", "command_id"]),
        ];
        for (version, fingerprint, stored) in cases {
            let m = with(fingerprint);
            let row = metadata_row(created, version, &m);
            assert_eq!(keys(&row), stored, "{version} {fingerprint:?}");
            assert_eq!(metadata_from_row(created, version, row).unwrap(), m);
        }
        let received = &stock_events()[0];
        let m = with(Some("x"));
        let row = metadata_row(received, 1, &m);
        assert_eq!(row["fingerprint"], "x");
        assert_eq!(metadata_from_row(received, 1, row).unwrap(), m);
    }

    #[test]
    fn data_holds_only_what_has_no_column() {
        let all = every_type();
        let created = all
            .iter()
            .find(|e| e.event_type() == EventType::ReservationCreated)
            .unwrap();
        let row = encode(created);
        let keys: Vec<&String> = row.data.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["expires_at", "request_hash", "ttl_seconds"]);
        assert_eq!(row.skus, ["a", "b"]);
        assert_eq!(row.quantities, [2, 1]);
    }

    #[test]
    fn a_row_that_holds_no_valid_event_is_named() {
        let bad = |type_name: &str, skus: Vec<&'static str>, quantities: Vec<i64>, data: &str| {
            let columns = Columns {
                order_id: None,
                locations: skus.clone(),
                skus,
                quantities,
            };
            let written = Written {
                version: 1,
                recorded_at: chrono::DateTime::UNIX_EPOCH,
            };
            rest_from_str(data).and_then(|r| decode(type_name, written, columns, r))
        };
        assert!(bad("StockReceived", vec![], vec![], "{}").is_err());
        assert!(bad("StockReceived", vec!["a"], vec![-1], "{}").is_err());
        assert!(bad("StockAdjusted", vec!["a"], vec![1], "{}").is_err());
        assert!(bad("ReservationConfirmed", vec!["a"], vec![1], "{}").is_err());
        assert!(bad("Unknown", vec!["a"], vec![1], "{}").is_err());
        assert!(bad("StockReceived", vec!["a"], vec![1], r#"{"extra": 1}"#).is_err());
        assert!(bad("StockReceived", vec!["a"], vec![1], "{}").is_ok());
        // A limit without its field is named, not read as "no limit"; a
        // lifted one says so with null.
        assert!(bad("OrderLimitSet", vec!["a"], vec![0], "{}").is_err());
        assert!(bad(
            "OrderLimitSet",
            vec!["a"],
            vec![0],
            r#"{"max_per_order": null}"#
        )
        .is_ok());
    }

    #[test]
    fn a_lifted_limit_is_stored_as_null() {
        let lifted = Event::OrderLimitSet(OrderLimitSet {
            sku: Sku::parse("sku", "a").unwrap(),
            location: Location::parse("location", "x").unwrap(),
            max_per_order: None,
        });
        assert_eq!(
            encode(&lifted).data,
            serde_json::json!({"max_per_order": null})
        );
    }
}
