//! `ExpectedReceiptDelivered`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, ReceiptId, Sku};

/// A receipt delivered `quantity` units against the expected receipt.
/// The receipt's own `StockReceived` (in `receipt:<receipt_id>`, in the
/// same transaction) moves the stock; this event moves what is still
/// expected, to `outstanding`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedReceiptDelivered {
    pub receipt_id: ReceiptId,
    pub sku: Sku,
    pub location: Location,
    pub quantity: u32,
    pub expected_on: NaiveDate,
    pub outstanding: u32,
}
