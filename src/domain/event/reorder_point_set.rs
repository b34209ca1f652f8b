//! `ReorderPointSet`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event::item_of;
use crate::domain::event_type::{TypeRow, MOVES_NOTHING};
use crate::domain::ids::Item;
use crate::domain::settings::Setting;
use crate::domain::stream::StreamKind;

/// From now on, the item is low while its available stock is below
/// `reorder_point`; `None` removes the point. Moves no stock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReorderPointSet {
    pub sku: Sku,
    pub location: Location,
    pub reorder_point: Option<u32>,
}

impl Fact for ReorderPointSet {
    about_one_item!(|_: &Self| 0);

    fn setting(&self) -> Option<(Item, Setting)> {
        let item = item_of(&self.sku, &self.location);
        Some((item, Setting::ReorderPoint(self.reorder_point)))
    }

    fn summary(&self) -> String {
        let ReorderPointSet { sku, location, .. } = self;
        match self.reorder_point {
            Some(point) => format!("reorder {sku}@{location} below {point} available"),
            None => format!("removed the reorder point of {sku}@{location}"),
        }
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, 0);
        row.rest.reorder_point = Some(self.reorder_point);
    }
}

impl FactType for ReorderPointSet {
    const ROW: TypeRow = TypeRow::single(StreamKind::ReorderPoint, MOVES_NOTHING);

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        let item = c.item_moving_nothing()?;
        Ok(ReorderPointSet {
            sku: item.sku,
            location: item.location,
            reorder_point: need(rest.reorder_point, "reorder_point")?,
        })
    }
}
