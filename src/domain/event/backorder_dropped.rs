//! `BackorderDropped`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::event::DropReason;
use crate::domain::ids::OrderId;
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event::{lines_text, unwaits};
use crate::domain::event_type::{TypeRow, Places, part};
use crate::domain::event_type::ReservationState;

/// Waiting units that no longer wait: the order was released or expired
/// (written just before its settling event), or the stock they waited
/// for will not come (`unfillable`: an expected receipt was cut or
/// cancelled, and the latest-placed backorders have nothing left to
/// draw on).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackorderDropped {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
    pub reason: DropReason,
}

impl Fact for BackorderDropped {
    an_orders_lines!(unwaits);

    fn summary(&self) -> String {
        let lines = lines_text(&self.lines);
        format!("dropped {lines} waiting ({})", self.reason.as_str())
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order_lines(&self.order_id, &self.lines);
        row.rest.reason = Some(self.reason.as_str().to_owned());
    }
}

impl FactType for BackorderDropped {
    /// Dropped waiting units leave the order without being held: in the
    /// totals, they move out of RESERVED to RELEASED, whatever dropped them
    /// (they were never held, so none expired), and settle nothing.
    const ROW: TypeRow = TypeRow::reservation(
        Places::Between,
        false,
        part(ReservationState::Released),
        (0, 0, 0, -1),
    );

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        let reason = need(rest.reason, "reason")?;
        Ok(BackorderDropped {
            order_id: c.the_order()?,
            lines: c.lines()?,
            reason: DropReason::parse(&reason)
                .ok_or_else(|| format!("for no known reason: {reason}"))?,
        })
    }
}
