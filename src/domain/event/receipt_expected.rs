//! `ReceiptExpected`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event_type::{TypeRow, MOVES_NOTHING, NOTHING, SAYS_NOTHING};
use crate::domain::event_type::Places;
use crate::domain::stream::StreamKind;

/// Stock of one item is expected on a date (a purchase order line or an
/// advance shipping notice): `quantity` units, all of them still to come.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptExpected {
    pub sku: Sku,
    pub location: Location,
    pub quantity: u32,
    pub expected_on: NaiveDate,
}

impl Fact for ReceiptExpected {
    // What is expected is not here until a receipt brings it (that
    // receipt's own event): it names its item, as a setting does.
    about_one_item!(|_: &Self| 0);

    fn summary(&self) -> String {
        let ReceiptExpected {
            sku,
            location,
            quantity,
            expected_on,
        } = self;
        format!("expecting {quantity} × {sku}@{location} on {expected_on}")
    }

    /// Its line is what is still expected after it (the `incoming` read
    /// model reads it; its line effect is zero, so it moves no stock).
    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, i64::from(self.quantity));
        row.rest.expected_on = Some(self.expected_on);
    }
}

impl FactType for ReceiptExpected {
    const ROW: TypeRow = TypeRow {
        stream: StreamKind::Expected,
        places: Places::First,
        closes: false,
        reservation: NOTHING,
        line: MOVES_NOTHING,
        low: SAYS_NOTHING,
    };

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        let (item, units) = c.item_expecting()?;
        Ok(ReceiptExpected {
            sku: item.sku,
            location: item.location,
            quantity: units,
            expected_on: need(rest.expected_on, "expected_on")?,
        })
    }
}
