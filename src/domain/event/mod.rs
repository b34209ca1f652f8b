//! Events: the facts in the log, and what each one does to stock.
//!
//! `Event::for_each_effect` is the single definition of how an event moves
//! the figures; what an event type is apart from its data (its stream, its
//! places, what it does to a reservation, how its stored lines move stock)
//! is its row in `event_type.rs`. The command path, the audit and the projections all fold with it,
//! so they cannot disagree about what a confirm or an expiry means.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::command::Line;
pub use crate::domain::event_type::{EventType, ReservationMove};
use crate::domain::ids::{Item, Location, OrderId, Sku};
use crate::domain::settings::Setting;
use crate::domain::stream::StreamId;

/// The reason recorded on a tombstone: a release that arrived before its reserve.
pub const TOMBSTONE_REASON: &str = "released_before_reserve";

mod backorder_dropped;
mod backorder_filled;
mod backorder_placed;
mod expected_receipt_cancelled;
mod expected_receipt_changed;
mod expected_receipt_delivered;
mod order_limit_set;
mod receipt_expected;
mod reorder_point_set;
mod reservation_confirmed;
mod reservation_created;
mod reservation_expired;
mod reservation_extended;
mod reservation_lines_confirmed;
mod reservation_lines_released;
mod reservation_released;
mod stock_adjusted;
mod stock_counted;
mod stock_low;
mod stock_received;
mod stock_recovered;
mod stock_transferred;

pub use backorder_dropped::BackorderDropped;
pub use backorder_filled::BackorderFilled;
pub use backorder_placed::BackorderPlaced;
pub use expected_receipt_cancelled::ExpectedReceiptCancelled;
pub use expected_receipt_changed::ExpectedReceiptChanged;
pub use expected_receipt_delivered::ExpectedReceiptDelivered;
pub use order_limit_set::OrderLimitSet;
pub use receipt_expected::ReceiptExpected;
pub use reorder_point_set::ReorderPointSet;
pub use reservation_confirmed::ReservationConfirmed;
pub use reservation_created::ReservationCreated;
pub use reservation_expired::ReservationExpired;
pub use reservation_extended::ReservationExtended;
pub use reservation_lines_confirmed::ReservationLinesConfirmed;
pub use reservation_lines_released::ReservationLinesReleased;
pub use reservation_released::ReservationReleased;
pub use stock_adjusted::StockAdjusted;
pub use stock_counted::StockCounted;
pub use stock_low::StockLow;
pub use stock_received::StockReceived;
pub use stock_recovered::StockRecovered;
pub use stock_transferred::StockTransferred;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum Event {
    StockReceived(StockReceived),
    StockAdjusted(StockAdjusted),
    StockTransferred(StockTransferred),
    StockCounted(StockCounted),
    OrderLimitSet(OrderLimitSet),
    ReorderPointSet(ReorderPointSet),
    StockLow(StockLow),
    StockRecovered(StockRecovered),
    ReceiptExpected(ReceiptExpected),
    ExpectedReceiptChanged(ExpectedReceiptChanged),
    ExpectedReceiptDelivered(ExpectedReceiptDelivered),
    ExpectedReceiptCancelled(ExpectedReceiptCancelled),
    ReservationCreated(ReservationCreated),
    ReservationConfirmed(ReservationConfirmed),
    ReservationReleased(ReservationReleased),
    ReservationExpired(ReservationExpired),
    ReservationLinesConfirmed(ReservationLinesConfirmed),
    ReservationLinesReleased(ReservationLinesReleased),
    ReservationExtended(ReservationExtended),
    BackorderPlaced(BackorderPlaced),
    BackorderFilled(BackorderFilled),
    BackorderDropped(BackorderDropped),
}

/// Why waiting units were dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The reservation was released.
    Released,
    /// The reservation expired.
    Expired,
    /// What was expected to fill them will not come.
    Unfillable,
}

impl DropReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Released => "released",
            DropReason::Expired => "expired",
            DropReason::Unfillable => "unfillable",
        }
    }
}

