//! The machine-readable API description (OpenAPI 3.1), generated from the
//! route annotations and the schemas below. It is served at `/openapi.json`
//! and kept in `docs/openapi.json`; a test fails when the two differ.
//!
//! The response schemas here document the JSON the handlers build.

use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::domain::{AdjustRequest, LineRequest, ReceiveRequest, ReserveRequest};
use crate::server::commands::{ConfirmBody, ReleaseBody};

/// Every error: a stable code, a message for people, machine-readable details.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// INVALID_ARGUMENT, MALFORMED_JSON, UNAUTHENTICATED, FORBIDDEN, RESERVATION_NOT_FOUND,
    /// NOT_FOUND, IDEMPOTENCY_CONFLICT, RESERVATION_RELEASED, RESERVATION_EXPIRED,
    /// ALREADY_CONFIRMED, ORDER_ALREADY_RESERVED, PAYLOAD_TOO_LARGE, INSUFFICIENT_STOCK,
    /// RATE_LIMITED, UNAVAILABLE, INTERNAL.
    pub code: String,
    pub message: String,
    /// INVALID_ARGUMENT: `{field, reason}`; INSUFFICIENT_STOCK: `{shortfalls: [{sku, location, requested, available}]}`.
    pub details: serde_json::Value,
}

#[derive(Serialize, ToSchema)]
pub struct Line {
    pub sku: String,
    pub location: String,
    pub quantity: u32,
}

#[derive(Serialize, ToSchema)]
pub struct ReceiptResponse {
    pub receipt_id: String,
    pub sku: String,
    pub location: String,
    pub quantity: u32,
    pub replayed: bool,
}

#[derive(Serialize, ToSchema)]
pub struct AdjustmentResponse {
    pub adjustment_id: String,
    pub sku: String,
    pub location: String,
    pub delta: i32,
    pub reason: String,
    pub replayed: bool,
}

#[derive(Serialize, ToSchema)]
pub struct Event {
    pub position: i64,
    pub stream: String,
    pub seq: u32,
    #[serde(rename = "type")]
    pub event_type: String,
    pub data: serde_json::Value,
    /// command_id, correlation_id, causation_id, actor, fingerprint.
    pub metadata: serde_json::Value,
    pub recorded_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct ReservationResponse {
    pub reservation_id: String,
    /// Null for a tombstone (released before it was reserved).
    pub order_id: Option<String>,
    /// RESERVED, CONFIRMED, RELEASED or EXPIRED.
    pub state: String,
    pub lines: Vec<Line>,
    pub expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub events: Vec<Event>,
    /// Only on command answers: true when an earlier identical request did the work.
    pub replayed: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct AsOf {
    pub position: Option<i64>,
    pub recorded_at: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct StockResponse {
    pub sku: String,
    pub location: String,
    pub on_hand: i64,
    pub reserved: i64,
    pub available: i64,
    pub confirmed: i64,
    pub as_of: AsOf,
}

#[derive(Serialize, ToSchema)]
pub struct HistoryEntry {
    pub seq: u32,
    #[serde(rename = "type")]
    pub event_type: String,
    pub position: i64,
}

#[derive(Serialize, ToSchema)]
pub struct OrderResponse {
    pub order_id: String,
    pub reservation_id: String,
    pub state: String,
    pub lines: Vec<Line>,
    pub expires_at: String,
    pub created_at: String,
    pub updated_at: String,
    pub history: Vec<HistoryEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct EventsPage {
    pub events: Vec<Event>,
    /// Pass as `after` to read on.
    pub next: String,
}

#[derive(Serialize, ToSchema)]
pub struct ProjectionsResponse {
    /// Per projection: name, state (live, rebuilding), definition_current, live and rebuild
    /// checkpoints with lag_events and lag_seconds.
    pub projections: Vec<serde_json::Value>,
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "stockledger", version = "1", description = "An event-sourced inventory ledger. Every body is JSON; unknown fields are refused."),
    paths(
        crate::server::commands::receive,
        crate::server::commands::adjust,
        crate::server::commands::reserve,
        crate::server::commands::confirm,
        crate::server::commands::release,
        crate::server::reads::reservation,
        crate::server::reads::stock,
        crate::server::reads::order,
        crate::server::reads::events,
        crate::server::reads::projections,
        crate::server::ops::healthz,
        crate::server::ops::readyz,
        crate::server::ops::metrics,
        crate::server::ops::openapi,
    ),
    components(schemas(
        ErrorBody, Line, ReceiptResponse, AdjustmentResponse, Event, ReservationResponse, AsOf, StockResponse,
        HistoryEntry, OrderResponse, EventsPage, ProjectionsResponse, ReceiveRequest, AdjustRequest,
        ReserveRequest, LineRequest, ConfirmBody, ReleaseBody
    )),
    modifiers(&BearerAuth),
    tags((name = "commands", description = "Append to the log; idempotent by id"),
         (name = "reads", description = "Reservations, stock, orders, the log, projections"),
         (name = "operations", description = "Health, readiness, metrics; no key needed"))
)]
pub struct ApiDoc;

/// The document as served and as kept in `docs/openapi.json`.
pub fn document() -> String {
    let mut doc = ApiDoc::openapi()
        .to_pretty_json()
        .expect("the API description serialises");
    doc.push('\n');
    doc
}
