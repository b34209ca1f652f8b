//! `ReservationExpired`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::ids::OrderId;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationExpired {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
}
