//! `StockRecovered`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};

/// Written by the ledger: the item is no longer low: its available
/// stock is back at or above its reorder point, or the point was
/// raised out of reach, lowered or removed (`reorder_point` is the one
/// now in force).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockRecovered {
    pub sku: Sku,
    pub location: Location,
    pub available: i64,
    pub reorder_point: Option<u32>,
}
