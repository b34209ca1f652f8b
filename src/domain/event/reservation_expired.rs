//! `ReservationExpired`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::ids::OrderId;
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{Columns, Rest, RowWriter};
use crate::domain::event::lines_text;
use crate::domain::event_type::{TypeRow, Places};
use crate::domain::event::freed;
use crate::domain::event_type::settles;
use crate::domain::event_type::ReservationState;

/// An open reservation's hold ran out before it was confirmed or released:
/// its `lines` (what was still open) are freed. Written by the expiry
/// worker through the `expire` command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationExpired {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
}

impl Fact for ReservationExpired {
    an_orders_lines!(freed);

    fn summary(&self) -> String {
        format!("expired, freeing {}", lines_text(&self.lines))
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order_lines(&self.order_id, &self.lines);
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
