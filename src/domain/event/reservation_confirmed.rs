//! `ReservationConfirmed`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::ids::{ConfirmationId, OrderId};

/// The three settling events (confirmed, released, expired) carry the
/// order and the lines still open when they were written, so each event
/// explains its own stock effect; the audit checks them against the
/// stream. Without partial steps before them, those are the lines of
/// seq 1. `confirmation_id` is set when a partial confirm took the rest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationConfirmed {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_id: Option<ConfirmationId>,
}
