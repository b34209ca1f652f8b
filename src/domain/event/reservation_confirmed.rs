//! `ReservationConfirmed`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::ids::{ConfirmationId, OrderId};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{Columns, Rest, RowWriter};
use crate::domain::event::lines_text;
use crate::domain::event_type::{TypeRow, Places};
use crate::domain::event::shipped;
use crate::domain::event_type::settles;
use crate::domain::event_type::ReservationState;

/// The three settling events (confirmed, released, expired) carry the
/// order and the lines still open when they were written, so each event
/// explains its own stock effect; the audit checks them against the
/// stream. Without partial steps before them, those are the lines of
/// seq 1. `confirmation_id` is set when a partial confirm took the rest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationConfirmed {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_id: Option<ConfirmationId>,
}

impl Fact for ReservationConfirmed {
    an_orders_lines!(shipped);

    fn summary(&self) -> String {
        format!("confirmed {}", lines_text(&self.lines))
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order_lines(&self.order_id, &self.lines);
        row.rest.confirmation_id = self.confirmation_id.clone();
    }
}

impl FactType for ReservationConfirmed {
    const ROW: TypeRow = TypeRow::reservation(
        Places::Later,
        true,
        settles(ReservationState::Confirmed),
        (-1, -1, 1, 0),
    );

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        Ok(ReservationConfirmed {
            order_id: c.the_order()?,
            lines: c.lines()?,
            confirmation_id: rest.confirmation_id,
        })
    }
}
