//! A reservation's state, folded from its stream. The fold is strict: a stream
//! that breaks the rules (a gap in sequence numbers, a transition the outcome
//! table does not allow, seq-2 amounts that differ from seq 1) is reported, not
//! guessed at. The command path and the audit share it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::command::Line;
use crate::domain::event::Event;
use crate::domain::ids::{OrderId, ReservationId};
use crate::domain::stream::StreamKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ReservationState {
    Reserved,
    Confirmed,
    Released,
    Expired,
}

impl ReservationState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReservationState::Reserved => "RESERVED",
            ReservationState::Confirmed => "CONFIRMED",
            ReservationState::Released => "RELEASED",
            ReservationState::Expired => "EXPIRED",
        }
    }
}

/// A reservation stream, folded. A tombstone is its own variant: it has no
/// order, no lines and no expiry, and the compiler makes every reader say what
/// it does with one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// A release that arrived before its reserve (seq 1 of the stream): a late
    /// reserve of the same id is refused instead of holding stock for a dead order.
    Tombstone(Tombstone),
    /// A reservation made by a reserve, open or settled.
    Placed(Placed),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tombstone {
    pub reservation_id: ReservationId,
    pub recorded_at: DateTime<Utc>,
    pub command_id: Uuid,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub reservation_id: ReservationId,
    pub order_id: OrderId,
    pub state: ReservationState,
    pub lines: Vec<Line>,
    pub expires_at: DateTime<Utc>,
    pub request_hash: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The command id of the event at each sequence number (index = seq - 1).
    pub step_commands: Vec<Uuid>,
}

