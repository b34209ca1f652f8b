//! Release: the order is cancelled; everything the reservation still holds
//! goes back to available. A release that arrives before its reserve leaves
//! a tombstone, so the late reserve is refused.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::input::{reason, DEFAULT_RELEASE_REASON};
use super::step::{replay, settle};
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState, NewEvent, Outcome, ReservationView};
use crate::domain::event::DropReason;
use crate::domain::ids::ReservationId;
use crate::domain::reservation::Tombstone;
use crate::domain::reservation::{Reservation, ReservationState};
use crate::domain::stream::StreamId;
use crate::domain::{Command, Rejection};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    pub reservation_id: ReservationId,
    pub reason: String,
}

/// Releases the whole of a reservation, for `why` or the default reason.
pub fn release(reservation_id: &str, why: Option<&str>) -> Result<Command, Rejection> {
    Ok(Command::Release(Release {
        reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
        reason: reason("reason", why.unwrap_or(DEFAULT_RELEASE_REASON))?,
    }))
}

impl Rule for Release {
    const KIND: &'static str = "release";

    fn touches(&self) -> Touches {
        Touches::held_by(&self.reservation_id)
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let res = match state.reservations.get(&self.reservation_id) {
            None => return Ok(tombstone(&self.reservation_id)),
            Some(res) => res,
        };
        let p = match res {
            Reservation::Tombstone(_) => return Ok(replay(res, 1, command_id)),
            Reservation::Placed(p) => p,
        };
        match p.state {
            ReservationState::Released | ReservationState::Expired => {
                Ok(replay(res, res.seq(), command_id))
            }
            ReservationState::Confirmed => Err(Rejection::AlreadyConfirmed {
                reservation_id: p.reservation_id.to_string(),
            }),
            ReservationState::Reserved => Ok(settle(
                p,
                DropReason::Released,
                p.released(p.open_lines(), self.reason.clone(), None),
                command_id,
                now,
            )),
        }
    }
}

/// The cancel overtook its reserve: leave a tombstone so the late reserve is
/// refused instead of holding stock for a dead order.
fn tombstone(reservation_id: &ReservationId) -> Decision {
    Decision {
        events: vec![NewEvent {
            stream: StreamId::Reservation(reservation_id.clone()),
            seq: 1,
            event: Tombstone::event(),
            fingerprint: None,
        }],
        outcome: Outcome::Reservation {
            view: ReservationView {
                reservation_id: reservation_id.clone(),
                order_id: None,
                state: ReservationState::Released,
                lines: Vec::new(),
                expires_at: None,
            },
            replayed: false,
        },
    }
}
