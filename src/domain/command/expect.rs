//! Expect: stock of one item is due on a date (a purchase order line or an
//! advance shipping notice). Opens the expected receipt's stream, named by
//! the caller's id; later changes, deliveries and a cancellation follow in
//! the same stream (docs/domain.md, "Expected receipts").

use crate::domain::event::ReceiptExpected;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::{date, item, quantity};
use super::single::first_event;
use super::{Rule, Touches};
use crate::domain::backorder::room_to_expect;
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::expectation::ExpectationView;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{ExpectedId, Item};
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectRequest {
    pub expected_id: String,
    pub sku: String,
    #[serde(default)]
    pub location: Option<String>,
    #[serde(deserialize_with = "number::whole")]
    pub quantity: i64,
    /// `YYYY-MM-DD`.
    pub expected_on: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    pub expected_id: ExpectedId,
    pub item: Item,
    pub quantity: u32,
    pub expected_on: NaiveDate,
    pub fingerprint: String,
}

impl ExpectRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let expected_id = ExpectedId::parse("expected_id", &self.expected_id)?;
        let item = item(&self.sku, self.location.as_deref(), "")?;
        let quantity = quantity("quantity", self.quantity)?;
        let expected_on = date("expected_on", &self.expected_on)?;
        let fingerprint = Expect::fingerprint_of(&item, quantity, expected_on);
        Ok(Command::Expect(Expect {
            expected_id,
            item,
            quantity,
            expected_on,
            fingerprint,
        }))
    }
}

impl Expect {
    /// The item, the units and the date make an expected receipt what it is.
    pub fn fingerprint_of(item: &Item, quantity: u32, expected_on: NaiveDate) -> String {
        let mut c = Canonical::new("expect/v1");
        c.item(item)
            .field(&quantity.to_be_bytes())
            .field(expected_on.to_string().as_bytes());
        c.finish()
    }
}

impl Rule for Expect {
    const KIND: &'static str = "expect";

    /// Locks the item like a receipt (and may create its row): what is
    /// expected is part of the item's figures from now on.
    fn touches(&self) -> Touches {
        Touches::one_item(StreamId::Expected(self.expected_id.clone()), &self.item)
    }

    /// Always accepted; a date in the past means the stock is late, not
    /// that it will not come. A retry is answered with the expected receipt
    /// as it stands now.
    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        _now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let stream = StreamId::Expected(self.expected_id.clone());
        if let Some(e) = state.expectations.get(&self.expected_id) {
            if e.fingerprint.as_deref() != Some(self.fingerprint.as_str()) {
                return Err(Rejection::IdempotencyConflict {
                    stream: stream.to_string(),
                });
            }
            return Ok(Decision::answer(Outcome::Expected {
                view: ExpectationView::from(e),
                replayed: e.command_id != command_id,
            }));
        }
        room_to_expect(state, &self.item, &self.expected_id)?;
        let event = Event::ReceiptExpected(ReceiptExpected {
            sku: self.item.sku.clone(),
            location: self.item.location.clone(),
            quantity: self.quantity,
            expected_on: self.expected_on,
        });
        let view = ExpectationView {
            expected_id: self.expected_id.clone(),
            sku: self.item.sku.clone(),
            location: self.item.location.clone(),
            quantity: self.quantity,
            delivered: 0,
            outstanding: self.quantity,
            expected_on: self.expected_on,
            state: crate::domain::expectation::ExpectationState::Open,
        };
        Ok(Decision {
            events: vec![first_event(stream, event, &self.fingerprint)],
            outcome: Outcome::Expected {
                view,
                replayed: false,
            },
        })
    }
}