/// Why a reservation stream is not a valid history.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamViolation {
    #[error("expected seq {expected}, found {found}")]
    SequenceGap { expected: u32, found: u32 },
    #[error("{event} is not allowed after {after}")]
    BadTransition { after: String, event: &'static str },
    #[error("{event} at seq {seq} does not repeat the order and lines of seq 1")]
    AmountsDiffer { seq: u32, event: &'static str },
    #[error("a {event} event does not belong in a reservation stream")]
    ForeignEvent { event: &'static str },
}

impl Reservation {
    pub fn reservation_id(&self) -> &ReservationId {
        match self {
            Reservation::Tombstone(t) => &t.reservation_id,
            Reservation::Placed(p) => &p.reservation_id,
        }
    }

    /// A tombstone reads as released: that is what its one event says.
    pub fn state(&self) -> ReservationState {
        match self {
            Reservation::Tombstone(_) => ReservationState::Released,
            Reservation::Placed(p) => p.state,
        }
    }

    pub fn order_id(&self) -> Option<&OrderId> {
        self.placed().map(|p| &p.order_id)
    }

    pub fn lines(&self) -> &[Line] {
        self.placed().map_or(&[], |p| &p.lines)
    }

    pub fn expires_at(&self) -> Option<DateTime<Utc>> {
        self.placed().map(|p| p.expires_at)
    }

    pub fn created_at(&self) -> DateTime<Utc> {
        match self {
            Reservation::Tombstone(t) => t.recorded_at,
            Reservation::Placed(p) => p.created_at,
        }
    }

    pub fn updated_at(&self) -> DateTime<Utc> {
        match self {
            Reservation::Tombstone(t) => t.recorded_at,
            Reservation::Placed(p) => p.updated_at,
        }
    }

    pub fn placed(&self) -> Option<&Placed> {
        match self {
            Reservation::Tombstone(_) => None,
            Reservation::Placed(p) => Some(p),
        }
    }

    /// The last sequence number in the stream.
    pub fn seq(&self) -> u32 {
        match self {
            Reservation::Tombstone(_) => 1,
            Reservation::Placed(p) => p.step_commands.len() as u32,
        }
    }

    /// The command that wrote the event at `seq`, if the stream reaches it.
    pub fn command_at(&self, seq: u32) -> Option<Uuid> {
        match self {
            Reservation::Tombstone(t) => (seq == 1).then_some(t.command_id),
            Reservation::Placed(p) => p.step_commands.get((seq as usize).checked_sub(1)?).copied(),
        }
    }

    /// Whether the reservation is open and past its expiry at `now` (the database clock).
    pub fn is_due(&self, now: DateTime<Utc>) -> bool {
        self.placed()
            .is_some_and(|p| p.state == ReservationState::Reserved && now >= p.expires_at)
    }

    /// Folds one more event into the reservation (`None` before seq 1).
    pub fn fold(
        current: Option<Reservation>,
        reservation_id: &ReservationId,
        seq: u32,
        event: &Event,
        command_id: Uuid,
        recorded_at: DateTime<Utc>,
    ) -> Result<Reservation, StreamViolation> {
        let expected = current.as_ref().map_or(1, |r| r.seq() + 1);
        if seq != expected {
            return Err(StreamViolation::SequenceGap {
                expected,
                found: seq,
            });
        }
        let step = Step {
            reservation_id,
            event,
            seq,
            command_id,
            recorded_at,
        };
        // The coarse rule of the stream kind first (`StreamKind::allows`),
        // then what depends on the state before.
        let t = event.event_type();
        if StreamKind::of_event(t) != StreamKind::Reservation {
            return Err(step.foreign());
        }
        if !StreamKind::Reservation.allows(seq, t) {
            let after = current.as_ref().map_or("nothing", |r| r.state().as_str());
            return Err(step.not_after(after));
        }
        match current {
            None => step.open(),
            Some(Reservation::Placed(p)) if p.state == ReservationState::Reserved => {
                step.settle(p).map(Reservation::Placed)
            }
            Some(r @ (Reservation::Tombstone(_) | Reservation::Placed(_))) => {
                Err(step.not_after(r.state().as_str()))
            }
        }
    }
}

/// One event being folded, with where it stands.
struct Step<'a> {
    reservation_id: &'a ReservationId,
    event: &'a Event,
    seq: u32,
    command_id: Uuid,
    recorded_at: DateTime<Utc>,
}

impl Step<'_> {
    /// Seq 1: a reservation made, or a tombstone.
    fn open(&self) -> Result<Reservation, StreamViolation> {
        match self.event {
            Event::ReservationCreated {
                order_id,
                lines,
                expires_at,
                request_hash,
            } => Ok(Reservation::Placed(Placed {
                reservation_id: self.reservation_id.clone(),
                order_id: order_id.clone(),
                state: ReservationState::Reserved,
                lines: lines.clone(),
                expires_at: *expires_at,
                request_hash: request_hash.clone(),
                created_at: self.recorded_at,
                updated_at: self.recorded_at,
                step_commands: vec![self.command_id],
            })),
            Event::ReservationReleased {
                order_id: None,
                lines,
                ..
            } if lines.is_empty() => Ok(Reservation::Tombstone(Tombstone {
                reservation_id: self.reservation_id.clone(),
                recorded_at: self.recorded_at,
                command_id: self.command_id,
            })),
            Event::ReservationReleased { .. }
            | Event::ReservationConfirmed { .. }
            | Event::ReservationExpired { .. } => Err(self.not_after("nothing")),
            Event::StockReceived { .. }
            | Event::StockAdjusted { .. }
            | Event::StockTransferred { .. }
            | Event::StockCounted { .. } => Err(self.foreign()),
        }
    }

    /// Seq 2 of an open reservation: confirmed, released or expired, each
    /// repeating the order and lines of seq 1.
    fn settle(&self, mut p: Placed) -> Result<Placed, StreamViolation> {
        let (next, order_id, lines) = match self.event {
            Event::ReservationConfirmed { order_id, lines } => {
                (ReservationState::Confirmed, Some(order_id), lines)
            }
            Event::ReservationReleased {
                order_id, lines, ..
            } => (ReservationState::Released, order_id.as_ref(), lines),
            Event::ReservationExpired { order_id, lines } => {
                (ReservationState::Expired, Some(order_id), lines)
            }
            Event::ReservationCreated { .. } => return Err(self.not_after(p.state.as_str())),
            Event::StockReceived { .. }
            | Event::StockAdjusted { .. }
            | Event::StockTransferred { .. }
            | Event::StockCounted { .. } => return Err(self.foreign()),
        };
        if order_id != Some(&p.order_id) || *lines != p.lines {
            return Err(StreamViolation::AmountsDiffer {
                seq: self.seq,
                event: self.event.type_name(),
            });
        }
        p.state = next;
        p.updated_at = self.recorded_at;
        p.step_commands.push(self.command_id);
        Ok(p)
    }

    fn not_after(&self, after: &str) -> StreamViolation {
        match self.event {
            Event::StockReceived { .. }
            | Event::StockAdjusted { .. }
            | Event::StockTransferred { .. }
            | Event::StockCounted { .. } => self.foreign(),
            Event::ReservationCreated { .. }
            | Event::ReservationConfirmed { .. }
            | Event::ReservationReleased { .. }
            | Event::ReservationExpired { .. } => StreamViolation::BadTransition {
                after: after.to_owned(),
                event: self.event.type_name(),
            },
        }
    }

    fn foreign(&self) -> StreamViolation {
        StreamViolation::ForeignEvent {
            event: self.event.type_name(),
        }
    }
}
