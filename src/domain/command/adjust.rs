//! Adjust: on-hand stock corrected by a signed delta with a reason (damage,
//! shrinkage, a found box). It may not leave less on hand than open
//! reservations hold.

use crate::domain::event::StockAdjusted;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::{item, reason};
use super::single;
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{AdjustmentId, Item};
use crate::domain::rejection::Shortfall;
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};
use crate::limits::MAX_ADJUST_DELTA;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdjustRequest {
    pub adjustment_id: String,
    pub sku: String,
    #[serde(default)]
    pub location: Option<String>,
    #[serde(deserialize_with = "number::whole")]
    pub delta: i64,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adjust {
    pub adjustment_id: AdjustmentId,
    pub item: Item,
    pub delta: i32,
    pub reason: String,
    pub fingerprint: String,
}

impl AdjustRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let adjustment_id = AdjustmentId::parse("adjustment_id", &self.adjustment_id)?;
        let item = item(&self.sku, self.location.as_deref(), "")?;
        let max = i64::from(MAX_ADJUST_DELTA);
        if self.delta == 0 || !(-max..=max).contains(&self.delta) {
            return Err(Rejection::invalid(
                "delta",
                format!("must be a whole number from -{max} to {max}, not 0"),
            ));
        }
        let delta = self.delta as i32;
        let reason = reason("reason", &self.reason)?;
        let fingerprint = Adjust::fingerprint_of(&item, delta, &reason);
        Ok(Command::Adjust(Adjust {
            adjustment_id,
            item,
            delta,
            reason,
            fingerprint,
        }))
    }
}

impl Adjust {
    /// The item, the delta and the reason make an adjustment what it is.
    pub fn fingerprint_of(item: &Item, delta: i32, reason: &str) -> String {
        let mut c = Canonical::new("adjust/v1");
        c.item(item)
            .field(&delta.to_be_bytes())
            .field(reason.as_bytes());
        c.finish()
    }
}

impl Rule for Adjust {
    const KIND: &'static str = "adjust";

    fn touches(&self) -> Touches {
        Touches::one_item(StreamId::Adjustment(self.adjustment_id.clone()), &self.item)
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        _now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let outcome = |replayed| Outcome::Adjusted {
            adjustment_id: self.adjustment_id.to_string(),
            item: self.item.clone(),
            delta: self.delta,
            reason: self.reason.clone(),
            replayed,
        };
        single::decide(
            state,
            StreamId::Adjustment(self.adjustment_id.clone()),
            &self.fingerprint,
            command_id,
            outcome,
            || {
                let balance = state.balance(&self.item);
                // Held units, and units on hand that waiting orders claim,
                // cannot be adjusted away.
                if -i64::from(self.delta) > balance.free() {
                    return Err(Rejection::InsufficientStock {
                        shortfalls: vec![Shortfall {
                            sku: self.item.sku.to_string(),
                            location: self.item.location.to_string(),
                            requested: -i64::from(self.delta),
                            available: balance.free(),
                        }],
                    });
                }
                Ok(Event::StockAdjusted(StockAdjusted {
                    sku: self.item.sku.clone(),
                    location: self.item.location.clone(),
                    delta: self.delta,
                    reason: self.reason.clone(),
                }))
            },
        )
    }
}
