//! `BackorderPlaced`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::ids::OrderId;
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{Columns, Rest, RowWriter};
use crate::domain::event::{lines_text, waits};
use crate::domain::event_type::{TypeRow, Places, ADDS};

/// The units of the order that were not on hand when it was reserved
/// and now wait for stock that is expected (`lines`): a backorder, or a
/// pre-order when nothing was on hand. Always seq 2, written with the
/// reservation it belongs to. `latest_arrival` is the latest date the
/// caller accepted stock to arrive by, if it named one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackorderPlaced {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_arrival: Option<NaiveDate>,
}

impl Fact for BackorderPlaced {
    an_orders_lines!(waits);

    fn summary(&self) -> String {
        let lines = lines_text(&self.lines);
        match self.latest_arrival {
            Some(by) => format!("backordered {lines}, arriving by {by}"),
            None => format!("backordered {lines}"),
        }
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order_lines(&self.order_id, &self.lines);
        row.rest.latest_arrival = self.latest_arrival;
    }
}

impl FactType for BackorderPlaced {
    const ROW: TypeRow = TypeRow::reservation(Places::Between, false, ADDS, (0, 0, 0, 1));

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        Ok(BackorderPlaced {
            order_id: c.the_order()?,
            lines: c.lines()?,
            latest_arrival: rest.latest_arrival,
        })
    }
}
