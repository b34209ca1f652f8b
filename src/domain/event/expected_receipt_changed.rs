//! `ExpectedReceiptChanged`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::ids::{ChangeId, Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event_type::{TypeRow, MOVES_NOTHING, NOTHING, SAYS_NOTHING};
use crate::domain::event_type::Places;
use crate::domain::stream::StreamKind;

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

impl Fact for ExpectedReceiptChanged {
    // What is expected is not here until a receipt brings it (that
    // receipt's own event): it names its item, as a setting does.
    about_one_item!(|_: &Self| 0);

    fn summary(&self) -> String {
        let ExpectedReceiptChanged {
            change_id,
            sku,
            location,
            quantity,
            expected_on,
            outstanding,
        } = self;
        format!(
            "now expecting {quantity} × {sku}@{location} on {expected_on}, \
             {outstanding} still to come ({change_id})"
        )
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, i64::from(self.outstanding));
        row.rest.change_id = Some(self.change_id.clone());
        row.rest.expected = Some(self.quantity);
        row.rest.expected_on = Some(self.expected_on);
    }
}

impl FactType for ExpectedReceiptChanged {
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
        Ok(ExpectedReceiptChanged {
            change_id: need(rest.change_id, "change_id")?,
            sku: item.sku,
            location: item.location,
            quantity: need(rest.expected, "expected")?,
            expected_on: need(rest.expected_on, "expected_on")?,
            outstanding: units,
        })
    }
}
