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

use crate::domain::event::{Event, EventType, RecordedEvent};

pub use crate::domain::event::fact::{Change, Version};
pub use crate::domain::event::hold_of_version_1;

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

/// Reading an event written in an older shape, here beside the shapes (an
/// inherent impl of the event's, kept above it so `event` needs no shape).
impl Event {
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
        let version = check(kind, version).map_err(|e| e.to_string())?;
        let serde_json::Value::Object(mut fields) = data else {
            return Err(format!("{type_name}: its data is not an object"));
        };
        kind.upcast_data(version, &mut fields, recorded_at);
        Event::from_parts(type_name, fields.into()).map_err(|e| format!("{type_name}: {e}"))
    }
}

impl RecordedEvent {
    /// The event's data as it was written (`shape::written_data`).
    pub fn written_data(&self) -> serde_json::Value {
        written_data(&self.event, self.version)
    }
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
