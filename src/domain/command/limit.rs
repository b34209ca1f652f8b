//! Limit: the most of an item one order may reserve, or no limit. One event
//! in a stream of its own, named by the caller's limit id; the last limit of
//! an item holds from its place in the log on (docs/domain.md).
//!
//! A limit locks its item as a receipt does, so it and the reserves of the
//! item are decided one after another: a reserve is judged by the limit
//! that stands before it in the log, never by one committed beside it.

use crate::domain::event::OrderLimitSet;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::{item, setting_units};
use super::single;
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{Item, LimitId};
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LimitRequest {
    pub limit_id: String,
    pub sku: String,
    #[serde(default)]
    pub location: Option<String>,
    /// Required: a whole number from 0, or `null` to lift the limit. Left
    /// out, it would read as "no limit", and a forgotten field must not
    /// lift one.
    #[serde(deserialize_with = "number::optional_whole")]
    pub max_per_order: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    pub limit_id: LimitId,
    pub item: Item,
    pub max_per_order: Option<u32>,
    pub fingerprint: String,
}

impl LimitRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let limit_id = LimitId::parse("limit_id", &self.limit_id)?;
        let item = item(&self.sku, self.location.as_deref(), "")?;
        let max_per_order = setting_units("max_per_order", self.max_per_order)?;
        let fingerprint = Limit::fingerprint_of(&item, max_per_order);
        Ok(Command::Limit(Limit {
            limit_id,
            item,
            max_per_order,
            fingerprint,
        }))
    }
}

impl Limit {
    /// The item and the limit (or its absence) make a limit what it is.
    pub fn fingerprint_of(item: &Item, max_per_order: Option<u32>) -> String {
        let mut c = Canonical::new("limit/v1");
        c.item(item).optional(max_per_order);
        c.finish()
    }
}

impl Rule for Limit {
    const KIND: &'static str = "limit";

    /// Locks the item like a receipt (and may create its row), so reserves
    /// of the item wait for the limit, and the limit for them.
    fn touches(&self) -> Touches {
        Touches::one_item(StreamId::Limit(self.limit_id.clone()), &self.item)
    }

    /// A limit is always accepted. It binds reserves decided after it;
    /// what open reservations already hold stays held.
    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        _now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let outcome = |replayed| Outcome::LimitSet {
            limit_id: self.limit_id.to_string(),
            item: self.item.clone(),
            max_per_order: self.max_per_order,
            replayed,
        };
        single::decide(
            state,
            StreamId::Limit(self.limit_id.clone()),
            &self.fingerprint,
            command_id,
            outcome,
            || {
                Ok(Event::OrderLimitSet(OrderLimitSet {
                    sku: self.item.sku.clone(),
                    location: self.item.location.clone(),
                    max_per_order: self.max_per_order,
                }))
            },
        )
    }
}
