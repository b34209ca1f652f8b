//! Confirm: the order is paid; everything the reservation still holds leaves
//! stock. Confirming again is a replay; a released or expired reservation
//! cannot be confirmed.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::step::{expired, found, released, replay, step};
use super::{Rule, Touches};
use crate::domain::decide::{Decision, LedgerState};
use crate::domain::event::Event;
use crate::domain::ids::ReservationId;
use crate::domain::reservation::{Reservation, ReservationState};
use crate::domain::{Command, Rejection};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confirm {
    pub reservation_id: ReservationId,
}

/// Confirms the whole of a reservation.
pub fn confirm(reservation_id: &str) -> Result<Command, Rejection> {
    Ok(Command::Confirm(Confirm {
        reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
    }))
}

impl Rule for Confirm {
    const KIND: &'static str = "confirm";

    fn touches(&self) -> Touches {
        Touches::held_by(&self.reservation_id)
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let res = found(state, &self.reservation_id)?;
        let p = match res {
            Reservation::Tombstone(t) => return Err(released(&t.reservation_id)),
            Reservation::Placed(p) => p,
        };
        match p.state {
            ReservationState::Released => Err(released(&p.reservation_id)),
            ReservationState::Confirmed => Ok(replay(res, res.seq(), command_id)),
            ReservationState::Expired => Err(expired(p)),
            ReservationState::Reserved if res.is_due(now) => Err(expired(p)),
            ReservationState::Reserved => Ok(step(
                p,
                Event::ReservationConfirmed {
                    order_id: p.order_id.clone(),
                    lines: p.open_lines(),
                    confirmation_id: None,
                },
                command_id,
                now,
            )),
        }
    }
}
