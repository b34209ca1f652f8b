//! `ExpectedReceiptCancelled`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};

/// Nothing more is coming: the `withdrawn` units still expected are not.
/// The last event of its stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedReceiptCancelled {
    pub sku: Sku,
    pub location: Location,
    pub expected_on: NaiveDate,
    pub withdrawn: u32,
}
