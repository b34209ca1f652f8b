//! `ReservationReleased`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::ids::{OrderId, ReleaseId};

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
