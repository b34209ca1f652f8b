//! Release lines: part of a reservation is taken off the order (some of its
//! lines, or some units of them), also once it is due: that frees what the
//! expiry would. Idempotent by the caller's release id; taking everything
//! still open settles the reservation (RELEASED).

use crate::domain::event::ReservationLinesReleased;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::{merge_lines, reason, Line, LineRequest, DEFAULT_RELEASE_REASON};
use super::step::{already_confirmed, expired, released, start, take_lines, Start};
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState};
use crate::domain::event::Event;
use crate::domain::ids::{ReleaseId, ReservationId};
use crate::domain::reservation::{ReservationState, StepKey, StepRequest};
use crate::domain::{Command, Rejection};

/// Releases part of a reservation: some of its lines, or some units of them.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseLinesRequest {
    /// Chosen by the caller for this change, and sent again on every retry.
    pub release_id: String,
    pub lines: Vec<LineRequest>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// Releases `lines` of a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseLines {
    pub reservation_id: ReservationId,
    pub release_id: ReleaseId,
    pub lines: Vec<Line>,
    pub reason: String,
}

impl ReleaseLinesRequest {
    pub fn validate(&self, reservation_id: &str) -> Result<Command, Rejection> {
        Ok(Command::ReleaseLines(ReleaseLines {
            reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
            release_id: ReleaseId::parse("release_id", &self.release_id)?,
            lines: merge_lines(&self.lines)?,
            reason: reason(
                "reason",
                self.reason.as_deref().unwrap_or(DEFAULT_RELEASE_REASON),
            )?,
        }))
    }
}

impl Rule for ReleaseLines {
    const KIND: &'static str = "release_lines";

    fn touches(&self) -> Touches {
        Touches::held_by(&self.reservation_id)
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let p = match start(
            state,
            &self.reservation_id,
            StepKey::Release(self.release_id.clone()),
            StepRequest::Lines(self.lines.clone()),
            command_id,
        )? {
            Start::Answered(done) => return Ok(done),
            Start::New(_, p) => p,
        };
        match p.state {
            ReservationState::Released => return Err(released(&p.reservation_id)),
            ReservationState::Expired => return Err(expired(p)),
            ReservationState::Confirmed => return Err(already_confirmed(p)),
            ReservationState::Reserved => {}
        }
        take_lines(
            p,
            &self.lines,
            || {
                let (reason, id) = (self.reason.clone(), Some(self.release_id.clone()));
                p.released(p.open_lines(), reason, id)
            },
            || {
                Event::ReservationLinesReleased(ReservationLinesReleased {
                    order_id: p.order_id.clone(),
                    release_id: self.release_id.clone(),
                    lines: self.lines.clone(),
                    reason: self.reason.clone(),
                })
            },
            command_id,
            now,
        )
    }
}
