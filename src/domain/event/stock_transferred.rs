//! `StockTransferred`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{Columns, Rest, RowWriter};
use crate::domain::event::{on_hand_by, StockDelta};
use crate::domain::event_type::TypeRow;
use crate::domain::ids::{Item, OrderId};
use crate::domain::stream::StreamKind;

/// Moves `quantity` of `sku` from one location to another at once: no
/// stock is in transit between them (docs/domain.md says why).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockTransferred {
    pub sku: Sku,
    pub from_location: Location,
    pub to_location: Location,
    pub quantity: u32,
}

impl Fact for StockTransferred {
    fn effects(&self, f: &mut dyn FnMut(&Item, StockDelta)) {
        let quantity = i64::from(self.quantity);
        on_hand_by(f, &self.sku, &self.from_location, -quantity);
        on_hand_by(f, &self.sku, &self.to_location, quantity);
    }

    fn sku_key(&self) -> Option<&str> {
        Some(self.sku.as_str())
    }

    fn order_id(&self) -> Option<&OrderId> {
        None
    }

    fn summary(&self) -> String {
        let StockTransferred {
            sku,
            from_location,
            to_location,
            quantity,
        } = self;
        format!("moved {quantity} × {sku} from {from_location} to {to_location}")
    }

    /// Two item lines: what leaves the source, what arrives at the
    /// destination, as signed changes of on-hand stock.
    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        let quantity = i64::from(self.quantity);
        row.item(&self.sku, &self.from_location, -quantity);
        row.item(&self.sku, &self.to_location, quantity);
    }
}

impl FactType for StockTransferred {
    const ROW: TypeRow = TypeRow::single(StreamKind::Transfer, (1, 0, 0, 0));

    /// The same SKU, leaving one location and arriving at another, by the
    /// same quantity.
    fn read_row(c: &Columns<'_>, _rest: Rest) -> Result<Self, String> {
        if c.skus.len() != 2 || c.locations.len() != 2 || c.quantities.len() != 2 {
            return Err(format!("with {} items", c.skus.len()));
        }
        let (from, to) = (c.item(0)?, c.item(1)?);
        let quantity =
            u32::try_from(c.quantities[1]).map_err(|_| "a transfer of nothing".to_owned())?;
        if from.sku != to.sku || c.quantities[0] != -c.quantities[1] || quantity == 0 {
            return Err("lines that do not mirror each other".into());
        }
        Ok(StockTransferred {
            sku: from.sku,
            from_location: from.location,
            to_location: to.location,
            quantity,
        })
    }
}
