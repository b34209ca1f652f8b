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

pub use crate::domain::event_type::ReservationMove;
use crate::domain::event_type::{self, Places, ReservationState};
use crate::domain::ids::Line;
use crate::domain::ids::{Item, Location, OrderId, Sku};
use crate::domain::settings::Setting;
use crate::domain::stream::StreamId;
use crate::domain::stream::StreamKind;

/// The reason recorded on a tombstone: a release that arrived before its reserve.
pub const TOMBSTONE_REASON: &str = "released_before_reserve";

pub mod fact;
pub mod row;

use fact::{Fact, FactType};
pub use reservation_created::hold_of_version_1;
#[cfg(feature = "server")]
pub(crate) use reservation_created::opens_reservation_sql;

/// The answers every event of a reservation gives alike: it is known by its
/// stream's id, names its order, and moves each of its lines' units as
/// `$moves` says (`held`, `shipped`, `freed`, `waits`, `filled`, `unwaits`).
macro_rules! an_orders_lines {
    ($moves:expr) => {
        fn effects(
            &self,
            f: &mut dyn FnMut(&$crate::domain::ids::Item, $crate::domain::event::StockDelta),
        ) {
            $crate::domain::event::each_line(&self.lines, f, $moves);
        }

        fn sku_key(&self) -> Option<&str> {
            None
        }

        fn order_id(&self) -> Option<&$crate::domain::ids::OrderId> {
            Some(&self.order_id)
        }
    };
}

/// The answers every event about one item (its `sku` at its `location`)
/// gives alike: it is known by its SKU, names no order, and moves the
/// item's on-hand stock by `$by` of it; by 0 it still names the item, whose
/// balance row exists from then on (as after a count of 0).
macro_rules! about_one_item {
    ($by:expr) => {
        fn effects(
            &self,
            f: &mut dyn FnMut(&$crate::domain::ids::Item, $crate::domain::event::StockDelta),
        ) {
            $crate::domain::event::on_hand_by(f, &self.sku, &self.location, ($by)(self));
        }

        fn sku_key(&self) -> Option<&str> {
            Some(self.sku.as_str())
        }

        fn order_id(&self) -> Option<&$crate::domain::ids::OrderId> {
            None
        }
    };
}

/// Declares the events: the module each lives in, the `Event` enum of them
/// and the `EventType` enum of their names, and the dispatch from either to
/// the event's own module. A new event is a module and a line here.
macro_rules! events {
    ($($name:ident in $module:ident,)*) => {
        $(mod $module;)*
        $(pub use $module::$name;)*

        /// A fact of the log: one of the events below, each in its own module.
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(tag = "type", content = "data")]
        pub enum Event {
            $($name($name),)*
        }

        /// The type of an event, without its data: the `type` column of the log.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventType {
            $($name,)*
        }

        impl EventType {
            /// Every event type.
            pub const ALL: &'static [EventType] = &[$(EventType::$name),*];

            /// As the log stores it (the serde tag of `Event`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventType::$name => stringify!($name),)*
                }
            }

            /// The type's row (`FactType::ROW`).
            pub(crate) fn row(self) -> event_type::TypeRow {
                match self {
                    $(EventType::$name => <$name as FactType>::ROW,)*
                }
            }

            /// Every change of the type's shape (`FactType::CHANGES`).
            pub fn changes(self) -> &'static [fact::Change] {
                match self {
                    $(EventType::$name => <$name as FactType>::CHANGES,)*
                }
            }

            /// Brings JSON data written in `version` to the current shape.
            pub(crate) fn upcast_data(
                self,
                version: fact::Version,
                data: &mut serde_json::Map<String, serde_json::Value>,
                at: DateTime<Utc>,
            ) {
                match self {
                    $(EventType::$name => <$name as FactType>::upcast_data(version, data, at),)*
                }
            }

            /// Rebuilds an event of this type from its row, written in
            /// `version` at `at` (the store's decoding runs it).
            pub fn read_row(
                self,
                version: fact::Version,
                at: DateTime<Utc>,
                c: &row::Columns<'_>,
                mut rest: row::Rest,
            ) -> Result<Event, String> {
                match self {
                    $(EventType::$name => {
                        <$name as FactType>::upcast_row(version, &mut rest, at);
                        <$name as FactType>::read_row(c, rest).map(Event::$name)
                    })*
                }
                .map_err(|e| format!("{self} {e}"))
            }
        }

        impl Event {
            /// The event's type.
            pub fn event_type(&self) -> EventType {
                match self {
                    $(Event::$name(_) => EventType::$name,)*
                }
            }

            /// The event's own answers (its module's `Fact`).
            pub fn fact(&self) -> &dyn Fact {
                match self {
                    $(Event::$name(e) => e,)*
                }
            }
        }
    };
}

