//! `ReservationReleased`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::ids::{OrderId, ReleaseId};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event::{each_line, lines_text, StockDelta};
use crate::domain::event_type::{TypeRow, Places};
use crate::domain::ids::Item;
use crate::domain::event::freed;
use crate::domain::event_type::settles;
use crate::domain::event_type::ReservationState;
use crate::domain::text::shown;

/// With no order and no lines, this is a tombstone at seq 1.
/// `release_id` is set when a partial release took the rest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationReleased {
    pub order_id: Option<OrderId>,
    pub lines: Vec<Line>,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_id: Option<ReleaseId>,
}

impl Fact for ReservationReleased {
    fn effects(&self, f: &mut dyn FnMut(&Item, StockDelta)) {
        each_line(&self.lines, f, freed);
    }

    fn sku_key(&self) -> Option<&str> {
        None
    }

    /// A tombstone names no order.
    fn order_id(&self) -> Option<&OrderId> {
        self.order_id.as_ref()
    }

    fn summary(&self) -> String {
        let reason = shown(&self.reason);
        if self.lines.is_empty() {
            format!("released before it was reserved ({reason})")
        } else {
            format!("released {} ({reason})", lines_text(&self.lines))
        }
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order(self.order_id.as_ref());
        row.lines(&self.lines);
        row.rest.reason = Some(self.reason.clone());
        row.rest.release_id = self.release_id.clone();
    }
}

impl FactType for ReservationReleased {
    /// Anywhere: at seq 1 it is a tombstone (it overtook its reserve).
    const ROW: TypeRow = TypeRow::reservation(
        Places::Anywhere,
        true,
        settles(ReservationState::Released),
        (0, -1, 0, 0),
    );

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        Ok(ReservationReleased {
            order_id: c.order_id()?,
            lines: c.lines()?,
            reason: need(rest.reason, "reason")?,
            release_id: rest.release_id,
        })
    }
}
