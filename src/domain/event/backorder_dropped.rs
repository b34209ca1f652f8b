//! `BackorderDropped`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::event::DropReason;
use crate::domain::ids::OrderId;

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
