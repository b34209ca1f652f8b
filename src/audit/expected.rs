//! What each projection's rows should be, folded in Rust from the log. This
//! is an independent implementation of the projections' SQL; the audit checks
//! one against the other.

use rustc_hash::FxHashMap as HashMap;

use chrono::{DateTime, Utc};

use crate::domain::{Balance, Item, Line, Reservation, ReservationState};

/// One row of `order_view` as the log says it should be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderRow {
    pub reservation_id: String,
    pub state: ReservationState,
    pub lines: Vec<Line>,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// (seq, type, position) per event, oldest first.
    pub history: Vec<(u32, &'static str, i64)>,
}

/// One row of `reservation_expiry`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiryRow {
    pub order_id: String,
    pub expires_at: DateTime<Utc>,
}

/// The expected contents of one projection copy.
#[derive(Debug)]
pub enum Expected {
    Stock(HashMap<Item, Balance>),
    Orders(HashMap<String, OrderRow>),
    Expiry(HashMap<String, ExpiryRow>),
}

impl Expected {
    pub fn for_projection(name: &str) -> Option<Expected> {
        match name {
            "stock_levels" => Some(Expected::Stock(HashMap::default())),
            "order_view" => Some(Expected::Orders(HashMap::default())),
            "reservation_expiry" => Some(Expected::Expiry(HashMap::default())),
            _ => None,
        }
    }
}

/// A folded reservation plus what the order view needs beyond it.
pub fn order_row(
    r: &Reservation,
    history: Vec<(u32, &'static str, i64)>,
) -> Option<(String, OrderRow)> {
    let order = r.order_id.as_ref()?;
    Some((
        order.to_string(),
        OrderRow {
            reservation_id: r.reservation_id.to_string(),
            state: r.state,
            lines: r.lines.clone(),
            expires_at: r.expires_at?,
            created_at: r.created_at,
            updated_at: r.updated_at,
            history,
        },
    ))
}
