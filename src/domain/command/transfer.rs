//! Transfer: stock moved from one location to another, at once. It moves
//! available stock only: what open reservations hold at the source stays
//! there. Nothing is in transit (docs/domain.md).

use crate::domain::event::StockTransferred;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::quantity;
use super::single;
use super::{Items, Rule, Touches};
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{Item, Location, Sku, TransferId};
use crate::domain::rejection::Shortfall;
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TransferRequest {
    pub transfer_id: String,
    pub sku: String,
    pub from_location: String,
    pub to_location: String,
    #[serde(deserialize_with = "number::whole")]
    pub quantity: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub transfer_id: TransferId,
    /// The same SKU at two different locations.
    pub from: Item,
    pub to: Item,
    pub quantity: u32,
    pub fingerprint: String,
}

impl TransferRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let transfer_id = TransferId::parse("transfer_id", &self.transfer_id)?;
        let from = Item {
            sku: Sku::parse("sku", &self.sku)?,
            location: Location::parse("from_location", &self.from_location)?,
        };
        let to = Item {
            sku: from.sku.clone(),
            location: Location::parse("to_location", &self.to_location)?,
        };
        if to.location == from.location {
            return Err(Rejection::invalid(
                "to_location",
                "must be another location than from_location",
            ));
        }
        let quantity = quantity("quantity", self.quantity)?;
        let fingerprint = Transfer::fingerprint_of(&from, &to, quantity);
        Ok(Command::Transfer(Transfer {
            transfer_id,
            from,
            to,
            quantity,
            fingerprint,
        }))
    }
}

impl Transfer {
    /// The SKU, both locations and the quantity make a transfer what it is.
    pub fn fingerprint_of(from: &Item, to: &Item, quantity: u32) -> String {
        let mut c = Canonical::new("transfer/v1");
        c.item(from).item(to).field(&quantity.to_be_bytes());
        c.finish()
    }
}

impl Rule for Transfer {
    const KIND: &'static str = "transfer";

    /// Only the destination's first balance row can be new: the source must
    /// have stock to give.
    fn touches(&self) -> Touches {
        Touches {
            stream: StreamId::Transfer(self.transfer_id.clone()),
            order: None,
            items: Items::Named(vec![self.from.clone(), self.to.clone()]),
            may_create: vec![self.to.clone()],
            also: None,
        }
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        _now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let outcome = |replayed| Outcome::Transferred {
            transfer_id: self.transfer_id.to_string(),
            from: self.from.clone(),
            to: self.to.clone(),
            quantity: self.quantity,
            replayed,
        };
        single::decide(
            state,
            StreamId::Transfer(self.transfer_id.clone()),
            &self.fingerprint,
            command_id,
            outcome,
            || {
                let available = state.balance(&self.from).available();
                if available < i64::from(self.quantity) {
                    return Err(Rejection::InsufficientStock {
                        shortfalls: vec![Shortfall {
                            sku: self.from.sku.to_string(),
                            location: self.from.location.to_string(),
                            requested: i64::from(self.quantity),
                            available,
                        }],
                    });
                }
                Ok(Event::StockTransferred(StockTransferred {
                    sku: self.from.sku.clone(),
                    from_location: self.from.location.clone(),
                    to_location: self.to.location.clone(),
                    quantity: self.quantity,
                }))
            },
        )
    }
}
