//! `ExpectedReceiptCancelled`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event_type::{TypeRow, MOVES_NOTHING, NOTHING, SAYS_NOTHING};
use crate::domain::event_type::Places;
use crate::domain::stream::StreamKind;

/// Nothing more is coming: the `withdrawn` units still expected are not.
/// The last event of its stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedReceiptCancelled {
    pub sku: Sku,
    pub location: Location,
    pub expected_on: NaiveDate,
    pub withdrawn: u32,
}

impl Fact for ExpectedReceiptCancelled {
    // What is expected is not here until a receipt brings it (that
    // receipt's own event): it names its item, as a setting does.
    about_one_item!(|_: &Self| 0);

    fn summary(&self) -> String {
        let ExpectedReceiptCancelled {
            sku,
            location,
            withdrawn,
            ..
        } = self;
        format!("cancelled: {withdrawn} × {sku}@{location} no longer coming")
    }

    /// Nothing is expected after it: a line of 0.
    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, 0);
        row.rest.withdrawn = Some(self.withdrawn);
        row.rest.expected_on = Some(self.expected_on);
    }
}

impl FactType for ExpectedReceiptCancelled {
    const ROW: TypeRow = TypeRow {
        stream: StreamKind::Expected,
        places: Places::Later,
        closes: true,
        reservation: NOTHING,
        line: MOVES_NOTHING,
        low: SAYS_NOTHING,
    };

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        let (item, units) = c.item_expecting()?;
        if units != 0 {
            return Err(format!("with a line of {units}, not 0"));
        }
        Ok(ExpectedReceiptCancelled {
            sku: item.sku,
            location: item.location,
            expected_on: need(rest.expected_on, "expected_on")?,
            withdrawn: need(rest.withdrawn, "withdrawn")?,
        })
    }
}
