//! Confirm lines: part of a reservation ships (some of its lines, or some
//! units of them). Idempotent by the caller's confirmation id; taking
//! everything still open settles the reservation (CONFIRMED).

use crate::domain::event::ReservationLinesConfirmed;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::{merge_lines, Line, LineRequest};
use super::step::{expired, released, start, take_lines, Start};
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState};
use crate::domain::event::Event;
use crate::domain::ids::{ConfirmationId, ReservationId};
use crate::domain::reservation::{ReservationState, StepKey, StepRequest};
use crate::domain::{Command, Rejection};

/// Confirms part of a reservation: some of its lines, or some units of them.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmLinesRequest {
    /// Chosen by the caller for this shipment, and sent again on every retry.
    pub confirmation_id: String,
    pub lines: Vec<LineRequest>,
}

/// Confirms `lines` (merged and sorted like a reserve's) of a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfirmLines {
    pub reservation_id: ReservationId,
    pub confirmation_id: ConfirmationId,
    pub lines: Vec<Line>,
}

impl ConfirmLinesRequest {
    pub fn validate(&self, reservation_id: &str) -> Result<Command, Rejection> {
        Ok(Command::ConfirmLines(ConfirmLines {
            reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
            confirmation_id: ConfirmationId::parse("confirmation_id", &self.confirmation_id)?,
            lines: merge_lines(&self.lines)?,
        }))
    }
}

impl Rule for ConfirmLines {
    const KIND: &'static str = "confirm_lines";

    fn touches(&self) -> Touches {
        Touches::held_by(&self.reservation_id)
    }

    /// The lines must be open and the reservation not due.
    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let (res, p) = match start(
            state,
            &self.reservation_id,
            StepKey::Confirmation(self.confirmation_id.clone()),
            StepRequest::Lines(self.lines.clone()),
            command_id,
        )? {
            Start::Answered(done) => return Ok(done),
            Start::New(res, p) => (res, p),
        };
        match p.state {
            ReservationState::Released => return Err(released(&p.reservation_id)),
            ReservationState::Expired => return Err(expired(p)),
            ReservationState::Reserved if res.is_due(now) => return Err(expired(p)),
            // Settled by confirming: nothing is open, so every line is over.
            ReservationState::Confirmed | ReservationState::Reserved => {}
        }
        take_lines(
            p,
            &self.lines,
            || p.confirmed(p.open_lines(), Some(self.confirmation_id.clone())),
            || {
                Event::ReservationLinesConfirmed(ReservationLinesConfirmed {
                    order_id: p.order_id.clone(),
                    confirmation_id: self.confirmation_id.clone(),
                    lines: self.lines.clone(),
                })
            },
            command_id,
            now,
        )
    }
}
