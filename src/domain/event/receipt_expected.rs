//! `ReceiptExpected`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};

/// Stock of one item is expected on a date (a purchase order line or an
/// advance shipping notice): `quantity` units, all of them still to come.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptExpected {
    pub sku: Sku,
    pub location: Location,
    pub quantity: u32,
    pub expected_on: NaiveDate,
}
