//! `ReservationExpired`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::ids::OrderId;
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{Columns, Rest, RowWriter};
use crate::domain::event::{each_line, lines_text, StockDelta};
use crate::domain::event_type::{TypeRow, Places};
use crate::domain::ids::Item;
use crate::domain::event::freed;
use crate::domain::event_type::settles;
use crate::domain::reservation::ReservationState;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationExpired {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
}

impl Fact for ReservationExpired {
    fn effects(&self, f: &mut dyn FnMut(&Item, StockDelta)) {
        each_line(&self.lines, f, freed);
    }

    fn sku_key(&self) -> Option<&str> {
        None
    }

    fn order_id(&self) -> Option<&OrderId> {
        Some(&self.order_id)
    }

    fn summary(&self) -> String {
        format!("expired, freeing {}", lines_text(&self.lines))
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order(Some(&self.order_id));
        row.lines(&self.lines);
    }
}

impl FactType for ReservationExpired {
    const ROW: TypeRow = TypeRow::reservation(
        Places::Later,
        true,
        settles(ReservationState::Expired),
        (0, -1, 0, 0),
    );

    fn read_row(c: &Columns<'_>, _rest: Rest) -> Result<Self, String> {
        Ok(ReservationExpired {
            order_id: c.the_order()?,
            lines: c.lines()?,
        })
    }
}
