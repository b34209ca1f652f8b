//! `StockCounted`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};

/// A stock take found `counted` units where the books had `books`: the
/// difference is the event's change of on-hand stock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockCounted {
    pub sku: Sku,
    pub location: Location,
    pub counted: u32,
    pub books: i64,
}
