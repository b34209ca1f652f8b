//! Receive: stock arrives at a location. One event in a stream of its own,
//! named by the caller's receipt id.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::{item, quantity};
use super::single;
use super::{Rule, Touches};
use crate::domain::decide::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{Item, ReceiptId};
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receive {
    pub receipt_id: ReceiptId,
    pub item: Item,
    pub quantity: u32,
    pub fingerprint: String,
}

impl ReceiveRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let receipt_id = ReceiptId::parse("receipt_id", &self.receipt_id)?;
        let item = item(&self.sku, self.location.as_deref(), "")?;
        let quantity = quantity("quantity", self.quantity)?;
        let fingerprint = Receive::fingerprint_of(&item, quantity);
        Ok(Command::Receive(Receive {
            receipt_id,
            item,
            quantity,
            fingerprint,
        }))
    }
}

impl Receive {
    /// The item and the quantity make a receipt what it is.
    pub fn fingerprint_of(item: &Item, quantity: u32) -> String {
        let mut c = Canonical::new("receive/v1");
        c.item(item).field(&quantity.to_be_bytes());
        c.finish()
    }
}

impl Rule for Receive {
    const KIND: &'static str = "receive";

    fn touches(&self) -> Touches {
        Touches::one_item(StreamId::Receipt(self.receipt_id.clone()), &self.item)
    }

    /// A receipt is always accepted: there is no ceiling on stock.
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
            replayed,
        };
        single::decide(
            state,
            StreamId::Receipt(self.receipt_id.clone()),
            &self.fingerprint,
            command_id,
            outcome,
            || {
                Ok(Event::StockReceived {
                    sku: self.item.sku.clone(),
                    location: self.item.location.clone(),
                    quantity: self.quantity,
                })
            },
        )
    }
}
