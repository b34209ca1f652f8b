//! `ReservationCreated`: one of the log's facts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::ids::OrderId;

/// An order's reservation: its `lines` are held until `expires_at`,
/// `ttl_seconds` after it was recorded. Version 2 of its shape added
/// `ttl_seconds` (`shape.rs`); version 1 events read as their expiry less
/// their recording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationCreated {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
    pub expires_at: DateTime<Utc>,
    pub ttl_seconds: u32,
    pub request_hash: String,
}
