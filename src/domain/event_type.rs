//! Event types: what each kind of fact in the log is, apart from its data.
//! One row per type says which kind of stream holds it, at which places,
//! whether it closes its stream, what it does to a reservation's units, and
//! how each item line of its stored row moves stock. Everything that asks
//! these questions (the stream rules, the fold, the audit, the store's
//! `event_types` table that the SQL folds join) reads them from here.

use crate::domain::stream::StreamKind;
use serde::{Deserialize, Serialize};

/// Where a reservation's units stand: held, or where they went. The
/// state of a whole reservation is the one its settling event moved it to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ReservationState {
    Reserved,
    Confirmed,
    Released,
    Expired,
}

impl ReservationState {
    /// Every state, in the order a reservation may reach them.
    pub const ALL: [ReservationState; 4] = [
        ReservationState::Reserved,
        ReservationState::Confirmed,
        ReservationState::Released,
        ReservationState::Expired,
    ];

    /// The state as the API and the log write it (its serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            ReservationState::Reserved => "RESERVED",
            ReservationState::Confirmed => "CONFIRMED",
            ReservationState::Released => "RELEASED",
            ReservationState::Expired => "EXPIRED",
        }
    }
}

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

/// What an event type is, apart from its data: each event's module declares
/// its own (`FactType::ROW`), with the shorthands below.
#[derive(Clone, Copy, Debug)]
pub struct TypeRow {
    pub stream: StreamKind,
    pub places: Places,
    pub closes: bool,
    pub reservation: ReservationMove,
    /// The sign each figure (on hand, reserved, confirmed, backordered)
    /// moves by, times a stored line's quantity. Stock events' lines are
    /// signed: a transfer's source line is negative, a count's line is the
    /// change from the books.
    pub line: (i64, i64, i64, i64),
    /// What the event says of its item's stock: low (`Some(true)`), no
    /// longer low (`Some(false)`), or nothing.
    pub low: Option<bool>,
}

impl TypeRow {
    /// The row of an event type of a single-event stream of `stream` kind:
    /// first and last, moving no reservation, saying nothing of low stock.
    pub const fn single(stream: StreamKind, line: (i64, i64, i64, i64)) -> TypeRow {
        TypeRow {
            stream,
            places: Places::First,
            closes: true,
            reservation: NOTHING,
            line,
            low: SAYS_NOTHING,
        }
    }

    /// The row of a reservation's event at `places`.
    pub const fn reservation(
        places: Places,
        closes: bool,
        reservation: ReservationMove,
        line: (i64, i64, i64, i64),
    ) -> TypeRow {
        TypeRow {
            stream: StreamKind::Reservation,
            places,
            closes,
            reservation,
            line,
            low: SAYS_NOTHING,
        }
    }
}

// Shorthands for the reservation column.
pub const NOTHING: ReservationMove = ReservationMove::Nothing;
pub const OPENS: ReservationMove = ReservationMove::Opens;
pub const ADDS: ReservationMove = ReservationMove::Adds;
/// Moves the whole reservation's held units to `to`: its last event.
pub const fn settles(to: ReservationState) -> ReservationMove {
    ReservationMove::Moves { to, settles: true }
}
/// Moves some of its held units to `to`.
pub const fn part(to: ReservationState) -> ReservationMove {
    ReservationMove::Moves { to, settles: false }
}
/// No line moves stock: settings, alerts, expected receipts, extensions.
pub const MOVES_NOTHING: (i64, i64, i64, i64) = (0, 0, 0, 0);
// Shorthands for the low-stock column.
pub const SAYS_NOTHING: Option<bool> = None;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::EventType;

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

    #[test]
    fn each_stream_kind_but_alerts_opens_with_one_type_and_each_end_has_one() {
        for kind in [
            StreamKind::Receipt,
            StreamKind::Reservation,
            StreamKind::Expected,
            StreamKind::Transfer,
        ] {
            let t = EventType::opening(kind).expect("one opening type");
            assert_eq!((t.stream_kind(), t.places()), (kind, Places::First));
        }
        // An alert's stream opens with a low or a recovered.
        assert_eq!(EventType::opening(StreamKind::Alert), None);
        for to in [
            ReservationState::Confirmed,
            ReservationState::Released,
            ReservationState::Expired,
        ] {
            let t = EventType::settling(to).expect("one settling type");
            assert!(t.closes(), "{t}");
        }
        assert_eq!(EventType::settling(ReservationState::Reserved), None);
    }

    #[test]
    fn every_event_type_belongs_to_exactly_the_kind_that_allows_it() {
        for &t in EventType::ALL {
            let kinds: Vec<StreamKind> = StreamKind::ALL
                .iter()
                .copied()
                .filter(|k| k.event_types().any(|e| e == t))
                .collect();
            assert_eq!(kinds, vec![StreamKind::of_event(t)], "{t:?}");
        }
    }

    #[test]
    fn nothing_stands_past_the_last_seq() {
        for &kind in StreamKind::ALL {
            for &t in EventType::ALL {
                assert!(!kind.allows(0, t));
                assert!(!kind.allows(kind.last_seq() + 1, t));
            }
        }
    }
}
