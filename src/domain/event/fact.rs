//! What every event says of itself. Each event's module implements these two
//! traits, and the registry (`event/mod.rs`) dispatches to them: nothing
//! outside an event's own module needs an arm per event to know how it moves
//! stock, what it sets, how it reads to a person or how its row is laid out.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::domain::event::row::{Columns, Rest, RowWriter};
use crate::domain::event::{Alert, StockDelta};
use crate::domain::event_type::TypeRow;
use crate::domain::ids::{Item, OrderId};
use crate::domain::settings::Setting;

/// An event's own answers, about one event (the object-safe half).
pub trait Fact {
    /// How the event moves stock: `f` with each item and its change. This is
    /// the one definition of an event's stock effect; everything that folds
    /// events into figures goes through it.
    fn effects(&self, f: &mut dyn FnMut(&Item, StockDelta));

    /// What a reader filters the event by after its type (the relay's
    /// subject ends with it): the SKU a stock event moves, or `None` for an
    /// event known by its stream's id (a reservation's).
    fn sku_key(&self) -> Option<&str>;

    /// The order a reservation's event is about; `None` for stock events and
    /// a tombstone.
    fn order_id(&self) -> Option<&OrderId>;

    /// What the event sets on its item, if anything (a per-order limit, a
    /// reorder point, what an alert said): the last such event holds.
    fn setting(&self) -> Option<(Item, Setting)> {
        None
    }

    /// What the event says as a low-stock alert, if it is one.
    fn alert(&self) -> Option<Alert> {
        None
    }

    /// One line for a person: what the event did.
    fn summary(&self) -> String;

    /// Lays the event out in its log row: its typed columns and `data`.
    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>);

    /// The fingerprint the event's row keeps in `data` instead of in
    /// `metadata`, written in `version` (a reservation's request hash).
    fn fingerprint_in_data(&self, _version: Version) -> Option<&str> {
        None
    }
}

/// An event type's answers, about every event of the type.
pub trait FactType: Fact + Sized {
    /// The type's row: its stream, its places, what it does to a
    /// reservation, how each stored line moves stock (`event_type.rs`).
    const ROW: TypeRow;

    /// Every change of the type's shape, oldest first (`shape.rs`): rows are
    /// only ever added, and each has its upcast below.
    const CHANGES: &'static [Change] = &[];

    /// Rebuilds the event from its row (the inverse of `write_row`), the
    /// row already brought to the current shape; says what is wrong with a
    /// row that holds none.
    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String>;

    /// Brings an event's JSON data written in `version` up to the current
    /// shape: each field a later version added, derived.
    fn upcast_data(_version: Version, _data: &mut Map<String, Value>, _at: DateTime<Utc>) {}

    /// `upcast_data`'s counterpart for the row's `data` column.
    fn upcast_row(_version: Version, _rest: &mut Rest, _at: DateTime<Utc>) {}
}

/// Versions of a shape: the first is 1.
pub type Version = u16;

/// One change of an event type's shape: from `version` on, its data has the
/// field `adds`, which events of earlier versions do not hold and read as
/// the type's upcast derives it (`FactType::upcast_data`, `upcast_row`).
/// Each event's module lists its own (`FactType::CHANGES`).
#[derive(Clone, Copy, Debug)]
pub struct Change {
    pub version: Version,
    pub adds: &'static str,
    /// Why the shape changed, for `docs/events.md` and the reader of the log.
    pub why: &'static str,
}
