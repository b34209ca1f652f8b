//! `ReorderPointSet`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};

/// From now on, the item is low while its available stock is below
/// `reorder_point`; `None` removes the point. Moves no stock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReorderPointSet {
    pub sku: Sku,
    pub location: Location,
    pub reorder_point: Option<u32>,
}
