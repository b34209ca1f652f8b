//! Reorder point: below how many available units an item is low, or no
//! point. One event in a stream of its own, named by the caller's id; the
//! last point of an item holds from its place in the log on. Setting a point
//! across the item's available stock is itself a crossing, and its alert
//! follows (`domain/alerts.rs`, docs/domain.md).
//!
//! It locks its item as a receipt does, so it and every command that moves
//! the item are decided one after another, each judged against the point
//! before it.

use crate::domain::event::ReorderPointSet;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::{item, setting_units};
use super::single;
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{Item, ReorderPointId};
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderPointRequest {
    pub reorder_point_id: String,
    pub sku: String,
    #[serde(default)]
    pub location: Option<String>,
    /// Required: a whole number from 0, or `null` to remove the point, so
    /// that a field left out never removes one.
    #[serde(deserialize_with = "number::optional_whole")]
    pub reorder_point: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReorderPoint {
    pub reorder_point_id: ReorderPointId,
    pub item: Item,
    pub reorder_point: Option<u32>,
    pub fingerprint: String,
}

impl ReorderPointRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let reorder_point_id = ReorderPointId::parse("reorder_point_id", &self.reorder_point_id)?;
        let item = item(&self.sku, self.location.as_deref(), "")?;
        let reorder_point = setting_units("reorder_point", self.reorder_point)?;
        let fingerprint = ReorderPoint::fingerprint_of(&item, reorder_point);
        Ok(Command::ReorderPoint(ReorderPoint {
            reorder_point_id,
            item,
            reorder_point,
            fingerprint,
        }))
    }
}

impl ReorderPoint {
    /// The item and the point (or its absence) make the request what it is.
    pub fn fingerprint_of(item: &Item, reorder_point: Option<u32>) -> String {
        let mut c = Canonical::new("reorder-point/v1");
        c.item(item).optional(reorder_point);
        c.finish()
    }
}

impl Rule for ReorderPoint {
    const KIND: &'static str = "reorder_point";

    /// Locks the item like a receipt (and may create its row), so the
    /// commands that move the item wait for it, and it for them.
    fn touches(&self) -> Touches {
        Touches::one_item(
            StreamId::ReorderPoint(self.reorder_point_id.clone()),
            &self.item,
        )
    }

    /// A reorder point is always accepted.
    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        _now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let outcome = |replayed| Outcome::ReorderPointSet {
            reorder_point_id: self.reorder_point_id.to_string(),
            item: self.item.clone(),
            reorder_point: self.reorder_point,
            replayed,
        };
        single::decide(
            state,
            StreamId::ReorderPoint(self.reorder_point_id.clone()),
            &self.fingerprint,
            command_id,
            outcome,
            || {
                Ok(Event::ReorderPointSet(ReorderPointSet {
                    sku: self.item.sku.clone(),
                    location: self.item.location.clone(),
                    reorder_point: self.reorder_point,
                }))
            },
        )
    }
}