/// The events of the one-event streams (receipts, adjustments, transfers,
/// counts, limits, reorder points, alerts), as one pattern.
macro_rules! single_record_events {
    () => {
        $crate::domain::event::Event::StockReceived($crate::domain::event::StockReceived { .. })
            | $crate::domain::event::Event::StockAdjusted(
                $crate::domain::event::StockAdjusted { .. },
            )
            | $crate::domain::event::Event::StockTransferred(
                $crate::domain::event::StockTransferred { .. },
            )
            | $crate::domain::event::Event::StockCounted($crate::domain::event::StockCounted { .. })
            | $crate::domain::event::Event::OrderLimitSet(
                $crate::domain::event::OrderLimitSet { .. },
            )
            | $crate::domain::event::Event::ReorderPointSet(
                $crate::domain::event::ReorderPointSet { .. },
            )
            | $crate::domain::event::Event::StockLow($crate::domain::event::StockLow { .. })
            | $crate::domain::event::Event::StockRecovered(
                $crate::domain::event::StockRecovered { .. },
            )
    };
}
pub(crate) use single_record_events;

/// The events of expected receipts' streams, as one pattern.
macro_rules! expected_receipt_events {
    () => {
        $crate::domain::event::Event::ReceiptExpected($crate::domain::event::ReceiptExpected { .. })
            | $crate::domain::event::Event::ExpectedReceiptChanged(
                $crate::domain::event::ExpectedReceiptChanged { .. },
            )
            | $crate::domain::event::Event::ExpectedReceiptDelivered(
                $crate::domain::event::ExpectedReceiptDelivered { .. },
            )
            | $crate::domain::event::Event::ExpectedReceiptCancelled(
                $crate::domain::event::ExpectedReceiptCancelled { .. },
            )
    };
}
pub(crate) use expected_receipt_events;

/// Every event that stands outside reservation streams, as one pattern:
/// the arms that treat them alike (a reservation's fold refusing them, an
/// event that names no order) list them once. A new event joins the
/// pattern of its own stream kind above, and every "outside" pattern that
/// names that kind has it.
macro_rules! outside_reservations {
    () => {
        $crate::domain::event::single_record_events!()
            | $crate::domain::event::expected_receipt_events!()
    };
}
pub(crate) use outside_reservations;

/// Every event that stands outside expected receipts' streams, as one
/// pattern (their fold refuses them alike).
macro_rules! outside_expectations {
    () => {
        $crate::domain::event::single_record_events!()
            | $crate::domain::event::reservation_events!()
    };
}
pub(crate) use outside_expectations;

/// Every event of reservation streams, as one pattern, for the arms that
/// treat them alike (a line for people that is written elsewhere).
macro_rules! reservation_events {
    () => {
        $crate::domain::event::Event::ReservationCreated(
            $crate::domain::event::ReservationCreated { .. },
        ) | $crate::domain::event::Event::ReservationConfirmed(
            $crate::domain::event::ReservationConfirmed { .. },
        ) | $crate::domain::event::Event::ReservationReleased(
            $crate::domain::event::ReservationReleased { .. },
        ) | $crate::domain::event::Event::ReservationExpired(
            $crate::domain::event::ReservationExpired { .. },
        ) | $crate::domain::event::Event::ReservationLinesConfirmed(
            $crate::domain::event::ReservationLinesConfirmed { .. },
        ) | $crate::domain::event::Event::ReservationLinesReleased(
            $crate::domain::event::ReservationLinesReleased { .. },
        ) | $crate::domain::event::Event::ReservationExtended(
            $crate::domain::event::ReservationExtended { .. },
        ) | $crate::domain::event::Event::BackorderPlaced(
            $crate::domain::event::BackorderPlaced { .. },
        ) | $crate::domain::event::Event::BackorderFilled(
            $crate::domain::event::BackorderFilled { .. },
        ) | $crate::domain::event::Event::BackorderDropped(
            $crate::domain::event::BackorderDropped { .. },
        )
    };
}
pub(crate) use reservation_events;

/// A change to one item's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StockDelta {
    pub on_hand: i64,
    pub reserved: i64,
    pub confirmed: i64,
    pub backordered: i64,
}

/// One item's figures. `available` is derived, never stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Balance {
    pub on_hand: i64,
    pub reserved: i64,
    pub confirmed: i64,
    /// Units ordered that wait for stock to arrive (backorders and
    /// pre-orders): promised, not yet held.
    #[serde(default)]
    pub backordered: i64,
}

