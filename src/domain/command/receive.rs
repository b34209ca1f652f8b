//! Receive: stock arrives at a location. One event in a stream of its own,
//! named by the caller's receipt id. A receipt sent `against` an expected
//! receipt also appends the delivery to that expected receipt's stream, in
//! the same transaction: what it brought is no longer incoming.

use crate::domain::event::{ExpectedReceiptDelivered, StockReceived};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::expected::{find, next, open_with_room};
use super::input::{item, quantity};
use super::single;
use super::{Rule, Touches};
use crate::domain::decision::NewEvent;
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{ExpectedId, Item, ReceiptId};
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiveRequest {
    pub receipt_id: String,
    pub sku: String,
    #[serde(default)]
    pub location: Option<String>,
    #[serde(deserialize_with = "number::whole")]
    pub quantity: i64,
    /// The expected receipt this delivery is of, if any.
    #[serde(default)]
    pub against: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receive {
    pub receipt_id: ReceiptId,
    pub item: Item,
    pub quantity: u32,
    pub against: Option<ExpectedId>,
    pub fingerprint: String,
}

impl ReceiveRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let receipt_id = ReceiptId::parse("receipt_id", &self.receipt_id)?;
        let item = item(&self.sku, self.location.as_deref(), "")?;
        let quantity = quantity("quantity", self.quantity)?;
        let against = self
            .against
            .as_deref()
            .map(|id| ExpectedId::parse("against", id))
            .transpose()?;
        let fingerprint = Receive::fingerprint_of(&item, quantity, against.as_ref());
        Ok(Command::Receive(Receive {
            receipt_id,
            item,
            quantity,
            against,
            fingerprint,
        }))
    }
}

impl Receive {
    /// The item, the quantity and what it is delivered against make a
    /// receipt what it is. A receipt against nothing hashes as receipts
    /// always have, so their retries still match.
    pub fn fingerprint_of(item: &Item, quantity: u32, against: Option<&ExpectedId>) -> String {
        let mut c = Canonical::new("receive/v1");
        c.item(item).field(&quantity.to_be_bytes());
        if let Some(id) = against {
            c.field(b"against").field(id.as_str().as_bytes());
        }
        c.finish()
    }

    /// The delivery a receipt against an expected receipt appends to it:
    /// refused if the expected receipt does not exist, is of another item,
    /// is cancelled, or has no room left.
    fn delivery(
        &self,
        state: &LedgerState,
        command_id: Uuid,
    ) -> Result<Option<NewEvent>, Rejection> {
        let Some(id) = &self.against else {
            return Ok(None);
        };
        let e = find(state, id)?;
        if e.item != self.item {
            return Err(Rejection::ExpectedItemMismatch {
                expected_id: id.to_string(),
                sku: e.item.sku.to_string(),
                location: e.item.location.to_string(),
            });
        }
        open_with_room(e)?;
        // The receipt stream is new, so its id was never delivered: one the
        // expected receipt names already is a log that lost the receipt,
        // refused as a reused id rather than written twice.
        if e.deliveries.iter().any(|(r, _)| *r == self.receipt_id) {
            return Err(Rejection::IdempotencyConflict {
                stream: StreamId::Expected(id.clone()).to_string(),
            });
        }
        let event = Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
            receipt_id: self.receipt_id.clone(),
            sku: e.item.sku.clone(),
            location: e.item.location.clone(),
            quantity: self.quantity,
            expected_on: e.expected_on,
            outstanding: e
                .quantity
                .saturating_sub(e.delivered.saturating_add(self.quantity)),
        });
        Ok(Some(next(e, event, command_id).0))
    }
}

impl Rule for Receive {
    const KIND: &'static str = "receive";

    /// With `against`, also the expected receipt's stream: the receipt and
    /// the expected receipt's other commands go one at a time. Its item is
    /// the receipt's (or the receipt is refused), so it is locked too.
    fn touches(&self) -> Touches {
        let mut t = Touches::one_item(StreamId::Receipt(self.receipt_id.clone()), &self.item);
        t.also = self.against.clone().map(StreamId::Expected);
        t
    }

    /// A receipt is always accepted: there is no ceiling on stock. One
    /// against an expected receipt must fit it (`delivery`); short or over,
    /// its units are never refused.
    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        _now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let outcome = |replayed| Outcome::Received {
            receipt_id: self.receipt_id.to_string(),
            item: self.item.clone(),
            quantity: self.quantity,
            against: self.against.as_ref().map(ToString::to_string),
            replayed,
        };
        let mut delivery = None;
        let mut decision = single::decide(
            state,
            StreamId::Receipt(self.receipt_id.clone()),
            &self.fingerprint,
            command_id,
            outcome,
            || {
                delivery = self.delivery(state, command_id)?;
                Ok(Event::StockReceived(StockReceived {
                    sku: self.item.sku.clone(),
                    location: self.item.location.clone(),
                    quantity: self.quantity,
                }))
            },
        )?;
        decision.events.extend(delivery);
        Ok(decision)
    }
}
