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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub reservation_id: ReservationId,
    /// `None` only for a tombstone.
    pub order_id: Option<OrderId>,
    pub state: ReservationState,
    pub lines: Vec<Line>,
    pub expires_at: Option<DateTime<Utc>>,
    pub request_hash: Option<String>,
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
    pub fn is_tombstone(&self) -> bool {
        self.order_id.is_none()
    }

    /// The last sequence number in the stream.
    pub fn seq(&self) -> u32 {
        self.step_commands.len() as u32
    }

    /// Whether the reservation is past its expiry at `now` (the database clock).
    pub fn is_due(&self, now: DateTime<Utc>) -> bool {
        self.state == ReservationState::Reserved && self.expires_at.is_some_and(|e| now >= e)
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
        let after = |r: &Option<Reservation>| {
            r.as_ref()
                .map_or("nothing".to_owned(), |r| r.state.as_str().to_owned())
        };
        match (current, event) {
            (
                None,
                Event::ReservationCreated {
                    order_id,
                    lines,
                    expires_at,
                    request_hash,
                },
            ) => Ok(Reservation {
                reservation_id: reservation_id.clone(),
                order_id: Some(order_id.clone()),
                state: ReservationState::Reserved,
                lines: lines.clone(),
                expires_at: Some(*expires_at),
                request_hash: Some(request_hash.clone()),
                created_at: recorded_at,
                updated_at: recorded_at,
                step_commands: vec![command_id],
            }),
            (
                None,
                Event::ReservationReleased {
                    order_id: None,
                    lines,
                    ..
                },
            ) if lines.is_empty() => Ok(Reservation {
                reservation_id: reservation_id.clone(),
                order_id: None,
                state: ReservationState::Released,
                lines: Vec::new(),
                expires_at: None,
                request_hash: None,
                created_at: recorded_at,
                updated_at: recorded_at,
                step_commands: vec![command_id],
            }),
            (Some(mut r), e) if r.state == ReservationState::Reserved => {
                let (next, order_id, lines) = match e {
                    Event::ReservationConfirmed { order_id, lines } => {
                        (ReservationState::Confirmed, Some(order_id), lines)
                    }
                    Event::ReservationReleased {
                        order_id, lines, ..
                    } => (ReservationState::Released, order_id.as_ref(), lines),
                    Event::ReservationExpired { order_id, lines } => {
                        (ReservationState::Expired, Some(order_id), lines)
                    }
                    other => {
                        return Err(StreamViolation::BadTransition {
                            after: r.state.as_str().to_owned(),
                            event: other.type_name(),
                        })
                    }
                };
                if order_id != r.order_id.as_ref() || *lines != r.lines {
                    return Err(StreamViolation::AmountsDiffer {
                        seq,
                        event: e.type_name(),
                    });
                }
                r.state = next;
                r.updated_at = recorded_at;
                r.step_commands.push(command_id);
                Ok(r)
            }
            (current, e @ (Event::StockReceived { .. } | Event::StockAdjusted { .. })) => {
                let _ = current;
                Err(StreamViolation::ForeignEvent {
                    event: e.type_name(),
                })
            }
            (current, e) => Err(StreamViolation::BadTransition {
                after: after(&current),
                event: e.type_name(),
            }),
        }
    }
}
