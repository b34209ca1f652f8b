//! Event types: what each kind of fact in the log is, apart from its data.
//! One row per type says which kind of stream holds it, at which places,
//! whether it closes its stream, what it does to a reservation's units, and
//! how each item line of its stored row moves stock. Everything that asks
//! these questions (the stream rules, the fold, the audit, the store's
//! `event_types` table that the SQL folds join) reads them from here.

use crate::domain::event::StockDelta;
use crate::domain::reservation::ReservationState;
use crate::domain::stream::StreamKind;

/// Where in its stream an event may stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Places {
    /// Only at seq 1: the stream's first event.
    First,
    /// Anywhere: a release at seq 1 is a tombstone (it overtook its reserve).
    Anywhere,
    /// After the first event, up to the last place.
    Later,
    /// After the first event and before the last place, which stays free
    /// for the event that settles the stream.
    Between,
}

/// What an event does to a reservation's units, as the reservation totals
/// count them (`reservation_totals`, in SQL and in Rust).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReservationMove {
    /// Makes a reservation: its units are held.
    Opens,
    /// Adds units to an open reservation's (its waiting ones: they count
    /// as held in the totals, being the order's, until they are dropped).
    Adds,
    /// Moves units out of the held ones, to `to`; `settles` when the whole
    /// reservation goes there (its last event).
    Moves { to: ReservationState, settles: bool },
    /// Moves no units (not a reservation event, or an extension).
    Nothing,
}

/// One row of the table below.
struct Row {
    stream: StreamKind,
    places: Places,
    closes: bool,
    reservation: ReservationMove,
    /// The sign each figure (on hand, reserved, confirmed, backordered)
    /// moves by, times a stored line's quantity.
    line: (i64, i64, i64, i64),
    /// What the event says of its item's stock: low (`Some(true)`), no
    /// longer low (`Some(false)`), or nothing.
    low: Option<bool>,
}

/// Declares `EventType` from the table, with the list of every type and each
/// type's row, so a new type does not compile until it has its row.
macro_rules! event_types {
    ($($name:ident => $stream:ident, $places:ident, $closes:expr, $reservation:expr, $line:expr, $low:expr;)*) => {
        /// The type of an event, without its data: the `type` column of the log.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventType {
            $($name),*
        }

        impl EventType {
            /// Every event type.
            pub const ALL: &'static [EventType] = &[$(EventType::$name),*];

            /// As the log stores it (the serde tag of `Event`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventType::$name => stringify!($name)),*
                }
            }

            fn row(self) -> Row {
                match self {
                    $(EventType::$name => Row {
                        stream: StreamKind::$stream,
                        places: Places::$places,
                        closes: $closes,
                        reservation: $reservation,
                        line: $line,
                        low: $low,
                    }),*
                }
            }
        }
    };
}

// Shorthands for the table's reservation column.
const NOTHING: ReservationMove = ReservationMove::Nothing;
const OPENS: ReservationMove = ReservationMove::Opens;
const ADDS: ReservationMove = ReservationMove::Adds;
const fn settles(to: ReservationState) -> ReservationMove {
    ReservationMove::Moves { to, settles: true }
}
const fn part(to: ReservationState) -> ReservationMove {
    ReservationMove::Moves { to, settles: false }
}
use ReservationState::{Confirmed, Expired, Released};
/// Dropped waiting units leave the order without being held: in the
/// totals, they move out of RESERVED to RELEASED, and settle nothing.
const fn dropped() -> ReservationMove {
    part(Released)
}
// Shorthands for the table's low-stock column.
const LOW: Option<bool> = Some(true);
const RECOVERED: Option<bool> = Some(false);
const SAYS_NOTHING: Option<bool> = None;

