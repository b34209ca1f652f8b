//! `StockLow`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event::item_of;
use crate::domain::event_type::{TypeRow, MOVES_NOTHING};
use crate::domain::ids::Item;
use crate::domain::settings::Setting;
use crate::domain::stream::StreamKind;
use crate::domain::event::Alert;

/// Written by the ledger: the command before it in the same transaction
/// left `available` units, below the item's reorder point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockLow {
    pub sku: Sku,
    pub location: Location,
    pub available: i64,
    pub reorder_point: u32,
}

impl Fact for StockLow {
    about_one_item!(|_: &Self| 0);

    fn setting(&self) -> Option<(Item, Setting)> {
        Some((item_of(&self.sku, &self.location), Setting::AlertedLow(true)))
    }

    fn alert(&self) -> Option<Alert> {
        Some(Alert {
            item: item_of(&self.sku, &self.location),
            low: true,
            available: self.available,
            reorder_point: Some(self.reorder_point),
        })
    }

    fn summary(&self) -> String {
        let StockLow {
            sku,
            location,
            available,
            reorder_point,
        } = self;
        format!("low: {available} × {sku}@{location} available, below {reorder_point}")
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, 0);
        row.rest.available = Some(self.available);
        row.rest.reorder_point = Some(Some(self.reorder_point));
    }
}

impl FactType for StockLow {
    const ROW: TypeRow = TypeRow {
        low: Some(true),
        ..TypeRow::single(StreamKind::Alert, MOVES_NOTHING)
    };

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        let item = c.item_moving_nothing()?;
        Ok(StockLow {
            sku: item.sku,
            location: item.location,
            available: need(rest.available, "available")?,
            reorder_point: need(rest.reorder_point.flatten(), "reorder_point")?,
        })
    }
}