impl Balance {
    /// What can still be promised from stock on hand: on hand less what is
    /// held, less what waiting orders have first claim on. Negative while
    /// more waits than is on the shelf (the rest is expected).
    pub fn available(&self) -> i64 {
        self.on_hand - self.reserved - self.backordered
    }

    /// On hand and not held: what waiting orders can be filled from.
    pub fn unheld(&self) -> i64 {
        self.on_hand - self.reserved
    }

    /// On hand, and neither held nor claimed by waiting orders: what an
    /// adjustment or a count may take away. Stock on hand is the queue's
    /// the moment it arrives, filled or not yet (docs/domain.md), so what
    /// may go is the same before the backorder worker's fill and after.
    pub fn free(&self) -> i64 {
        self.available().max(0)
    }

    pub fn apply(&mut self, d: StockDelta) {
        self.on_hand += d.on_hand;
        self.reserved += d.reserved;
        self.confirmed += d.confirmed;
        self.backordered += d.backordered;
    }

    /// The domain invariant `0 <= reserved <= on_hand` (and confirmed and
    /// backordered never negative).
    pub fn is_valid(&self) -> bool {
        0 <= self.reserved
            && self.reserved <= self.on_hand
            && self.confirmed >= 0
            && self.backordered >= 0
    }
}

