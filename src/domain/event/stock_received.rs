//! `StockReceived`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{Columns, Rest, RowWriter};
use crate::domain::event::{on_hand_by, StockDelta};
use crate::domain::event_type::TypeRow;
use crate::domain::ids::{Item, OrderId};
use crate::domain::stream::StreamKind;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockReceived {
    pub sku: Sku,
    pub location: Location,
    pub quantity: u32,
}

impl Fact for StockReceived {
    fn effects(&self, f: &mut dyn FnMut(&Item, StockDelta)) {
        on_hand_by(f, &self.sku, &self.location, i64::from(self.quantity));
    }

    fn sku_key(&self) -> Option<&str> {
        Some(self.sku.as_str())
    }

    fn order_id(&self) -> Option<&OrderId> {
        None
    }

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