// The registry: every event and its module. The order is the order of the
// `event_types` table and of `EventType::ALL`.
events! {
    StockReceived in stock_received,
    StockAdjusted in stock_adjusted,
    StockTransferred in stock_transferred,
    StockCounted in stock_counted,
    OrderLimitSet in order_limit_set,
    ReorderPointSet in reorder_point_set,
    StockLow in stock_low,
    StockRecovered in stock_recovered,
    ReceiptExpected in receipt_expected,
    ExpectedReceiptChanged in expected_receipt_changed,
    ExpectedReceiptDelivered in expected_receipt_delivered,
    ExpectedReceiptCancelled in expected_receipt_cancelled,
    ReservationCreated in reservation_created,
    ReservationConfirmed in reservation_confirmed,
    ReservationReleased in reservation_released,
    ReservationExpired in reservation_expired,
    ReservationLinesConfirmed in reservation_lines_confirmed,
    ReservationLinesReleased in reservation_lines_released,
    ReservationExtended in reservation_extended,
    BackorderPlaced in backorder_placed,
    BackorderFilled in backorder_filled,
    BackorderDropped in backorder_dropped,
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
    /// The reason `as_str` wrote.
    pub fn parse(text: &str) -> Option<DropReason> {
        [
            DropReason::Released,
            DropReason::Expired,
            DropReason::Unfillable,
        ]
        .into_iter()
        .find(|r| r.as_str() == text)
    }

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
        $crate::domain::event::Event::StockReceived(_)
            | $crate::domain::event::Event::StockAdjusted(
                $crate::domain::event::StockAdjusted { .. },
            )
            | $crate::domain::event::Event::StockTransferred(
                $crate::domain::event::StockTransferred { .. },
            )
            | $crate::domain::event::Event::StockCounted(_)
            | $crate::domain::event::Event::OrderLimitSet(
                $crate::domain::event::OrderLimitSet { .. },
            )
            | $crate::domain::event::Event::ReorderPointSet(
                $crate::domain::event::ReorderPointSet { .. },
            )
            | $crate::domain::event::Event::StockLow(_)
            | $crate::domain::event::Event::StockRecovered(
                $crate::domain::event::StockRecovered { .. },
            )
    };
}
pub(crate) use single_record_events;

/// The events of expected receipts' streams, as one pattern.
macro_rules! expected_receipt_events {
    () => {
        $crate::domain::event::Event::ReceiptExpected(_)
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
    /// The order a reservation event is about; `None` for stock events and
    /// a tombstone.
    pub fn order_id(&self) -> Option<&OrderId> {
        self.fact().order_id()
    }

    /// What a reader filters an event by after its type (the relay's
    /// subject ends with it): the SKU a stock event moves, else the id of
    /// its stream (a reservation's id).
    pub fn key<'a>(&'a self, stream: &'a StreamId) -> &'a str {
        self.fact().sku_key().unwrap_or(stream.id())
    }

    /// The `type` column: the serde tag, which is the variant's name.
    pub fn type_name(&self) -> &'static str {
        self.event_type().as_str()
    }

    /// The event's fields without its type tag, as the API and the CLI show
    /// them. The log row lays them out differently (`row.rs`).
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

    /// How this event moves stock: calls `f` with each item and its change.
    /// This is the one definition of an event's stock effect (each event's
    /// `Fact::effects`); everything that folds events into figures goes
    /// through it. It allocates nothing for reservation events, which makes
    /// it the hot loop of the audit.
    pub fn for_each_effect(&self, mut f: impl FnMut(&Item, StockDelta)) {
        self.fact().effects(&mut f);
    }

    /// What the event sets on its item, if it sets anything (a per-order
    /// limit, a reorder point, what an alert said): the last such event of
    /// an item is what holds. The command path, the store's item row and
    /// the audit read it here.
    pub fn setting(&self) -> Option<(Item, Setting)> {
        self.fact().setting()
    }

    /// What an alert event says about its item; `None` for every other event.
    pub fn alert(&self) -> Option<Alert> {
        self.fact().alert()
    }

    /// The stock effects as a list (see `for_each_effect`).
    pub fn stock_effects(&self) -> Vec<(Item, StockDelta)> {
        let mut effects = Vec::new();
        self.for_each_effect(|item, d| effects.push((item.clone(), d)));
        effects
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.fact().summary())
    }
}

/// What an alert says, whichever of the two it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    pub item: Item,
    /// Low (`StockLow`), or no longer low (`StockRecovered`).
    pub low: bool,
    pub available: i64,
    pub reorder_point: Option<u32>,
}

/// An item, from its parts.
fn item_of(sku: &Sku, location: &Location) -> Item {
    Item {
        sku: sku.clone(),
        location: location.clone(),
    }
}

