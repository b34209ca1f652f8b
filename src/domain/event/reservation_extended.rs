//! `ReservationExtended`: one of the log's facts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::ids::{ExtensionId, OrderId};

/// An open reservation's hold moved later: it now expires at `expires_at`,
/// `ttl_seconds` after the extension was decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationExtended {
    pub order_id: OrderId,
    pub extension_id: ExtensionId,
    pub ttl_seconds: u32,
    pub expires_at: DateTime<Utc>,
}
