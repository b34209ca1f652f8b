//! Change an expected receipt: the units expected in all (what was already
//! delivered counts towards them) and the date. Idempotent by the caller's
//! change id within the expected receipt.

use crate::domain::event::ExpectedReceiptChanged;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::expected::{append, find, open_with_room};
use super::input::{date, quantity};
use super::{Rule, Touches};
use crate::domain::backorder::room_to_expect;
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::expectation::ExpectationView;
use crate::domain::ids::{ChangeId, ExpectedId};
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};

/// Both figures are sent every time, so a change says where the expected
/// receipt stands rather than how it moves, and a retry cannot move it twice.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeExpectedRequest {
    /// Chosen by the caller for this change, and sent again on every retry.
    pub change_id: String,
    /// The units expected in all, delivered ones included.
    #[serde(deserialize_with = "number::whole")]
    pub quantity: i64,
    /// `YYYY-MM-DD`.
    pub expected_on: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeExpected {
    pub expected_id: ExpectedId,
    pub change_id: ChangeId,
    pub quantity: u32,
    pub expected_on: NaiveDate,
}

impl ChangeExpectedRequest {
    pub fn validate(&self, expected_id: &str) -> Result<Command, Rejection> {
        Ok(Command::ChangeExpected(ChangeExpected {
            expected_id: ExpectedId::parse("expected_id", expected_id)?,
            change_id: ChangeId::parse("change_id", &self.change_id)?,
            quantity: quantity("quantity", self.quantity)?,
            expected_on: date("expected_on", &self.expected_on)?,
        }))
    }
}

impl Rule for ChangeExpected {
    const KIND: &'static str = "change_expected";

    fn touches(&self) -> Touches {
        Touches::expected_of(&self.expected_id)
    }

    /// A retry of a change (same id, same figures) is answered with the
    /// expected receipt as it stands; the same id with other figures is a
    /// conflict. A change to fewer units than were delivered leaves nothing
    /// outstanding.
    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        _now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let e = find(state, &self.expected_id)?;
        if let Some(c) = e.change(&self.change_id) {
            if (c.quantity, c.expected_on) != (self.quantity, self.expected_on) {
                return Err(Rejection::IdempotencyConflict {
                    stream: StreamId::Expected(self.expected_id.clone()).to_string(),
                });
            }
            return Ok(Decision::answer(Outcome::Expected {
                view: ExpectationView::from(e),
                replayed: c.command_id != command_id,
            }));
        }
        open_with_room(e)?;
        if e.outstanding_if(self.quantity) > 0 {
            room_to_expect(state, &e.item, &self.expected_id)?;
        }
        let event = Event::ExpectedReceiptChanged(ExpectedReceiptChanged {
            change_id: self.change_id.clone(),
            sku: e.item.sku.clone(),
            location: e.item.location.clone(),
            quantity: self.quantity,
            expected_on: self.expected_on,
            outstanding: e.outstanding_if(self.quantity),
        });
        Ok(append(e, event, command_id))
    }
}
