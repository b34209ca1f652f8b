//! `ReservationLinesConfirmed`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::ids::{ConfirmationId, OrderId};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event::lines_text;
use crate::domain::event_type::{TypeRow, Places};
use crate::domain::event::shipped;
use crate::domain::event_type::part;
use crate::domain::event_type::ReservationState;

/// Part of an open reservation confirmed (shipped); the rest stays held.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationLinesConfirmed {
    pub order_id: OrderId,
    pub confirmation_id: ConfirmationId,
    pub lines: Vec<Line>,
}

impl Fact for ReservationLinesConfirmed {
    an_orders_lines!(shipped);

    fn summary(&self) -> String {
        let lines = lines_text(&self.lines);
        format!("confirmed {lines} ({})", self.confirmation_id)
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order_lines(&self.order_id, &self.lines);
        row.rest.confirmation_id = Some(self.confirmation_id.clone());
    }
}

impl FactType for ReservationLinesConfirmed {
    const ROW: TypeRow = TypeRow::reservation(
        Places::Between,
        false,
        part(ReservationState::Confirmed),
        (-1, -1, 1, 0),
    );

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        Ok(ReservationLinesConfirmed {
            order_id: c.the_order()?,
            confirmation_id: need(rest.confirmation_id, "confirmation_id")?,
            lines: c.lines()?,
        })
    }
}
