//! Expire: sent by the expiry worker, never by callers. A reservation whose
//! hold is due gives back what it still holds; anything else is left alone
//! and answered "not due", so a late or repeated expiry is harmless.

use crate::domain::event::ReservationExpired;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::step::settle;
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::{DropReason, Event};
use crate::domain::ids::ReservationId;
use crate::domain::reservation::Reservation;
use crate::domain::{Command, Rejection};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expire {
    pub reservation_id: ReservationId,
}

/// Expires a reservation if it is due.
pub fn expire(reservation_id: &str) -> Result<Command, Rejection> {
    Ok(Command::Expire(Expire {
        reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
    }))
}

impl Rule for Expire {
    const KIND: &'static str = "expire";

    fn touches(&self) -> Touches {
        Touches::held_by(&self.reservation_id)
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let res = state.reservations.get(&self.reservation_id);
        Ok(match res {
            Some(r @ Reservation::Placed(p)) if r.is_due(now) => settle(
                p,
                DropReason::Expired,
                Event::ReservationExpired(ReservationExpired {
                    order_id: p.order_id.clone(),
                    lines: p.open_lines(),
                }),
                command_id,
                now,
            ),
            Some(Reservation::Placed(_) | Reservation::Tombstone(_)) | None => {
                Decision::answer(Outcome::NotDue {
                    reservation_id: self.reservation_id.clone(),
                    state: res.map(Reservation::state),
                })
            }
        })
    }
}
