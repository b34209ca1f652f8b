//! `ReservationLinesReleased`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::ids::{OrderId, ReleaseId};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event::lines_text;
use crate::domain::event_type::{TypeRow, Places};
use crate::domain::event::freed;
use crate::domain::event_type::part;
use crate::domain::event_type::ReservationState;
use crate::domain::text::shown;

/// Part of an open reservation released (taken off the order); the rest
/// stays held.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationLinesReleased {
    pub order_id: OrderId,
    pub release_id: ReleaseId,
    pub lines: Vec<Line>,
    pub reason: String,
}

impl Fact for ReservationLinesReleased {
    an_orders_lines!(freed);

    fn summary(&self) -> String {
        let lines = lines_text(&self.lines);
        format!("released {lines} ({}: {})", self.release_id, shown(&self.reason))
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order_lines(&self.order_id, &self.lines);
        row.rest.release_id = Some(self.release_id.clone());
        row.rest.reason = Some(self.reason.clone());
    }
}

impl FactType for ReservationLinesReleased {
    const ROW: TypeRow = TypeRow::reservation(
        Places::Between,
        false,
        part(ReservationState::Released),
        (0, -1, 0, 0),
    );

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        Ok(ReservationLinesReleased {
            order_id: c.the_order()?,
            release_id: need(rest.release_id, "release_id")?,
            lines: c.lines()?,
            reason: need(rest.reason, "reason")?,
        })
    }
}
