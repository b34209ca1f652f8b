//! Cancel an expected receipt: nothing more is coming. What was still
//! expected is withdrawn; what was delivered stays delivered. Idempotent: a
//! cancellation of a cancelled expected receipt answers as the first did.

use crate::domain::event::ExpectedReceiptCancelled;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::expected::{append, find};
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::expectation::{ExpectationState, ExpectationView};
use crate::domain::ids::ExpectedId;
use crate::domain::{Command, Rejection};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CancelExpected {
    pub expected_id: ExpectedId,
}

impl CancelExpected {
    /// A cancellation names only its expected receipt.
    pub fn validate(expected_id: &str) -> Result<Command, Rejection> {
        Ok(Command::CancelExpected(CancelExpected {
            expected_id: ExpectedId::parse("expected_id", expected_id)?,
        }))
    }
}

impl Rule for CancelExpected {
    const KIND: &'static str = "cancel_expected";

    fn touches(&self) -> Touches {
        Touches::expected_of(&self.expected_id)
    }

    /// Always possible on an open expected receipt: the last place of its
    /// stream is kept for it.
    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        _now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let e = find(state, &self.expected_id)?;
        if e.state == ExpectationState::Cancelled {
            return Ok(Decision::answer(Outcome::Expected {
                view: ExpectationView::from(e),
                replayed: e.cancelled_by != Some(command_id),
            }));
        }
        let event = Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled {
            sku: e.item.sku.clone(),
            location: e.item.location.clone(),
            expected_on: e.expected_on,
            withdrawn: e.outstanding(),
        });
        Ok(append(e, event, command_id))
    }
}
