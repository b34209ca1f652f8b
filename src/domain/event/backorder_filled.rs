//! `BackorderFilled`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::ids::OrderId;

/// Stock arrived (or was freed) for waiting units: they are held now,
/// as if reserved. Written by the ledger in the order backorders were
/// placed (first come, first served).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackorderFilled {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
}
