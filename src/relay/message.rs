//! What the relay publishes for one event: its subject, its message id and
//! its payload. Pure functions of the event, so a replay after a crash
//! publishes exactly the same message, which the broker recognises.

use serde_json::Value;

use crate::domain::RecordedEvent;
use crate::store::read::event_json;
use crate::store::Cursor;

/// The message id: `<stream>:<seq>`, unique in the log, so unique in the
/// broker stream (`Nats-Msg-Id`).
pub fn message_id(e: &RecordedEvent) -> String {
    format!("{}:{}", e.stream, e.seq)
}

/// A subject token for an id: ids may hold `.`, which separates subject
/// tokens, so it is written `%2E` (`%` is never in an id, so the mapping
/// cannot confuse two ids).
fn token(id: &str) -> String {
    id.replace('.', "%2E")
}

/// `<prefix>.<event type>.<key>`: the key is the domain's (`Event::key`):
/// the SKU of a stock event, the reservation id for a reservation's events. A consumer filters by
/// type (`stockledger.<event type>.*`) or by key
/// (`stockledger.*.R-1`).
pub fn subject(prefix: &str, e: &RecordedEvent) -> String {
    let key = e.event.key(&e.stream);
    format!("{prefix}.{}.{}", e.event.type_name(), token(key))
}

/// The event as `GET /v1/events` shows it, plus its cursor: a consumer that
/// keeps the cursor of the last event it applied can resume from the log
/// itself (`GET /v1/events?after=`), and the relay learns where it stands
/// from the last message of the broker stream.
pub fn payload(e: &RecordedEvent) -> Value {
    let mut v = event_json(e);
    v["cursor"] = Value::String(Cursor::of(e).to_string());
    v
}

/// The cursor a payload carries, if it is one of ours.
pub fn cursor_of(payload: &[u8]) -> Option<Cursor> {
    let v: Value = serde_json::from_slice(payload).ok()?;
    v["cursor"].as_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::{
        BackorderDropped, ExpectedReceiptDelivered, ReservationExpired, StockLow, StockReceived,
    };
    use crate::domain::{Event, EventMetadata, Location, ReservationId, Sku, StreamId};

    fn event(stream: StreamId, event: Event) -> RecordedEvent {
        RecordedEvent {
            position: 7,
            stream,
            seq: 2,
            version: crate::domain::shape::current(event.event_type()),
            event,
            metadata: EventMetadata {
                command_id: uuid::Uuid::nil(),
                correlation_id: None,
                causation_id: None,
                actor: "test".into(),
                fingerprint: None,
            },
            recorded_at: chrono::DateTime::UNIX_EPOCH,
            tx_id: 42,
        }
    }

    #[test]
    fn a_message_says_its_event_and_where_it_stands() {
        let rid = ReservationId::parse("id", "R.1").unwrap();
        let e = event(
            StreamId::Reservation(rid.clone()),
            Event::ReservationExpired(ReservationExpired {
                order_id: crate::domain::OrderId::parse("o", "O-1").unwrap(),
                lines: vec![],
            }),
        );
        assert_eq!(message_id(&e), "reservation:R.1:2");
        assert_eq!(subject("sl", &e), "sl.ReservationExpired.R%2E1");
        let p = payload(&e);
        assert_eq!(p["cursor"], "42:7");
        assert_eq!(p["type"], "ReservationExpired");
        assert_eq!(
            cursor_of(p.to_string().as_bytes()),
            Some(Cursor {
                tx_id: 42,
                position: 7
            })
        );
        let r = event(
            StreamId::Receipt(crate::domain::ReceiptId::parse("r", "IN-1").unwrap()),
            Event::StockReceived(StockReceived {
                sku: Sku::parse("s", "apple").unwrap(),
                location: Location::parse("l", "north").unwrap(),
                quantity: 1,
            }),
        );
        assert_eq!(subject("sl", &r), "sl.StockReceived.apple");
        assert_eq!(cursor_of(b"not json"), None);
        // Low-stock alerts have subjects of their own, by item.
        let low = event(
            StreamId::Alert(crate::domain::AlertId::parse("a", "x-1").unwrap()),
            Event::StockLow(StockLow {
                sku: Sku::parse("s", "apple").unwrap(),
                location: Location::parse("l", "north").unwrap(),
                available: 1,
                reorder_point: 2,
            }),
        );
        assert_eq!(subject("sl", &low), "sl.StockLow.apple");
        // So do an expected receipt's events: a consumer follows what is
        // coming of an item by its SKU.
        let delivered = event(
            StreamId::Expected(crate::domain::ExpectedId::parse("e", "PO-1").unwrap()),
            Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
                receipt_id: crate::domain::ReceiptId::parse("r", "IN-1").unwrap(),
                sku: Sku::parse("s", "apple").unwrap(),
                location: Location::parse("l", "north").unwrap(),
                quantity: 3,
                expected_on: chrono::NaiveDate::from_ymd_opt(2027, 1, 10).unwrap(),
                outstanding: 7,
            }),
        );
        assert_eq!(
            subject("sl", &delivered),
            "sl.ExpectedReceiptDelivered.apple"
        );
        assert_eq!(message_id(&delivered), "expected:PO-1:2");
    }

    /// A backorder's events are its reservation's: a consumer that follows
    /// an order hears its units filled or dropped.
    #[test]
    fn a_backorder_event_is_its_reservations() {
        let dropped = event(
            StreamId::Reservation(crate::domain::ReservationId::parse("r", "R.1").unwrap()),
            Event::BackorderDropped(BackorderDropped {
                order_id: crate::domain::OrderId::parse("o", "O-1").unwrap(),
                lines: vec![crate::domain::Line {
                    item: crate::domain::Item {
                        sku: Sku::parse("s", "apple").unwrap(),
                        location: Location::parse("l", "north").unwrap(),
                    },
                    quantity: 2,
                }],
                reason: crate::domain::event::DropReason::Unfillable,
            }),
        );
        assert_eq!(subject("sl", &dropped), "sl.BackorderDropped.R%2E1");
        assert_eq!(payload(&dropped)["data"]["reason"], "unfillable");
    }
}
