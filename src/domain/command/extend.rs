//! Extend: keep a reservation's hold for `ttl_seconds` from now: later than
//! it was, and no later than the longest time to live after the reserve.
//! Idempotent by the caller's extension id.

use crate::domain::event::ReservationExtended;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::ttl;
use super::step::{already_confirmed, expired, released, start, Start};
use super::step::{room_for_a_step, step};
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState};
use crate::domain::event::Event;
use crate::domain::ids::{ExtensionId, ReservationId};
use crate::domain::reservation::{ReservationState, StepKey, StepRequest};
use crate::domain::{number, Command, Rejection};
use crate::limits::MAX_TTL_SECONDS;

/// Keeps a reservation's hold for `ttl_seconds` from now.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExtendRequest {
    /// Chosen by the caller for this extension, and sent again on every retry.
    pub extension_id: String,
    #[serde(deserialize_with = "number::whole")]
    pub ttl_seconds: i64,
}

/// Moves a reservation's expiry to `ttl_seconds` after the decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extend {
    pub reservation_id: ReservationId,
    pub extension_id: ExtensionId,
    pub ttl_seconds: u32,
}

impl ExtendRequest {
    pub fn validate(&self, reservation_id: &str) -> Result<Command, Rejection> {
        Ok(Command::Extend(Extend {
            reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
            extension_id: ExtensionId::parse("extension_id", &self.extension_id)?,
            ttl_seconds: ttl("ttl_seconds", self.ttl_seconds)?,
        }))
    }
}

impl Rule for Extend {
    const KIND: &'static str = "extend";

    fn touches(&self) -> Touches {
        Touches::held_by(&self.reservation_id)
    }

    /// Only an open reservation that is not yet due can be extended.
    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let (res, p) = match start(
            state,
            &self.reservation_id,
            StepKey::Extension(self.extension_id.clone()),
            StepRequest::Ttl(self.ttl_seconds),
            command_id,
        )? {
            Start::Answered(done) => return Ok(done),
            Start::New(res, p) => (res, p),
        };
        match p.state {
            ReservationState::Released => return Err(released(&p.reservation_id)),
            ReservationState::Confirmed => return Err(already_confirmed(p)),
            ReservationState::Expired => return Err(expired(p)),
            ReservationState::Reserved if res.is_due(now) => return Err(expired(p)),
            ReservationState::Reserved => {}
        }
        let requested = now + Duration::seconds(i64::from(self.ttl_seconds));
        if requested <= p.expires_at {
            return Err(Rejection::ExpiryNotLater {
                reservation_id: p.reservation_id.to_string(),
                expires_at: p.expires_at,
                requested,
            });
        }
        let latest = p.created_at + Duration::seconds(i64::from(MAX_TTL_SECONDS));
        if requested > latest {
            return Err(Rejection::HoldTooLong {
                reservation_id: p.reservation_id.to_string(),
                latest,
            });
        }
        room_for_a_step(p)?;
        let event = Event::ReservationExtended(ReservationExtended {
            order_id: p.order_id.clone(),
            extension_id: self.extension_id.clone(),
            ttl_seconds: self.ttl_seconds,
            expires_at: requested,
        });
        Ok(step(p, event, command_id, now))
    }
}
