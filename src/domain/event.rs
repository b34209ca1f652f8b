//! Events: the facts in the log, and what each one does to stock.
//!
//! `Event::for_each_effect` is the single definition of how an event moves
//! the figures; what an event type is apart from its data (its stream, its
//! places, what it does to a reservation, how its stored lines move stock)
//! is its row in `event_type.rs`. The command path, the audit and the projections all fold with it,
//! so they cannot disagree about what a confirm or an expiry means.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::command::Line;
pub use crate::domain::event_type::{EventType, ReservationMove};
use crate::domain::ids::{
    ChangeId, ConfirmationId, ExtensionId, Item, Location, OrderId, ReceiptId, ReleaseId, Sku,
};
use crate::domain::settings::Setting;
use crate::domain::stream::StreamId;

/// The reason recorded on a tombstone: a release that arrived before its reserve.
pub const TOMBSTONE_REASON: &str = "released_before_reserve";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum Event {
    StockReceived {
        sku: Sku,
        location: Location,
        quantity: u32,
    },
    StockAdjusted {
        sku: Sku,
        location: Location,
        delta: i32,
        reason: String,
    },
    /// Moves `quantity` of `sku` from one location to another at once: no
    /// stock is in transit between them (docs/domain.md says why).
    StockTransferred {
        sku: Sku,
        from_location: Location,
        to_location: Location,
        quantity: u32,
    },
    /// A stock take found `counted` units where the books had `books`: the
    /// difference is the event's change of on-hand stock.
    StockCounted {
        sku: Sku,
        location: Location,
        counted: u32,
        books: i64,
    },
    /// From now on, no order may reserve more than `max_per_order` of
    /// `sku` at `location`; `None` lifts the limit. Moves no stock.
    OrderLimitSet {
        sku: Sku,
        location: Location,
        max_per_order: Option<u32>,
    },
    /// From now on, the item is low while its available stock is below
    /// `reorder_point`; `None` removes the point. Moves no stock.
    ReorderPointSet {
        sku: Sku,
        location: Location,
        reorder_point: Option<u32>,
    },
    /// Written by the ledger: the command before it in the same transaction
    /// left `available` units, below the item's reorder point.
    StockLow {
        sku: Sku,
        location: Location,
        available: i64,
        reorder_point: u32,
    },
    /// Written by the ledger: the item is no longer low: its available
    /// stock is back at or above its reorder point, or the point was
    /// raised out of reach, lowered or removed (`reorder_point` is the one
    /// now in force).
    StockRecovered {
        sku: Sku,
        location: Location,
        available: i64,
        reorder_point: Option<u32>,
    },
    /// Stock of one item is expected on a date (a purchase order line or an
    /// advance shipping notice): `quantity` units, all of them still to come.
    ReceiptExpected {
        sku: Sku,
        location: Location,
        quantity: u32,
        expected_on: NaiveDate,
    },
    /// The units expected in all, or the date, changed. `outstanding` is
    /// what is still expected after it: `quantity` less what was delivered,
    /// never below 0.
    ExpectedReceiptChanged {
        change_id: ChangeId,
        sku: Sku,
        location: Location,
        quantity: u32,
        expected_on: NaiveDate,
        outstanding: u32,
    },
    /// A receipt delivered `quantity` units against the expected receipt.
    /// The receipt's own `StockReceived` (in `receipt:<receipt_id>`, in the
    /// same transaction) moves the stock; this event moves what is still
    /// expected, to `outstanding`.
    ExpectedReceiptDelivered {
        receipt_id: ReceiptId,
        sku: Sku,
        location: Location,
        quantity: u32,
        expected_on: NaiveDate,
        outstanding: u32,
    },
    /// Nothing more is coming: the `withdrawn` units still expected are not.
    /// The last event of its stream.
    ExpectedReceiptCancelled {
        sku: Sku,
        location: Location,
        expected_on: NaiveDate,
        withdrawn: u32,
    },
    /// An order's reservation: its `lines` are held until `expires_at`,
    /// `ttl_seconds` after it was recorded. Version 2 of its shape added
    /// `ttl_seconds` (`shape.rs`); version 1 events read as their expiry less
    /// their recording.
    ReservationCreated {
        order_id: OrderId,
        lines: Vec<Line>,
        expires_at: DateTime<Utc>,
        ttl_seconds: u32,
        request_hash: String,
    },
    /// The three settling events (confirmed, released, expired) carry the
    /// order and the lines still open when they were written, so each event
    /// explains its own stock effect; the audit checks them against the
    /// stream. Without partial steps before them, those are the lines of
    /// seq 1. `confirmation_id` is set when a partial confirm took the rest.
    ReservationConfirmed {
        order_id: OrderId,
        lines: Vec<Line>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confirmation_id: Option<ConfirmationId>,
    },
    /// With no order and no lines, this is a tombstone at seq 1.
    /// `release_id` is set when a partial release took the rest.
    ReservationReleased {
        order_id: Option<OrderId>,
        lines: Vec<Line>,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        release_id: Option<ReleaseId>,
    },
    ReservationExpired {
        order_id: OrderId,
        lines: Vec<Line>,
    },
    /// Part of an open reservation confirmed (shipped); the rest stays held.
    ReservationLinesConfirmed {
        order_id: OrderId,
        confirmation_id: ConfirmationId,
        lines: Vec<Line>,
    },
    /// Part of an open reservation released (taken off the order); the rest
    /// stays held.
    ReservationLinesReleased {
        order_id: OrderId,
        release_id: ReleaseId,
        lines: Vec<Line>,
        reason: String,
    },
    /// An open reservation's hold moved later: it now expires at `expires_at`,
    /// `ttl_seconds` after the extension was decided.
    ReservationExtended {
        order_id: OrderId,
        extension_id: ExtensionId,
        ttl_seconds: u32,
        expires_at: DateTime<Utc>,
    },
    /// The units of the order that were not on hand when it was reserved
    /// and now wait for stock that is expected (`lines`): a backorder, or a
    /// pre-order when nothing was on hand. Always seq 2, written with the
    /// reservation it belongs to. `latest_arrival` is the latest date the
    /// caller accepted stock to arrive by, if it named one.
    BackorderPlaced {
        order_id: OrderId,
        lines: Vec<Line>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        latest_arrival: Option<NaiveDate>,
    },
    /// Stock arrived (or was freed) for waiting units: they are held now,
    /// as if reserved. Written by the ledger in the order backorders were
    /// placed (first come, first served).
    BackorderFilled {
        order_id: OrderId,
        lines: Vec<Line>,
    },
    /// Waiting units that no longer wait: the order was released or expired
    /// (written just before its settling event), or the stock they waited
    /// for will not come (`unfillable`: an expected receipt was cut or
    /// cancelled, and the latest-placed backorders have nothing left to
    /// draw on).
    BackorderDropped {
        order_id: OrderId,
        lines: Vec<Line>,
        reason: DropReason,
    },
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
        $crate::domain::event::Event::StockReceived { .. }
            | $crate::domain::event::Event::StockAdjusted { .. }
            | $crate::domain::event::Event::StockTransferred { .. }
            | $crate::domain::event::Event::StockCounted { .. }
            | $crate::domain::event::Event::OrderLimitSet { .. }
            | $crate::domain::event::Event::ReorderPointSet { .. }
            | $crate::domain::event::Event::StockLow { .. }
            | $crate::domain::event::Event::StockRecovered { .. }
    };
}
pub(crate) use single_record_events;

