//! `BackorderFilled`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::ids::OrderId;
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{Columns, Rest, RowWriter};
use crate::domain::event::{filled, lines_text};
use crate::domain::event_type::{TypeRow, Places, NOTHING};

/// Stock arrived (or was freed) for waiting units: they are held now,
/// as if reserved. Written by the ledger in the order backorders were
/// placed (first come, first served).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackorderFilled {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
}

impl Fact for BackorderFilled {
    an_orders_lines!(filled);

    fn summary(&self) -> String {
        format!("filled {} from stock", lines_text(&self.lines))
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order_lines(&self.order_id, &self.lines);
    }
}

impl FactType for BackorderFilled {
    const ROW: TypeRow = TypeRow::reservation(Places::Between, false, NOTHING, (0, 1, 0, -1));

    fn read_row(c: &Columns<'_>, _rest: Rest) -> Result<Self, String> {
        Ok(BackorderFilled {
            order_id: c.the_order()?,
            lines: c.lines()?,
        })
    }
}
