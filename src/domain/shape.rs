//! The shapes events are written in. Each stored event says the version of
//! its type's shape it was written in; the log never changes, so an event
//! written in an older shape stays in it, and reading it brings it up to the
//! current shape here (an upcast). Everything in Rust that decodes an event,
//! the log row (`store::log_row`) and an event's JSON (`Event::from_written`),
//! goes through this module (the SQL folds read columns: docs/events.md), and so does everything that shows or hashes an event
//! as it was written (`written_data`): a seal's leaf covers the event as it
//! was written, not as it reads today.
//!
//! How to change an event's shape is `docs/events.md`: a row in `CHANGES`,
//! its upcast below, and a fixture log of the older version kept in the tests.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::domain::event::{Event, EventType};

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

/// The version `event` is written in now.
pub fn current(event: EventType) -> Version {
    event.changes().iter().map(|c| c.version).max().unwrap_or(1)
}

/// Why an event's version cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("{event} version {version} does not exist (versions start at 1)")]
    NoSuchVersion { event: &'static str, version: i64 },
    #[error(
        "{event} version {version} was written by a newer release (this one reads up to \
         version {current}): run that release"
    )]
    Newer {
        event: &'static str,
        version: i64,
        current: Version,
    },
}

/// `version` as stored, checked against what this release can read.
pub fn check(event: EventType, version: i64) -> Result<Version, ShapeError> {
    let current = current(event);
    if version > i64::from(current) {
        return Err(ShapeError::Newer {
            event: event.as_str(),
            version,
            current,
        });
    }
    Version::try_from(version)
        .ok()
        .filter(|v| *v >= 1)
        .ok_or(ShapeError::NoSuchVersion {
            event: event.as_str(),
            version,
        })
}

/// A reservation before version 2 of its shape: the hold's length, which it did not
/// say, is its expiry less the moment it was recorded. The store records a
/// reservation at the very moment its expiry was counted from (schema 0012),
/// so this is the TTL the order was given, in whole seconds; a log written by
/// hand with an expiry before its recording reads as a hold of 0.
pub fn hold_of_version_1(expires_at: DateTime<Utc>, recorded_at: DateTime<Utc>) -> u32 {
    let micros = (expires_at - recorded_at).num_microseconds().unwrap_or(0);
    let seconds = (micros.max(0) + 500_000) / 1_000_000;
    u32::try_from(seconds).unwrap_or(u32::MAX)
}

/// `event`'s data as it was written in `version`: its current data without
/// the fields later versions added. What the API serves and a seal's leaf
/// covers, so that an event hashes the same for ever.
pub fn written_data(event: &Event, version: Version) -> Value {
    let mut data = event.data();
    if let Value::Object(fields) = &mut data {
        remove_later_fields(event.event_type(), version, fields);
    }
    data
}

/// Takes out of `fields` (an event's data, or its row's `data`) every field
/// a version of `event`'s shape after `version` added: the written form of
/// an older version, for the API and for a row alike (`log_row::encode_in`).
pub fn remove_later_fields(event: EventType, version: Version, fields: &mut Map<String, Value>) {
    for change in event.changes().iter().filter(|c| c.version > version) {
        fields.remove(change.adds);
    }
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
