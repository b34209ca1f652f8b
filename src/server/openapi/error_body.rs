//! The error body every route may answer with: its codes are the server's
//! (`error_codes`), so it is the server's wire, not the shared one.

use serde::Serialize;
use utoipa::ToSchema;

use crate::server::error::error_codes;

/// Every error: a stable code, a message for people, machine-readable details.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    #[schema(schema_with = error_code)]
    pub code: String,
    pub message: String,
    /// INVALID_ARGUMENT: `{field, reason}`; INSUFFICIENT_STOCK:
    /// `{shortfalls: [{sku, location, requested, available}]}`; EXCEEDS_RESERVED:
    /// `{reservation_id, lines: [{sku, location, requested, reserved}]}`;
    /// EXPIRY_NOT_LATER: `{reservation_id, expires_at, requested}`; HOLD_TOO_LONG:
    /// `{reservation_id, latest}`; STEP_LIMIT: `{reservation_id, limit}`;
    /// ORDER_LIMIT_EXCEEDED: `{lines: [{sku, location, requested, max_per_order}]}`;
    /// EXPECTED_RECEIPT_CANCELLED: `{expected_id}`; EXPECTED_RECEIPT_FULL:
    /// `{expected_id, limit}`; EXPECTED_ITEM_MISMATCH: `{expected_id, sku, location}`;
    /// BACKORDER_WAITING: `{reservation_id, waiting}` (the units that would
    /// still wait after filling what stock on hand can fill now);
    /// BACKLOG_FULL: `{sku, location, what, limit}`; ARCHIVED: `{stream,
    /// last_seq, position}` (the stream left the database with an archived
    /// partition; `position` is its last event's); PAYLOAD_TOO_LARGE:
    /// `{limit_bytes}`; RATE_LIMITED: `{retry_after_seconds}`; UNAVAILABLE and
    /// INTERNAL: `{correlation_id}`; otherwise `{}`.
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// The stable error codes, every one the server can answer with.
fn error_code() -> utoipa::openapi::schema::Schema {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(error_codes()))
        .into()
}
