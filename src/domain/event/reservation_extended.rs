//! `ReservationExtended`: one of the log's facts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::ids::{ExtensionId, OrderId};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event::StockDelta;
use crate::domain::event_type::{TypeRow, Places, MOVES_NOTHING, NOTHING};
use crate::domain::ids::Item;

/// An open reservation's hold moved later: it now expires at `expires_at`,
/// `ttl_seconds` after the extension was decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationExtended {
    pub order_id: OrderId,
    pub extension_id: ExtensionId,
    pub ttl_seconds: u32,
    pub expires_at: DateTime<Utc>,
}

impl Fact for ReservationExtended {
    /// An extension moves the expiry, never stock.
    fn effects(&self, _f: &mut dyn FnMut(&Item, StockDelta)) {}

    fn sku_key(&self) -> Option<&str> {
        None
    }

    fn order_id(&self) -> Option<&OrderId> {
        Some(&self.order_id)
    }

    fn summary(&self) -> String {
        format!("held until {}", self.expires_at.format("%H:%M:%S"))
    }

    /// No lines: an extension moves no stock.
    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order(Some(&self.order_id));
        row.rest.extension_id = Some(self.extension_id.clone());
        row.rest.ttl_seconds = Some(self.ttl_seconds);
        row.rest.expires_at = Some(self.expires_at);
    }
}

impl FactType for ReservationExtended {
    const ROW: TypeRow = TypeRow::reservation(Places::Between, false, NOTHING, MOVES_NOTHING);

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        Ok(ReservationExtended {
            order_id: c.the_order()?,
            extension_id: need(rest.extension_id, "extension_id")?,
            ttl_seconds: need(rest.ttl_seconds, "ttl_seconds")?,
            expires_at: need(rest.expires_at, "expires_at")?,
        })
    }
}
