//! `BackorderPlaced`: one of the log's facts.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::ids::OrderId;

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