impl Event {
    pub fn event_type(&self) -> EventType {
        // The serde tag is the variant's name, which is the type's name.
        match self {
            Event::StockReceived(StockReceived { .. }) => EventType::StockReceived,
            Event::StockAdjusted(StockAdjusted { .. }) => EventType::StockAdjusted,
            Event::StockTransferred(StockTransferred { .. }) => EventType::StockTransferred,
            Event::StockCounted(StockCounted { .. }) => EventType::StockCounted,
            Event::OrderLimitSet(OrderLimitSet { .. }) => EventType::OrderLimitSet,
            Event::ReorderPointSet(ReorderPointSet { .. }) => EventType::ReorderPointSet,
            Event::StockLow(StockLow { .. }) => EventType::StockLow,
            Event::StockRecovered(StockRecovered { .. }) => EventType::StockRecovered,
            Event::ReceiptExpected(ReceiptExpected { .. }) => EventType::ReceiptExpected,
            Event::ExpectedReceiptChanged(ExpectedReceiptChanged { .. }) => {
                EventType::ExpectedReceiptChanged
            }
            Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered { .. }) => {
                EventType::ExpectedReceiptDelivered
            }
            Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled { .. }) => {
                EventType::ExpectedReceiptCancelled
            }
            Event::ReservationCreated(ReservationCreated { .. }) => EventType::ReservationCreated,
            Event::ReservationConfirmed(ReservationConfirmed { .. }) => {
                EventType::ReservationConfirmed
            }
            Event::ReservationReleased(ReservationReleased { .. }) => {
                EventType::ReservationReleased
            }
            Event::ReservationExpired(ReservationExpired { .. }) => EventType::ReservationExpired,
            Event::ReservationLinesConfirmed(ReservationLinesConfirmed { .. }) => {
                EventType::ReservationLinesConfirmed
            }
            Event::ReservationLinesReleased(ReservationLinesReleased { .. }) => {
                EventType::ReservationLinesReleased
            }
            Event::ReservationExtended(ReservationExtended { .. }) => {
                EventType::ReservationExtended
            }
            Event::BackorderPlaced(BackorderPlaced { .. }) => EventType::BackorderPlaced,
            Event::BackorderFilled(BackorderFilled { .. }) => EventType::BackorderFilled,
            Event::BackorderDropped(BackorderDropped { .. }) => EventType::BackorderDropped,
        }
    }

    /// The order a reservation event is about; `None` for stock events and
    /// a tombstone.
    pub fn order_id(&self) -> Option<&OrderId> {
        match self {
            Event::ReservationCreated(ReservationCreated { order_id, .. })
            | Event::ReservationConfirmed(ReservationConfirmed { order_id, .. })
            | Event::ReservationExpired(ReservationExpired { order_id, .. })
            | Event::ReservationLinesConfirmed(ReservationLinesConfirmed { order_id, .. })
            | Event::ReservationLinesReleased(ReservationLinesReleased { order_id, .. })
            | Event::ReservationExtended(ReservationExtended { order_id, .. })
            | Event::BackorderPlaced(BackorderPlaced { order_id, .. })
            | Event::BackorderFilled(BackorderFilled { order_id, .. })
            | Event::BackorderDropped(BackorderDropped { order_id, .. }) => Some(order_id),
            Event::ReservationReleased(ReservationReleased { order_id, .. }) => order_id.as_ref(),
            outside_reservations!() => None,
        }
    }

    /// What a reader filters an event by after its type (the relay's
    /// subject ends with it): the SKU a stock event moves, else the id of
    /// its stream (a reservation's id). One exhaustive match, so a new event
    /// says which.
    pub fn key<'a>(&'a self, stream: &'a StreamId) -> &'a str {
        match self {
            Event::StockReceived(StockReceived { sku, .. })
            | Event::StockAdjusted(StockAdjusted { sku, .. })
            | Event::StockTransferred(StockTransferred { sku, .. })
            | Event::StockCounted(StockCounted { sku, .. })
            | Event::OrderLimitSet(OrderLimitSet { sku, .. })
            | Event::ReorderPointSet(ReorderPointSet { sku, .. })
            | Event::StockLow(StockLow { sku, .. })
            | Event::StockRecovered(StockRecovered { sku, .. })
            | Event::ReceiptExpected(ReceiptExpected { sku, .. })
            | Event::ExpectedReceiptChanged(ExpectedReceiptChanged { sku, .. })
            | Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered { sku, .. })
            | Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled { sku, .. }) => sku.as_str(),
            Event::ReservationCreated(ReservationCreated { .. })
            | Event::ReservationConfirmed(ReservationConfirmed { .. })
            | Event::ReservationReleased(ReservationReleased { .. })
            | Event::ReservationExpired(ReservationExpired { .. })
            | Event::ReservationLinesConfirmed(ReservationLinesConfirmed { .. })
            | Event::ReservationLinesReleased(ReservationLinesReleased { .. })
            | Event::ReservationExtended(ReservationExtended { .. })
            | Event::BackorderPlaced(BackorderPlaced { .. })
            | Event::BackorderFilled(BackorderFilled { .. })
            | Event::BackorderDropped(BackorderDropped { .. }) => stream.id(),
        }
    }

    /// The `type` column: the serde tag, which is the variant's name.
    pub fn type_name(&self) -> &'static str {
        self.event_type().as_str()
    }

    /// The event's fields without its type tag, as the API and the CLI show
    /// them. The log row lays them out differently (`store::log_row`).
    pub fn data(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("events always serialise");
        v.get_mut("data")
            .map(serde_json::Value::take)
            .unwrap_or_default()
    }

    /// Rebuilds an event from its type and its fields in the current shape
    /// (the inverse of `data`).
    pub fn from_parts(
        type_name: &str,
        data: serde_json::Value,
    ) -> Result<Event, serde_json::Error> {
        serde_json::from_value(serde_json::json!({"type": type_name, "data": data}))
    }

    /// Rebuilds an event from its fields as they were written in `version`
    /// of its type's shape, recorded at `recorded_at` (the inverse of
    /// `shape::written_data`): older shapes are brought up to the current one.
    pub fn from_written(
        type_name: &str,
        version: i64,
        data: serde_json::Value,
        recorded_at: DateTime<Utc>,
    ) -> Result<Event, String> {
        let kind =
            EventType::parse(type_name).ok_or_else(|| format!("unknown event type {type_name}"))?;
        let version = crate::domain::shape::check(kind, version).map_err(|e| e.to_string())?;
        let serde_json::Value::Object(mut fields) = data else {
            return Err(format!("{type_name}: its data is not an object"));
        };
        crate::domain::shape::upcast_data(kind, version, &mut fields, recorded_at);
        Event::from_parts(type_name, fields.into()).map_err(|e| format!("{type_name}: {e}"))
    }

    /// How this event moves stock: calls `f` with each item and its change.
    /// This is the one definition of an event's stock effect; everything that
    /// folds events into figures goes through it. It allocates nothing for
    /// reservation events, which makes it the hot loop of the audit.
    pub fn for_each_effect(&self, mut f: impl FnMut(&Item, StockDelta)) {
        let lines = each_line;
        let on_hand = on_hand_by;
        match self {
            Event::StockReceived(StockReceived {
                sku,
                location,
                quantity,
            }) => on_hand(&mut f, sku, location, i64::from(*quantity)),
            Event::StockAdjusted(StockAdjusted {
                sku,
                location,
                delta,
                ..
            }) => on_hand(&mut f, sku, location, i64::from(*delta)),
            Event::StockTransferred(StockTransferred {
                sku,
                from_location,
                to_location,
                quantity,
            }) => {
                on_hand(&mut f, sku, from_location, -i64::from(*quantity));
                on_hand(&mut f, sku, to_location, i64::from(*quantity));
            }
            Event::StockCounted(StockCounted {
                sku,
                location,
                counted,
                books,
            }) => on_hand(&mut f, sku, location, i64::from(*counted) - books),
            // A limit moves no stock, but names its item: the item is known
            // from then on (its balance row exists), as after a count of 0.
            // So does what is expected: it is not here until a receipt
            // brings it (that receipt's own event).
            Event::OrderLimitSet(OrderLimitSet { sku, location, .. })
            | Event::ReorderPointSet(ReorderPointSet { sku, location, .. })
            | Event::StockLow(StockLow { sku, location, .. })
            | Event::StockRecovered(StockRecovered { sku, location, .. })
            | Event::ReceiptExpected(ReceiptExpected { sku, location, .. })
            | Event::ExpectedReceiptChanged(ExpectedReceiptChanged { sku, location, .. })
            | Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered { sku, location, .. })
            | Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled { sku, location, .. }) => {
                on_hand(&mut f, sku, location, 0)
            }
            Event::ReservationCreated(ReservationCreated { lines: l, .. }) => {
                lines(l, &mut f, held)
            }
            Event::ReservationConfirmed(ReservationConfirmed { lines: l, .. })
            | Event::ReservationLinesConfirmed(ReservationLinesConfirmed { lines: l, .. }) => {
                lines(l, &mut f, shipped)
            }
            Event::ReservationReleased(ReservationReleased { lines: l, .. })
            | Event::ReservationExpired(ReservationExpired { lines: l, .. })
            | Event::ReservationLinesReleased(ReservationLinesReleased { lines: l, .. }) => {
                lines(l, &mut f, freed)
            }
            Event::BackorderPlaced(BackorderPlaced { lines: l, .. }) => lines(l, &mut f, waits),
            Event::BackorderFilled(BackorderFilled { lines: l, .. }) => lines(l, &mut f, filled),
            Event::BackorderDropped(BackorderDropped { lines: l, .. }) => lines(l, &mut f, unwaits),
            // An extension moves the expiry, never stock.
            Event::ReservationExtended(ReservationExtended { .. }) => {}
        }
    }

    /// What the event sets on its item, if it sets anything (a per-order
    /// limit, a reorder point, what an alert said): the last such event of
    /// an item is what holds. The command
    /// path, the store's item row and the audit read it here.
    pub fn setting(&self) -> Option<(Item, Setting)> {
        let item = |sku: &Sku, location: &Location| Item {
            sku: sku.clone(),
            location: location.clone(),
        };
        match self {
            Event::OrderLimitSet(OrderLimitSet {
                sku,
                location,
                max_per_order,
            }) => Some((item(sku, location), Setting::MaxPerOrder(*max_per_order))),
            Event::ReorderPointSet(ReorderPointSet {
                sku,
                location,
                reorder_point,
            }) => Some((item(sku, location), Setting::ReorderPoint(*reorder_point))),
            Event::StockLow(StockLow { sku, location, .. }) => {
                Some((item(sku, location), Setting::AlertedLow(true)))
            }
            Event::StockRecovered(StockRecovered { sku, location, .. }) => {
                Some((item(sku, location), Setting::AlertedLow(false)))
            }
            Event::StockReceived(StockReceived { .. })
            | Event::StockAdjusted(StockAdjusted { .. })
            | Event::StockTransferred(StockTransferred { .. })
            | Event::StockCounted(StockCounted { .. })
            | Event::ReceiptExpected(ReceiptExpected { .. })
            | Event::ExpectedReceiptChanged(ExpectedReceiptChanged { .. })
            | Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered { .. })
            | Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled { .. })
            | Event::ReservationCreated(ReservationCreated { .. })
            | Event::ReservationConfirmed(ReservationConfirmed { .. })
            | Event::ReservationReleased(ReservationReleased { .. })
            | Event::ReservationExpired(ReservationExpired { .. })
            | Event::ReservationLinesConfirmed(ReservationLinesConfirmed { .. })
            | Event::ReservationLinesReleased(ReservationLinesReleased { .. })
            | Event::ReservationExtended(ReservationExtended { .. })
            | Event::BackorderPlaced(BackorderPlaced { .. })
            | Event::BackorderFilled(BackorderFilled { .. })
            | Event::BackorderDropped(BackorderDropped { .. }) => None,
        }
    }

    /// The stock effects as a list (see `for_each_effect`).
    pub fn stock_effects(&self) -> Vec<(Item, StockDelta)> {
        let mut effects = Vec::new();
        self.for_each_effect(|item, d| effects.push((item.clone(), d)));
        effects
    }
}

