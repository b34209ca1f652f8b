//! `OrderLimitSet`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event::item_of;
use crate::domain::event_type::{TypeRow, MOVES_NOTHING};
use crate::domain::ids::Item;
use crate::domain::settings::Setting;
use crate::domain::stream::StreamKind;

/// From now on, no order may reserve more than `max_per_order` of
/// `sku` at `location`; `None` lifts the limit. Moves no stock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderLimitSet {
    pub sku: Sku,
    pub location: Location,
    pub max_per_order: Option<u32>,
}

impl Fact for OrderLimitSet {
    about_one_item!(|_: &Self| 0);

    fn setting(&self) -> Option<(Item, Setting)> {
        let item = item_of(&self.sku, &self.location);
        Some((item, Setting::MaxPerOrder(self.max_per_order)))
    }

    fn summary(&self) -> String {
        let OrderLimitSet { sku, location, .. } = self;
        match self.max_per_order {
            Some(max) => format!("limited {sku}@{location} to {max} per order"),
            None => format!("lifted the per-order limit of {sku}@{location}"),
        }
    }

    /// Its item as a line of 0, so that the item's history and every fold
    /// find it; the limit in `data`.
    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, 0);
        row.rest.max_per_order = Some(self.max_per_order);
    }
}

impl FactType for OrderLimitSet {
    const ROW: TypeRow = TypeRow::single(StreamKind::Limit, MOVES_NOTHING);

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        let item = c.item_moving_nothing()?;
        Ok(OrderLimitSet {
            sku: item.sku,
            location: item.location,
            max_per_order: need(rest.max_per_order, "max_per_order")?,
        })
    }
}