// Line effect: the sign (on hand, reserved, confirmed, backordered) move by,
// times a stored line's quantity. Stock events' lines are signed: a
// transfer's source line is negative, a count's line is the change from the
// books. Dropped backorders count as released units in the reservation
// totals, whatever dropped them: they were never held, so none expired.
event_types! {
//  type                         stream        places    closes  reservation          line effect       low stock
    StockReceived             => Receipt,      First,    true,   NOTHING,             (1, 0, 0, 0),     SAYS_NOTHING;
    StockAdjusted             => Adjustment,   First,    true,   NOTHING,             (1, 0, 0, 0),     SAYS_NOTHING;
    StockTransferred          => Transfer,     First,    true,   NOTHING,             (1, 0, 0, 0),     SAYS_NOTHING;
    StockCounted              => Count,        First,    true,   NOTHING,             (1, 0, 0, 0),     SAYS_NOTHING;
    OrderLimitSet             => Limit,        First,    true,   NOTHING,             (0, 0, 0, 0),     SAYS_NOTHING;
    ReorderPointSet           => ReorderPoint, First,    true,   NOTHING,             (0, 0, 0, 0),     SAYS_NOTHING;
    StockLow                  => Alert,        First,    true,   NOTHING,             (0, 0, 0, 0),     LOW;
    StockRecovered            => Alert,        First,    true,   NOTHING,             (0, 0, 0, 0),     RECOVERED;
    ReceiptExpected           => Expected,     First,    false,  NOTHING,             (0, 0, 0, 0),     SAYS_NOTHING;
    ExpectedReceiptChanged    => Expected,     Between,  false,  NOTHING,             (0, 0, 0, 0),     SAYS_NOTHING;
    ExpectedReceiptDelivered  => Expected,     Between,  false,  NOTHING,             (0, 0, 0, 0),     SAYS_NOTHING;
    ExpectedReceiptCancelled  => Expected,     Later,    true,   NOTHING,             (0, 0, 0, 0),     SAYS_NOTHING;
    ReservationCreated        => Reservation,  First,    false,  OPENS,               (0, 1, 0, 0),     SAYS_NOTHING;
    ReservationConfirmed      => Reservation,  Later,    true,   settles(Confirmed),  (-1, -1, 1, 0),   SAYS_NOTHING;
    ReservationReleased       => Reservation,  Anywhere, true,   settles(Released),   (0, -1, 0, 0),    SAYS_NOTHING;
    ReservationExpired        => Reservation,  Later,    true,   settles(Expired),    (0, -1, 0, 0),    SAYS_NOTHING;
    ReservationLinesConfirmed => Reservation,  Between,  false,  part(Confirmed),     (-1, -1, 1, 0),   SAYS_NOTHING;
    ReservationLinesReleased  => Reservation,  Between,  false,  part(Released),      (0, -1, 0, 0),    SAYS_NOTHING;
    ReservationExtended       => Reservation,  Between,  false,  NOTHING,             (0, 0, 0, 0),     SAYS_NOTHING;
    BackorderPlaced           => Reservation,  Between,  false,  ADDS,                (0, 0, 0, 1),     SAYS_NOTHING;
    BackorderFilled           => Reservation,  Between,  false,  NOTHING,             (0, 1, 0, -1),    SAYS_NOTHING;
    BackorderDropped          => Reservation,  Between,  false,  dropped(),           (0, 0, 0, -1),    SAYS_NOTHING;
}

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

    /// The event type stored as `name`, if there is one.
    pub fn parse(name: &str) -> Option<EventType> {
        EventType::ALL.iter().copied().find(|t| t.as_str() == name)
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

    /// The columns of one row must tell one story: what settles a
    /// reservation closes its stream and moves its lines out of `reserved`;
    /// what opens one holds its lines; a stream's first event of a
    /// single-event stream is also its last.
    #[test]
    fn every_row_is_consistent_with_itself() {
        for t in EventType::ALL.iter().copied() {
            // What the totals count as the order's: held or waiting.
            let effect = t.line_effect();
            let ordered = effect.reserved + effect.backordered;
            match t.reservation_move() {
                ReservationMove::Opens => {
                    assert!(!t.closes() && t.places() == Places::First, "{t}");
                    assert_eq!(ordered, 1, "{t}");
                }
                ReservationMove::Adds => {
                    assert!(!t.closes() && t.places() == Places::Between, "{t}");
                    assert_eq!(ordered, 1, "{t}");
                }
                ReservationMove::Moves { settles, .. } => {
                    assert_eq!(t.closes(), settles, "{t}");
                    assert_eq!(ordered, -1, "{t}");
                }
                ReservationMove::Nothing => assert_eq!(ordered, 0, "{t}"),
            }
            if t.stream_kind().last_seq() == 1 {
                assert!(t.closes() && t.places() == Places::First, "{t}");
            }
            if t.stream_kind() != StreamKind::Reservation {
                assert_eq!(t.reservation_move(), ReservationMove::Nothing, "{t}");
            }
        }
    }
}
