//! `ReservationLinesReleased`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::ids::{OrderId, ReleaseId};

/// Part of an open reservation released (taken off the order); the rest
/// stays held.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationLinesReleased {
    pub order_id: OrderId,
    pub release_id: ReleaseId,
    pub lines: Vec<Line>,
    pub reason: String,
}
