//! `StockLow`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};

/// Written by the ledger: the command before it in the same transaction
/// left `available` units, below the item's reorder point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockLow {
    pub sku: Sku,
    pub location: Location,
    pub available: i64,
    pub reorder_point: u32,
}
