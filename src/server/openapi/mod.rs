//! The machine-readable API description (OpenAPI 3.1), generated from the
//! route table (`route_table.rs`: each handler's `#[utoipa::path]`) and the
//! bodies of the wire layer (`src/api/bodies.rs`). It is served at
//! `/openapi.json` and kept in `docs/openapi.json`; a test fails when the two
//! differ.
//!
//! What the route attributes do not say is added here, once for all routes:
//! the answers every keyed route can give (`responses`) and the links between
//! operations that a client or a stateful tester follows (`links`).

mod error_body;
mod links;
mod responses;

use responses::Shared as SharedResponses;

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

pub use crate::api::bodies::{
    AdjustmentResponse, AsOf, CountResponse, DigestResponse, Event, EventsHead, EventsPage,
    ExpectedReceiptResponse, ExpiringReservation, ExpiringReservationsResponse, HistoryEntry,
    LimitResponse, LowStockItem, LowStockResponse, MeResponse, OrderResponse, ProjectionsResponse,
    PromiseDate, PromiseResponse, Readiness, ReceiptResponse, RelaysResponse, ReorderPointResponse,
    ReservationLine, ReservationResponse, Status, StockResponse, StreamedEvent, TransferResponse,
    WorkerStateName,
};
pub use error_body::ErrorBody;

use crate::domain::{
    AdjustRequest, ChangeExpectedRequest, ConfirmLinesRequest, CountRequest, ExpectRequest,
    ExpectationState, ExtendRequest, LimitRequest, LineRequest, ReceiveRequest,
    ReleaseLinesRequest, ReorderPointRequest, ReservationState, ReserveRequest, TransferRequest,
};
use crate::server::commands::{ConfirmBody, ReleaseBody};
use crate::server::expected::CancelBody;
use crate::server::route_table::{keyed_routes, open_routes};

/// Adds every route of the route table (`route_table.rs`), first, so that
/// the modifiers after it see them all.
struct RouteTable;

/// Adds routes to the description's paths (`route_table.rs`).
macro_rules! add_paths {
    ($($handler:path, $described:ty;)*) => {
        |paths: &mut utoipa::openapi::path::Paths| {
            $(paths.add_path_operation(
                <$described as utoipa::Path>::path(),
                <$described as utoipa::Path>::methods(),
                tagged(
                    <$described as utoipa::Path>::operation(),
                    <$described as utoipa::__dev::Tags>::tags(),
                ),
            );)*
        }
    };
}

/// An operation with the tags its `#[utoipa::path]` gave it: the derive
/// adds them apart from the operation (through utoipa's `Tags`, as
/// utoipa-axum does), so a path added by hand must add them too.
fn tagged(
    mut operation: utoipa::openapi::path::Operation,
    tags: Vec<&str>,
) -> utoipa::openapi::path::Operation {
    operation
        .tags
        .get_or_insert_with(Vec::new)
        .extend(tags.into_iter().map(str::to_owned));
    operation
}

impl Modify for RouteTable {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        keyed_routes!(add_paths)(&mut openapi.paths);
        open_routes!(add_paths)(&mut openapi.paths);
    }
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
    components(schemas(
        ErrorBody, ReservationLine, ReceiptResponse, AdjustmentResponse, Event, ReservationResponse, AsOf, StockResponse,
        HistoryEntry, OrderResponse, EventsPage, StreamedEvent, ProjectionsResponse, ReceiveRequest, AdjustRequest,
        ReserveRequest, LineRequest, ConfirmBody, ReleaseBody, ReservationState, Status, Readiness, WorkerStateName,
        DigestResponse, TransferRequest, TransferResponse, CountRequest, CountResponse, LimitRequest,
        LimitResponse, ReorderPointRequest, ReorderPointResponse, LowStockResponse, LowStockItem,
        ConfirmLinesRequest, ReleaseLinesRequest, ExtendRequest, ExpectRequest, ChangeExpectedRequest,
        CancelBody, ExpectedReceiptResponse, ExpectationState, PromiseResponse, PromiseDate,
        MeResponse, ExpiringReservationsResponse, ExpiringReservation, RelaysResponse, EventsHead
    )),
    modifiers(&RouteTable, &BearerAuth, &SharedResponses),
    tags((name = "commands", description = "Append to the log; idempotent by id"),
         (name = "reads", description = "Reservations, stock, orders, the log, projections"),
         (name = "operations", description = "Health, readiness, metrics; no key needed"))
)]
pub struct ApiDoc;

/// The document as served and as kept in `docs/openapi.json`.
pub fn document() -> String {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the API description serialises");
    links::add(&mut doc);
    let mut text = serde_json::to_string_pretty(&doc).expect("JSON serialises");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use crate::server::error::codes_with_status;

    /// The codes an error description starts with (`CODE: why` or
    /// `CODE or CODE: why`, or a bare `CODE`).
    fn named_codes(description: &str) -> Vec<&str> {
        let head = description.split(':').next().unwrap_or_default();
        head.split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
            .filter(|w| w.len() > 2)
            .collect()
    }

    /// Every error answer the description lists names its codes, and each
    /// is a code the error type answers with that status: a route's
    /// hand-written description cannot promise a code under a status it
    /// never comes with.
    #[test]
    fn every_documented_error_names_codes_of_its_status() {
        let doc: serde_json::Value =
            serde_json::from_str(&super::document()).expect("the document is JSON");
        let mut checked = 0;
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, op) in item.as_object().expect("an item") {
                for (status, response) in op["responses"].as_object().expect("responses") {
                    let code: u16 = status.parse().expect("a status");
                    if code < 400 {
                        continue;
                    }
                    let status = StatusCode::from_u16(code).expect("a status");
                    let description = response["description"].as_str().unwrap_or_default();
                    let named = named_codes(description);
                    let allowed = codes_with_status(status);
                    assert!(
                        !named.is_empty(),
                        "{method} {path} {code}: {description:?} names no code"
                    );
                    for c in named {
                        assert!(allowed.contains(&c), "{method} {path} {code}: {c} is not answered with {code} (those are {allowed:?})");
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 50, "only {checked} error answers were checked");
    }
}
