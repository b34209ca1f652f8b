//! `ExpectedReceiptChanged`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::ids::{ChangeId, Location, Sku};

/// The units expected in all, or the date, changed. `outstanding` is
/// what is still expected after it: `quantity` less what was delivered,
/// never below 0.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedReceiptChanged {
    pub change_id: ChangeId,
    pub sku: Sku,
    pub location: Location,
    pub quantity: u32,
    pub expected_on: NaiveDate,
    pub outstanding: u32,
}
