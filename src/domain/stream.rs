//! Streams: the kinds of stream in the log, their names, and which event may
//! stand at which sequence number of each. This is the one place a stream
//! name is spelled; everything else parses and prints `StreamId`, and SQL that
//! needs a prefix is handed it as a bound parameter.

use std::fmt;

use crate::domain::ids::{
    AdjustmentId, AlertId, CountId, ExpectedId, LimitId, ReceiptId, ReorderPointId, ReservationId,
    TransferId,
};
use crate::domain::Rejection;
use crate::limits::{MAX_EXPECTED_EVENTS, MAX_RESERVATION_EVENTS};

/// Declares `StreamKind` and its list of every kind together, so the list
/// cannot miss one.
macro_rules! stream_kinds {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// What a stream records. Each kind has its own prefix and its own rules.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum StreamKind {
            $($(#[$doc])* $name),*
        }

        impl StreamKind {
            /// Every kind, for parsing and for tests that must cover them all.
            pub const ALL: &'static [StreamKind] = &[$(StreamKind::$name),*];
        }
    };
}

stream_kinds!(
    /// One delivery of stock: exactly one event.
    Receipt,
    /// One correction: exactly one event.
    Adjustment,
    /// One move between locations: exactly one event.
    Transfer,
    /// One stock count of one item: exactly one event.
    Count,
    /// One change of an item's per-order limit: exactly one event.
    Limit,
    /// One change of an item's reorder point: exactly one event.
    ReorderPoint,
    /// One low-stock alert, written by the ledger beside the command whose
    /// events made an item's available stock cross its reorder point:
    /// exactly one event, low or recovered.
    Alert,
    /// One expected receipt (stock of one item due on a date): recorded at
    /// seq 1, then changes and deliveries against it, then, if ever, the
    /// cancellation that withdraws what is still expected.
    Expected,
    /// One order's hold on stock: created (or tombstoned) at seq 1, then
    /// partial steps and extensions, then the one event that settles it.
    Reservation,
);

impl StreamKind {
    /// The prefix of the stream name, with its colon. Spelled only here.
    pub fn prefix(self) -> &'static str {
        match self {
            StreamKind::Receipt => "receipt:",
            StreamKind::Adjustment => "adjustment:",
            StreamKind::Transfer => "transfer:",
            StreamKind::Count => "count:",
            StreamKind::Limit => "limit:",
            StreamKind::ReorderPoint => "reorder-point:",
            StreamKind::Alert => "alert:",
            StreamKind::Expected => "expected:",
            StreamKind::Reservation => "reservation:",
        }
    }

    /// The last sequence number a stream of this kind can reach.
    pub fn last_seq(self) -> u32 {
        match self {
            StreamKind::Receipt
            | StreamKind::Adjustment
            | StreamKind::Transfer
            | StreamKind::Count
            | StreamKind::Limit
            | StreamKind::ReorderPoint
            | StreamKind::Alert => 1,
            StreamKind::Expected => MAX_EXPECTED_EVENTS,
            StreamKind::Reservation => MAX_RESERVATION_EVENTS,
        }
    }
}

/// A stream of the log, by kind and id. Prints as the stream name (`receipt:r1`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamId {
    Receipt(ReceiptId),
    Adjustment(AdjustmentId),
    Transfer(TransferId),
    Count(CountId),
    Limit(LimitId),
    ReorderPoint(ReorderPointId),
    Alert(AlertId),
    Expected(ExpectedId),
    Reservation(ReservationId),
}

impl StreamId {
    pub fn kind(&self) -> StreamKind {
        match self {
            StreamId::Receipt(_) => StreamKind::Receipt,
            StreamId::Adjustment(_) => StreamKind::Adjustment,
            StreamId::Transfer(_) => StreamKind::Transfer,
            StreamId::Count(_) => StreamKind::Count,
            StreamId::Limit(_) => StreamKind::Limit,
            StreamId::ReorderPoint(_) => StreamKind::ReorderPoint,
            StreamId::Alert(_) => StreamKind::Alert,
            StreamId::Expected(_) => StreamKind::Expected,
            StreamId::Reservation(_) => StreamKind::Reservation,
        }
    }

    /// The id after the prefix.
    pub fn id(&self) -> &str {
        match self {
            StreamId::Receipt(id) => id.as_str(),
            StreamId::Adjustment(id) => id.as_str(),
            StreamId::Transfer(id) => id.as_str(),
            StreamId::Count(id) => id.as_str(),
            StreamId::Limit(id) => id.as_str(),
            StreamId::ReorderPoint(id) => id.as_str(),
            StreamId::Alert(id) => id.as_str(),
            StreamId::Expected(id) => id.as_str(),
            StreamId::Reservation(id) => id.as_str(),
        }
    }

    pub fn reservation_id(&self) -> Option<&ReservationId> {
        match self {
            StreamId::Reservation(id) => Some(id),
            StreamId::Receipt(_)
            | StreamId::Adjustment(_)
            | StreamId::Transfer(_)
            | StreamId::Count(_)
            | StreamId::Limit(_)
            | StreamId::ReorderPoint(_)
            | StreamId::Alert(_)
            | StreamId::Expected(_) => None,
        }
    }

    /// Parses a stream name as the log stores it. The rejection names `field`.
    pub fn parse(field: &str, name: &str) -> Result<StreamId, Rejection> {
        for &kind in StreamKind::ALL {
            if let Some(id) = name.strip_prefix(kind.prefix()) {
                return Ok(match kind {
                    StreamKind::Receipt => StreamId::Receipt(ReceiptId::parse(field, id)?),
                    StreamKind::Adjustment => StreamId::Adjustment(AdjustmentId::parse(field, id)?),
                    StreamKind::Transfer => StreamId::Transfer(TransferId::parse(field, id)?),
                    StreamKind::Count => StreamId::Count(CountId::parse(field, id)?),
                    StreamKind::Limit => StreamId::Limit(LimitId::parse(field, id)?),
                    StreamKind::ReorderPoint => {
                        StreamId::ReorderPoint(ReorderPointId::parse(field, id)?)
                    }
                    StreamKind::Alert => StreamId::Alert(AlertId::parse(field, id)?),
                    StreamKind::Expected => StreamId::Expected(ExpectedId::parse(field, id)?),
                    StreamKind::Reservation => {
                        StreamId::Reservation(ReservationId::parse(field, id)?)
                    }
                });
            }
        }
        Err(Rejection::invalid(
            field,
            format!("must start with one of {}", prefixes()),
        ))
    }
}

/// The prefixes of every kind, for messages.
pub fn prefixes() -> String {
    StreamKind::ALL
        .iter()
        .map(|k| k.prefix())
        .collect::<Vec<_>>()
        .join(", ")
}

impl serde::Serialize for StreamId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.kind().prefix(), self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in ["receipt:r1", "adjustment:a:1", "reservation:res-1"] {
            let id = StreamId::parse("stream", name).unwrap();
            assert_eq!(id.to_string(), name);
        }
        assert_eq!(
            StreamId::parse("stream", "reservation:res-1")
                .unwrap()
                .reservation_id()
                .unwrap()
                .as_str(),
            "res-1"
        );
    }

    #[test]
    fn unknown_or_bad_names_are_refused() {
        for name in [
            "",
            "order:1",
            "receipt:",
            "reservation:has space",
            "Receipt:r1",
        ] {
            assert!(StreamId::parse("stream", name).is_err(), "{name:?}");
        }
    }
}