/// The events of expected receipts' streams, as one pattern.
macro_rules! expected_receipt_events {
    () => {
        $crate::domain::event::Event::ReceiptExpected { .. }
            | $crate::domain::event::Event::ExpectedReceiptChanged { .. }
            | $crate::domain::event::Event::ExpectedReceiptDelivered { .. }
            | $crate::domain::event::Event::ExpectedReceiptCancelled { .. }
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
        $crate::domain::event::Event::ReservationCreated { .. }
            | $crate::domain::event::Event::ReservationConfirmed { .. }
            | $crate::domain::event::Event::ReservationReleased { .. }
            | $crate::domain::event::Event::ReservationExpired { .. }
            | $crate::domain::event::Event::ReservationLinesConfirmed { .. }
            | $crate::domain::event::Event::ReservationLinesReleased { .. }
            | $crate::domain::event::Event::ReservationExtended { .. }
            | $crate::domain::event::Event::BackorderPlaced { .. }
            | $crate::domain::event::Event::BackorderFilled { .. }
            | $crate::domain::event::Event::BackorderDropped { .. }
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
            Event::StockReceived { .. } => EventType::StockReceived,
            Event::StockAdjusted { .. } => EventType::StockAdjusted,
            Event::StockTransferred { .. } => EventType::StockTransferred,
            Event::StockCounted { .. } => EventType::StockCounted,
            Event::OrderLimitSet { .. } => EventType::OrderLimitSet,
            Event::ReorderPointSet { .. } => EventType::ReorderPointSet,
            Event::StockLow { .. } => EventType::StockLow,
            Event::StockRecovered { .. } => EventType::StockRecovered,
            Event::ReceiptExpected { .. } => EventType::ReceiptExpected,
            Event::ExpectedReceiptChanged { .. } => EventType::ExpectedReceiptChanged,
            Event::ExpectedReceiptDelivered { .. } => EventType::ExpectedReceiptDelivered,
            Event::ExpectedReceiptCancelled { .. } => EventType::ExpectedReceiptCancelled,
            Event::ReservationCreated { .. } => EventType::ReservationCreated,
            Event::ReservationConfirmed { .. } => EventType::ReservationConfirmed,
            Event::ReservationReleased { .. } => EventType::ReservationReleased,
            Event::ReservationExpired { .. } => EventType::ReservationExpired,
            Event::ReservationLinesConfirmed { .. } => EventType::ReservationLinesConfirmed,
            Event::ReservationLinesReleased { .. } => EventType::ReservationLinesReleased,
            Event::ReservationExtended { .. } => EventType::ReservationExtended,
            Event::BackorderPlaced { .. } => EventType::BackorderPlaced,
            Event::BackorderFilled { .. } => EventType::BackorderFilled,
            Event::BackorderDropped { .. } => EventType::BackorderDropped,
        }
    }

    /// The order a reservation event is about; `None` for stock events and
    /// a tombstone.
    pub fn order_id(&self) -> Option<&OrderId> {
        match self {
            Event::ReservationCreated { order_id, .. }
            | Event::ReservationConfirmed { order_id, .. }
            | Event::ReservationExpired { order_id, .. }
            | Event::ReservationLinesConfirmed { order_id, .. }
            | Event::ReservationLinesReleased { order_id, .. }
            | Event::ReservationExtended { order_id, .. }
            | Event::BackorderPlaced { order_id, .. }
            | Event::BackorderFilled { order_id, .. }
            | Event::BackorderDropped { order_id, .. } => Some(order_id),
            Event::ReservationReleased { order_id, .. } => order_id.as_ref(),
            outside_reservations!() => None,
        }
    }

    /// What a reader filters an event by after its type (the relay's
    /// subject ends with it): the SKU a stock event moves, else the id of
    /// its stream (a reservation's id). One exhaustive match, so a new event
    /// says which.
    pub fn key<'a>(&'a self, stream: &'a StreamId) -> &'a str {
        match self {
            Event::StockReceived { sku, .. }
            | Event::StockAdjusted { sku, .. }
            | Event::StockTransferred { sku, .. }
            | Event::StockCounted { sku, .. }
            | Event::OrderLimitSet { sku, .. }
            | Event::ReorderPointSet { sku, .. }
            | Event::StockLow { sku, .. }
            | Event::StockRecovered { sku, .. }
            | Event::ReceiptExpected { sku, .. }
            | Event::ExpectedReceiptChanged { sku, .. }
            | Event::ExpectedReceiptDelivered { sku, .. }
            | Event::ExpectedReceiptCancelled { sku, .. } => sku.as_str(),
            Event::ReservationCreated { .. }
            | Event::ReservationConfirmed { .. }
            | Event::ReservationReleased { .. }
            | Event::ReservationExpired { .. }
            | Event::ReservationLinesConfirmed { .. }
            | Event::ReservationLinesReleased { .. }
            | Event::ReservationExtended { .. }
            | Event::BackorderPlaced { .. }
            | Event::BackorderFilled { .. }
            | Event::BackorderDropped { .. } => stream.id(),
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
            Event::StockReceived {
                sku,
                location,
                quantity,
            } => on_hand(&mut f, sku, location, i64::from(*quantity)),
            Event::StockAdjusted {
                sku,
                location,
                delta,
                ..
            } => on_hand(&mut f, sku, location, i64::from(*delta)),
            Event::StockTransferred {
                sku,
                from_location,
                to_location,
                quantity,
            } => {
                on_hand(&mut f, sku, from_location, -i64::from(*quantity));
                on_hand(&mut f, sku, to_location, i64::from(*quantity));
            }
            Event::StockCounted {
                sku,
                location,
                counted,
                books,
            } => on_hand(&mut f, sku, location, i64::from(*counted) - books),
            // A limit moves no stock, but names its item: the item is known
            // from then on (its balance row exists), as after a count of 0.
            // So does what is expected: it is not here until a receipt
            // brings it (that receipt's own event).
            Event::OrderLimitSet { sku, location, .. }
            | Event::ReorderPointSet { sku, location, .. }
            | Event::StockLow { sku, location, .. }
            | Event::StockRecovered { sku, location, .. }
            | Event::ReceiptExpected { sku, location, .. }
            | Event::ExpectedReceiptChanged { sku, location, .. }
            | Event::ExpectedReceiptDelivered { sku, location, .. }
            | Event::ExpectedReceiptCancelled { sku, location, .. } => {
                on_hand(&mut f, sku, location, 0)
            }
            Event::ReservationCreated { lines: l, .. } => lines(l, &mut f, held),
            Event::ReservationConfirmed { lines: l, .. }
            | Event::ReservationLinesConfirmed { lines: l, .. } => lines(l, &mut f, shipped),
            Event::ReservationReleased { lines: l, .. }
            | Event::ReservationExpired { lines: l, .. }
            | Event::ReservationLinesReleased { lines: l, .. } => lines(l, &mut f, freed),
            Event::BackorderPlaced { lines: l, .. } => lines(l, &mut f, waits),
            Event::BackorderFilled { lines: l, .. } => lines(l, &mut f, filled),
            Event::BackorderDropped { lines: l, .. } => lines(l, &mut f, unwaits),
            // An extension moves the expiry, never stock.
            Event::ReservationExtended { .. } => {}
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
            Event::OrderLimitSet {
                sku,
                location,
                max_per_order,
            } => Some((item(sku, location), Setting::MaxPerOrder(*max_per_order))),
            Event::ReorderPointSet {
                sku,
                location,
                reorder_point,
            } => Some((item(sku, location), Setting::ReorderPoint(*reorder_point))),
            Event::StockLow { sku, location, .. } => {
                Some((item(sku, location), Setting::AlertedLow(true)))
            }
            Event::StockRecovered { sku, location, .. } => {
                Some((item(sku, location), Setting::AlertedLow(false)))
            }
            Event::StockReceived { .. }
            | Event::StockAdjusted { .. }
            | Event::StockTransferred { .. }
            | Event::StockCounted { .. }
            | Event::ReceiptExpected { .. }
            | Event::ExpectedReceiptChanged { .. }
            | Event::ExpectedReceiptDelivered { .. }
            | Event::ExpectedReceiptCancelled { .. }
            | Event::ReservationCreated { .. }
            | Event::ReservationConfirmed { .. }
            | Event::ReservationReleased { .. }
            | Event::ReservationExpired { .. }
            | Event::ReservationLinesConfirmed { .. }
            | Event::ReservationLinesReleased { .. }
            | Event::ReservationExtended { .. }
            | Event::BackorderPlaced { .. }
            | Event::BackorderFilled { .. }
            | Event::BackorderDropped { .. } => None,
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
        let e = Event::ReservationReleased {
            order_id: None,
            lines: vec![],
            reason: TOMBSTONE_REASON.into(),
            release_id: None,
        };
        let back = Event::from_parts(e.type_name(), e.data()).unwrap();
        assert_eq!(back, e);
        assert_eq!(e.data()["reason"], TOMBSTONE_REASON);
    }

    #[test]
    fn type_names_are_the_serde_tags() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(*t));
        }
        let e = Event::StockReceived {
            sku: Sku::parse("sku", "s").unwrap(),
            location: Location::parse("location", "l").unwrap(),
            quantity: 1,
        };
        assert_eq!(serde_json::to_value(&e).unwrap()["type"], e.type_name());
    }
}
