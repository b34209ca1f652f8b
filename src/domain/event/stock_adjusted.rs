//! `StockAdjusted`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockAdjusted {
    pub sku: Sku,
    pub location: Location,
    pub delta: i32,
    pub reason: String,
}
