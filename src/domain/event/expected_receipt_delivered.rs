//! `ExpectedReceiptDelivered`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, ReceiptId, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event_type::{TypeRow, MOVES_NOTHING, NOTHING, SAYS_NOTHING};
use crate::domain::event_type::Places;
use crate::domain::stream::StreamKind;

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

impl Fact for ExpectedReceiptDelivered {
    // What is expected is not here until a receipt brings it (that
    // receipt's own event): it names its item, as a setting does.
    about_one_item!(|_: &Self| 0);

    fn summary(&self) -> String {
        let ExpectedReceiptDelivered {
            receipt_id,
            sku,
            location,
            quantity,
            outstanding,
            ..
        } = self;
        format!(
            "{quantity} × {sku}@{location} delivered by {receipt_id}, {outstanding} still to come"
        )
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, i64::from(self.outstanding));
        row.rest.receipt_id = Some(self.receipt_id.clone());
        row.rest.delivered = Some(self.quantity);
        row.rest.expected_on = Some(self.expected_on);
    }
}

impl FactType for ExpectedReceiptDelivered {
    const ROW: TypeRow = TypeRow {
        stream: StreamKind::Expected,
        places: Places::Between,
        closes: false,
        reservation: NOTHING,
        line: MOVES_NOTHING,
        low: SAYS_NOTHING,
    };

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        let (item, units) = c.item_expecting()?;
        Ok(ExpectedReceiptDelivered {
            receipt_id: need(rest.receipt_id, "receipt_id")?,
            sku: item.sku,
            location: item.location,
            quantity: need(rest.delivered, "delivered")?,
            expected_on: need(rest.expected_on, "expected_on")?,
            outstanding: units,
        })
    }
}
