//! `StockTransferred`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};

/// Moves `quantity` of `sku` from one location to another at once: no
/// stock is in transit between them (docs/domain.md says why).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockTransferred {
    pub sku: Sku,
    pub from_location: Location,
    pub to_location: Location,
    pub quantity: u32,
}
