//! How an event reads to a person: one line saying what it did, for the
//! CLI's timelines and the demo's story. Beside the events, so that a new
//! event's words are written where the event is, not in each shell.

use crate::domain::event::{
    BackorderDropped, BackorderFilled, BackorderPlaced, ExpectedReceiptCancelled,
    ExpectedReceiptChanged, ExpectedReceiptDelivered, OrderLimitSet, ReceiptExpected,
    ReorderPointSet, ReservationConfirmed, ReservationCreated, ReservationExpired,
    ReservationExtended, ReservationLinesConfirmed, ReservationLinesReleased, ReservationReleased,
    StockAdjusted, StockCounted, StockLow, StockReceived, StockRecovered, StockTransferred,
};
use std::fmt;

use crate::domain::command::Line;
use crate::domain::event::{expected_receipt_events, reservation_events, Event};
use crate::domain::expectation::outside_expectations;
use crate::domain::text::shown;

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

impl Event {
    /// One line for a person: what the event did.
    fn summary(&self) -> String {
        let lines = |lines: &[Line]| {
            lines
                .iter()
                .map(|l| format!("{} × {}@{}", l.quantity, l.item.sku, l.item.location))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Event::StockReceived(StockReceived { .. })
            | Event::StockAdjusted(StockAdjusted { .. })
            | Event::StockTransferred(StockTransferred { .. })
            | Event::StockCounted(StockCounted { .. })
            | Event::OrderLimitSet(OrderLimitSet { .. })
            | Event::ReorderPointSet(ReorderPointSet { .. })
            | Event::StockLow(StockLow { .. })
            | Event::StockRecovered(StockRecovered { .. }) => self.item_summary(),
            expected_receipt_events!() => self.expected_summary(),
            Event::ReservationCreated(ReservationCreated {
                order_id,
                lines: l,
                expires_at,
                ..
            }) => {
                format!(
                    "reserved {} for order {order_id}, until {}",
                    lines(l),
                    expires_at.format("%H:%M:%S")
                )
            }
            Event::ReservationConfirmed(ReservationConfirmed { lines: l, .. }) => {
                format!("confirmed {}", lines(l))
            }
            Event::ReservationReleased(ReservationReleased {
                lines: l, reason, ..
            }) if l.is_empty() => format!("released before it was reserved ({})", shown(reason)),
            Event::ReservationReleased(ReservationReleased {
                lines: l, reason, ..
            }) => format!("released {} ({})", lines(l), shown(reason)),
            Event::ReservationExpired(ReservationExpired { lines: l, .. }) => {
                format!("expired, freeing {}", lines(l))
            }
            Event::ReservationLinesConfirmed(ReservationLinesConfirmed {
                confirmation_id,
                lines: l,
                ..
            }) => format!("confirmed {} ({confirmation_id})", lines(l)),
            Event::ReservationLinesReleased(ReservationLinesReleased {
                release_id,
                lines: l,
                reason,
                ..
            }) => format!("released {} ({release_id}: {})", lines(l), shown(reason)),
            Event::ReservationExtended(ReservationExtended { expires_at, .. }) => {
                format!("held until {}", expires_at.format("%H:%M:%S"))
            }
            Event::BackorderPlaced(BackorderPlaced {
                lines: l,
                latest_arrival: Some(by),
                ..
            }) => format!("backordered {}, arriving by {by}", lines(l)),
            Event::BackorderPlaced(BackorderPlaced {
                lines: l,
                latest_arrival: None,
                ..
            }) => format!("backordered {}", lines(l)),
            Event::BackorderFilled(BackorderFilled { lines: l, .. }) => {
                format!("filled {} from stock", lines(l))
            }
            Event::BackorderDropped(BackorderDropped {
                lines: l, reason, ..
            }) => format!("dropped {} waiting ({})", lines(l), reason.as_str()),
        }
    }

    /// The line of an event about one item (stock moved, a limit set).
    fn item_summary(&self) -> String {
        match self {
            Event::StockReceived(StockReceived {
                sku,
                location,
                quantity,
            }) => format!("received {quantity} × {sku}@{location}"),
            Event::StockAdjusted(StockAdjusted {
                sku,
                location,
                delta,
                reason,
            }) => format!("adjusted {delta:+} × {sku}@{location} ({})", shown(reason)),
            Event::StockTransferred(StockTransferred {
                sku,
                from_location,
                to_location,
                quantity,
            }) => format!("moved {quantity} × {sku} from {from_location} to {to_location}"),
            Event::StockCounted(StockCounted {
                sku,
                location,
                counted,
                books,
            }) => format!(
                "counted {counted} × {sku}@{location} (the books said {books}: {:+})",
                i64::from(*counted) - books
            ),
            Event::OrderLimitSet(OrderLimitSet {
                sku,
                location,
                max_per_order: Some(max),
            }) => format!("limited {sku}@{location} to {max} per order"),
            Event::OrderLimitSet(OrderLimitSet {
                sku,
                location,
                max_per_order: None,
            }) => format!("lifted the per-order limit of {sku}@{location}"),
            Event::ReorderPointSet(ReorderPointSet {
                sku,
                location,
                reorder_point: Some(point),
            }) => format!("reorder {sku}@{location} below {point} available"),
            Event::ReorderPointSet(ReorderPointSet {
                sku,
                location,
                reorder_point: None,
            }) => format!("removed the reorder point of {sku}@{location}"),
            Event::StockLow(StockLow {
                sku,
                location,
                available,
                reorder_point,
            }) => format!("low: {available} × {sku}@{location} available, below {reorder_point}"),
            Event::StockRecovered(StockRecovered {
                sku,
                location,
                available,
                ..
            }) => format!("no longer low: {available} × {sku}@{location} available"),
            expected_receipt_events!() | reservation_events!() => {
                unreachable!("read by `summary`")
            }
        }
    }

    /// The line of an expected receipt's event: what is coming, and how much
    /// is still to come after it.
    fn expected_summary(&self) -> String {
        match self {
            Event::ReceiptExpected(ReceiptExpected {
                sku,
                location,
                quantity,
                expected_on,
            }) => format!("expecting {quantity} × {sku}@{location} on {expected_on}"),
            Event::ExpectedReceiptChanged(ExpectedReceiptChanged {
                change_id,
                sku,
                location,
                quantity,
                expected_on,
                outstanding,
            }) => format!(
                "now expecting {quantity} × {sku}@{location} on {expected_on}, \
                 {outstanding} still to come ({change_id})"
            ),
            Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
                receipt_id,
                sku,
                location,
                quantity,
                outstanding,
                ..
            }) => format!(
                "{quantity} × {sku}@{location} delivered by {receipt_id}, {outstanding} still to come"
            ),
            Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled {
                sku,
                location,
                withdrawn,
                ..
            }) => format!("cancelled: {withdrawn} × {sku}@{location} no longer coming"),
            outside_expectations!() => unreachable!("read by `item_summary` and `summary`"),
        }
    }
}