/// The lines of an event for a person: `2 × hat@main, 1 × cap@main`.
fn lines_text(lines: &[Line]) -> String {
    lines
        .iter()
        .map(|l| format!("{} × {}@{}", l.quantity, l.item.sku, l.item.location))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Calls `f` with a change of on-hand stock of `sku` at `location` by `by`.
fn on_hand_by(f: &mut dyn FnMut(&Item, StockDelta), sku: &Sku, location: &Location, by: i64) {
    let item = item_of(sku, location);
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
    pub version: fact::Version,
    pub metadata: EventMetadata,
    pub recorded_at: DateTime<Utc>,
    /// The writing transaction; with `position`, the safe-reading cursor.
    pub tx_id: i64,
}

// What an event type is, read from its row (`FactType::ROW`), and what a
// stream kind allows: above the rows (`event_type.rs`), which know no type.
impl EventType {
    /// The stream kind whose streams hold events of this type.
    pub fn stream_kind(self) -> StreamKind {
        self.row().stream
    }

    /// Where in its stream an event of this type may stand.
    pub fn places(self) -> Places {
        self.row().places
    }

    /// Whether an event of this type is the last of its stream: nothing may
    /// follow it. Every event of a single-event stream closes it; of a
    /// reservation, the events that settle it (a tombstone is a release).
    pub fn closes(self) -> bool {
        self.row().closes
    }

    /// What an event of this type does to a reservation's units.
    pub fn reservation_move(self) -> ReservationMove {
        self.row().reservation
    }

    /// How each item line of a stored row of this type moves an item's
    /// figures: the sign each figure moves by, times the line's quantity as
    /// `store::log_row::encode` stores it. The SQL folds read it from the
    /// `event_types` table; a test holds it to `Event::for_each_effect`.
    pub fn line_effect(self) -> StockDelta {
        let (on_hand, reserved, confirmed, backordered) = self.row().line;
        StockDelta {
            on_hand,
            reserved,
            confirmed,
            backordered,
        }
    }

    /// What an event of this type says of its item's stock: low
    /// (`Some(true)`), no longer low (`Some(false)`), or nothing. The
    /// `low_stock` read model's SQL reads it from `event_types`.
    pub fn low_stock(self) -> Option<bool> {
        self.row().low
    }

    /// Whether an event of this type says what an expected receipt still
    /// brings (every event of an expected receipt's stream states it as it
    /// stands after it). The `incoming` read model's SQL reads it from
    /// `event_types`.
    pub fn incoming(self) -> bool {
        self.stream_kind() == StreamKind::Expected
    }

    /// Whether an event of this type changes its item's backlog (what
    /// waits for it, what is expected of it): the store writes the
    /// backlogs of those items (`domain::backorder::apply` folds them).
    pub fn moves_backlog(self) -> bool {
        self.incoming() || self.line_effect().backordered != 0
    }

    /// Whether an event of this type moves a reservation's hold and nothing
    /// else: a reservation's event that moves no units and no stock (an
    /// extension). The read models' batches move a row's expiry by it.
    pub fn moves_hold(self) -> bool {
        self.stream_kind() == StreamKind::Reservation
            && self.reservation_move() == ReservationMove::Nothing
            && self.line_effect() == StockDelta::default()
    }

    /// The type that opens a stream of `kind`: the one whose only place is
    /// the first. `None` if no type or more than one does.
    pub fn opening(kind: StreamKind) -> Option<EventType> {
        let mut first = EventType::ALL
            .iter()
            .copied()
            .filter(|t| t.stream_kind() == kind && t.places() == Places::First);
        first.next().filter(|_| first.next().is_none())
    }

    /// The type that settles a whole reservation as `to`: confirmed,
    /// released or expired.
    pub fn settling(to: ReservationState) -> Option<EventType> {
        EventType::ALL
            .iter()
            .copied()
            .find(|t| t.reservation_move() == ReservationMove::Moves { to, settles: true })
    }

    /// The event type stored as `name`, if there is one.
    pub fn parse(name: &str) -> Option<EventType> {
        EventType::ALL.iter().copied().find(|t| t.as_str() == name)
    }
}

/// What a stream kind allows, read from the types' rows: here, above the
/// stream kinds, so that `stream.rs` knows nothing of event types.
impl StreamKind {
    /// Whether an event of type `event` is the last of its stream (its row
    /// in `event_type.rs` says).
    pub fn closes(event: EventType) -> bool {
        event.closes()
    }

    /// Whether an event of type `event` may stand at `seq` in a stream of this
    /// kind. This is the coarse rule (the audit and the history queries use
    /// it); the reservation fold adds what depends on the event before.
    pub fn allows(self, seq: u32, event: EventType) -> bool {
        let last = self.last_seq();
        let places = match event.places() {
            Places::First => 1..=1,
            Places::Anywhere => 1..=last,
            Places::Later => 2..=last,
            Places::Between => 2..=last.saturating_sub(1),
        };
        event.stream_kind() == self && places.contains(&seq)
    }

    /// The event types that may appear in a stream of this kind.
    pub fn event_types(self) -> impl Iterator<Item = EventType> {
        EventType::ALL
            .iter()
            .copied()
            .filter(move |t| (1..=self.last_seq()).any(|seq| self.allows(seq, *t)))
    }

    /// The stream kind whose streams hold events of `event`.
    pub fn of_event(event: EventType) -> StreamKind {
        event.stream_kind()
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