/// Calls `f` with a change of on-hand stock of `sku` at `location` by `by`.
fn on_hand_by(f: &mut dyn FnMut(&Item, StockDelta), sku: &Sku, location: &Location, by: i64) {
    let item = Item {
        sku: sku.clone(),
        location: location.clone(),
    };
    f(
        &item,
        StockDelta {
            on_hand: by,
            ..Default::default()
        },
    );
}

/// What a line of `q` units does to its item's figures, by what happens to
/// them: held by a reserve, shipped by a confirm, freed by a release or an
/// expiry, placed to wait for stock, filled from stock, or no longer
/// waiting (dropped).
fn held(q: i64) -> StockDelta {
    StockDelta {
        reserved: q,
        ..Default::default()
    }
}

fn shipped(q: i64) -> StockDelta {
    StockDelta {
        on_hand: -q,
        reserved: -q,
        confirmed: q,
        backordered: 0,
    }
}

fn freed(q: i64) -> StockDelta {
    StockDelta {
        reserved: -q,
        ..Default::default()
    }
}

fn waits(q: i64) -> StockDelta {
    StockDelta {
        backordered: q,
        ..Default::default()
    }
}

fn filled(q: i64) -> StockDelta {
    StockDelta {
        reserved: q,
        backordered: -q,
        ..Default::default()
    }
}

