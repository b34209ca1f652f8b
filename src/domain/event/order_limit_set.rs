//! `OrderLimitSet`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};

/// From now on, no order may reserve more than `max_per_order` of
/// `sku` at `location`; `None` lifts the limit. Moves no stock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderLimitSet {
    pub sku: Sku,
    pub location: Location,
    pub max_per_order: Option<u32>,
}
