//! Named rejections: the business answers a command can get instead of success.
//! Each has a stable code (the codes of `shared/design/domain.md`); callers
//! branch on the code, people read the message.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};

/// A line that could not be reserved, or an adjustment that would take more
/// than is free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shortfall {
    pub sku: String,
    pub location: String,
    pub requested: i64,
    pub available: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("invalid {field}: {reason}")]
    InvalidArgument { field: String, reason: String },

    #[error("not enough stock for {} line(s)", shortfalls.len())]
    InsufficientStock { shortfalls: Vec<Shortfall> },

    #[error("{stream} already exists with a different request")]
    IdempotencyConflict { stream: String },

    #[error("reservation {reservation_id} was released")]
    ReservationReleased { reservation_id: String },

    #[error("reservation {reservation_id} expired at {expires_at}")]
    ReservationExpired {
        reservation_id: String,
        expires_at: DateTime<Utc>,
    },

    #[error(
        "reservation {reservation_id} is already confirmed; returns are new stock (a receipt)"
    )]
    AlreadyConfirmed { reservation_id: String },

    #[error("reservation {reservation_id} does not exist")]
    ReservationNotFound { reservation_id: String },

    /// A read asked for something that does not exist (an order, an item).
    #[error("no {what} {key}")]
    NotFound { what: &'static str, key: String },

    #[error("order {order_id} already has reservation {reservation_id}")]
    OrderAlreadyReserved {
        order_id: String,
        reservation_id: String,
    },
}

impl Rejection {
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        Rejection::InvalidArgument {
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    /// The stable code callers branch on.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Rejection::InsufficientStock { .. } => "INSUFFICIENT_STOCK",
            Rejection::IdempotencyConflict { .. } => "IDEMPOTENCY_CONFLICT",
            Rejection::ReservationReleased { .. } => "RESERVATION_RELEASED",
            Rejection::ReservationExpired { .. } => "RESERVATION_EXPIRED",
            Rejection::AlreadyConfirmed { .. } => "ALREADY_CONFIRMED",
            Rejection::ReservationNotFound { .. } => "RESERVATION_NOT_FOUND",
            Rejection::OrderAlreadyReserved { .. } => "ORDER_ALREADY_RESERVED",
            Rejection::NotFound { .. } => "NOT_FOUND",
        }
    }

    /// Machine-readable details of the rejection.
    pub fn details(&self) -> Value {
        match self {
            Rejection::InvalidArgument { field, reason } => {
                json!({"field": field, "reason": reason})
            }
            Rejection::InsufficientStock { shortfalls } => json!({"shortfalls": shortfalls}),
            Rejection::IdempotencyConflict { stream } => json!({"stream": stream}),
            Rejection::ReservationReleased { reservation_id }
            | Rejection::AlreadyConfirmed { reservation_id }
            | Rejection::ReservationNotFound { reservation_id } => {
                json!({"reservation_id": reservation_id})
            }
            Rejection::ReservationExpired {
                reservation_id,
                expires_at,
            } => json!({"reservation_id": reservation_id, "expires_at": expires_at}),
            Rejection::OrderAlreadyReserved {
                order_id,
                reservation_id,
            } => json!({"order_id": order_id, "reservation_id": reservation_id}),
            Rejection::NotFound { what, key } => json!({"what": what, "key": key}),
        }
    }

    /// The `{code, message, details}` document every interface answers with.
    pub fn to_json(&self) -> Value {
        json!({"code": self.code(), "message": self.to_string(), "details": self.details()})
    }
}
