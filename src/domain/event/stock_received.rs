//! `StockReceived`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{Columns, Rest, RowWriter};
use crate::domain::event_type::TypeRow;
use crate::domain::stream::StreamKind;

/// A delivery of stock: `quantity` units of `sku` arrived at `location`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockReceived {
    pub sku: Sku,
    pub location: Location,
    pub quantity: u32,
}

impl Fact for StockReceived {
    about_one_item!(|e: &Self| i64::from(e.quantity));

    fn summary(&self) -> String {
        let StockReceived {
            sku,
            location,
            quantity,
        } = self;
        format!("received {quantity} × {sku}@{location}")
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, i64::from(self.quantity));
    }
}

impl FactType for StockReceived {
    const ROW: TypeRow = TypeRow::single(StreamKind::Receipt, (1, 0, 0, 0));

    fn read_row(c: &Columns<'_>, _rest: Rest) -> Result<Self, String> {
        let (item, quantity) = c.one_item()?;
        Ok(StockReceived {
            sku: item.sku,
            location: item.location,
            quantity: u32::try_from(quantity).map_err(|_| format!("quantity {quantity}"))?,
        })
    }
}