fn unwaits(q: i64) -> StockDelta {
    StockDelta {
        backordered: -q,
        ..Default::default()
    }
}

/// Calls `f` with each line's item and `d` of its quantity.
fn each_line(lines: &[Line], f: &mut dyn FnMut(&Item, StockDelta), d: fn(i64) -> StockDelta) {
    for l in lines {
        f(&l.item, d(i64::from(l.quantity)));
    }
}

/// Who asked, and why: stored with every event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventMetadata {
    /// One id per logical command, kept across the store's own retries, so a
    /// command whose commit acknowledgement was lost can recognise its own event.
    pub command_id: Uuid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<String>,
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// An event as read back from the log: `event` in the current shape, and
/// the `version` of its type's shape it was written in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedEvent {
    pub position: i64,
    pub stream: StreamId,
    pub seq: u32,
    pub event: Event,
    pub version: crate::domain::shape::Version,
    pub metadata: EventMetadata,
    pub recorded_at: DateTime<Utc>,
    /// The writing transaction; with `position`, the safe-reading cursor.
    pub tx_id: i64,
}

impl RecordedEvent {
    /// The event's data as it was written (`shape::written_data`).
    pub fn written_data(&self) -> serde_json::Value {
        crate::domain::shape::written_data(&self.event, self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_through_type_and_data() {
        let e = Event::ReservationReleased(ReservationReleased {
            order_id: None,
            lines: vec![],
            reason: TOMBSTONE_REASON.into(),
            release_id: None,
        });
        let back = Event::from_parts(e.type_name(), e.data()).unwrap();
        assert_eq!(back, e);
        assert_eq!(e.data()["reason"], TOMBSTONE_REASON);
    }

    #[test]
    fn type_names_are_the_serde_tags() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(*t));
        }
        let e = Event::StockReceived(StockReceived {
            sku: Sku::parse("sku", "s").unwrap(),
            location: Location::parse("location", "l").unwrap(),
            quantity: 1,
        });
        assert_eq!(serde_json::to_value(&e).unwrap()["type"], e.type_name());
    }
}
