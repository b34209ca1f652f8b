//! `ReservationLinesConfirmed`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::ids::{ConfirmationId, OrderId};

/// Part of an open reservation confirmed (shipped); the rest stays held.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationLinesConfirmed {
    pub order_id: OrderId,
    pub confirmation_id: ConfirmationId,
    pub lines: Vec<Line>,
}
