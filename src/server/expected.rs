//! Expected receipts and what can be promised: record, change and cancel an
//! expected receipt, read one, and an item's available to promise by date.
//! A receipt is sent against an expected receipt through the ordinary
//! receipt route (`against`).

use axum::extract::State;
use axum::response::Response;
use axum::Json;
use serde::Deserialize;

use crate::api::answers as api;
use crate::api::contract;
use crate::domain::{
    CancelExpected, ChangeExpectedRequest, ExpectRequest, ExpectationView, ExpectedId, Item,
    Location, Rejection, Sku,
};
use crate::server::auth::{Can, ToRead, ToWrite};
use crate::server::commands::single;
use crate::server::error::ApiError;
use crate::server::json::{ApiJson, ApiPath, ApiQuery};
use crate::server::openapi::{ErrorBody, ExpectedReceiptResponse, PromiseResponse};
use crate::server::params::{CommandHeaders, ExpectedPath, SkuPath};
use crate::server::AppState;

/// The body of a cancellation: none, or `{}`; unknown fields are still refused.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {}

#[utoipa::path(post, path = "/v1/expected-receipts", operation_id = "expectReceipt", tag = "commands", request_body = ExpectRequest,
    params(CommandHeaders),
    responses((status = 201, description = "recorded: its units are incoming from now on", body = ExpectedReceiptResponse),
              (status = 200, description = "a replay of the same expected receipt, as it stands now", body = ExpectedReceiptResponse),
              (status = 409, description = "IDEMPOTENCY_CONFLICT: the id was used for another expected receipt; BACKLOG_FULL: the item has the most open expected receipts already", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn expect(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiJson(req): ApiJson<ExpectRequest>,
) -> Result<Response, ApiError> {
    single(&s, "expect", req.validate(), headers.context(&caller)?).await
}

#[utoipa::path(post, path = "/v1/expected-receipts/{id}/changes", operation_id = "changeExpectedReceipt", tag = "commands", request_body = ChangeExpectedRequest,
    params(ExpectedPath, CommandHeaders),
    responses((status = 201, description = "changed: quantity is now the units expected in all, delivered ones included", body = ExpectedReceiptResponse),
              (status = 200, description = "a replay of the same change", body = ExpectedReceiptResponse),
              (status = 404, description = "NOT_FOUND: no such expected receipt", body = ErrorBody),
              (status = 409, description = "EXPECTED_RECEIPT_CANCELLED, EXPECTED_RECEIPT_FULL, IDEMPOTENCY_CONFLICT (the change id was used for other figures); BACKLOG_FULL: the change would open it again while the item has the most open expected receipts", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn change(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiPath(ExpectedPath { id }): ApiPath<ExpectedPath>,
    ApiJson(req): ApiJson<ChangeExpectedRequest>,
) -> Result<Response, ApiError> {
    let ctx = headers.context(&caller)?;
    single(&s, "change_expected", req.validate(&id), ctx).await
}

#[utoipa::path(post, path = "/v1/expected-receipts/{id}/cancel", operation_id = "cancelExpectedReceipt", tag = "commands", request_body = Option<CancelBody>,
    params(ExpectedPath, CommandHeaders),
    responses((status = 201, description = "cancelled: what was still expected is withdrawn", body = ExpectedReceiptResponse),
              (status = 200, description = "already cancelled: replayed", body = ExpectedReceiptResponse),
              (status = 404, description = "NOT_FOUND: no such expected receipt", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn cancel(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiPath(ExpectedPath { id }): ApiPath<ExpectedPath>,
    ApiJson(_): ApiJson<CancelBody>,
) -> Result<Response, ApiError> {
    let ctx = headers.context(&caller)?;
    single(&s, "cancel_expected", CancelExpected::validate(&id), ctx).await
}

#[utoipa::path(get, path = "/v1/expected-receipts/{id}", operation_id = "getExpectedReceipt", tag = "reads", params(ExpectedPath),
    responses((status = 200, description = "the expected receipt, read from the log", body = ExpectedReceiptResponse),
              (status = 404, description = "NOT_FOUND", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn expected_receipt(
    State(s): State<AppState>,
    _: Can<ToRead>,
    ApiPath(ExpectedPath { id }): ApiPath<ExpectedPath>,
) -> Result<Json<ExpectedReceiptResponse>, ApiError> {
    let eid = ExpectedId::parse("expected_id", &id)?;
    let Some((e, _)) = s.store.expected_receipt(&eid).await? else {
        return Err(Rejection::NotFound {
            what: "expected receipt",
            key: id,
        }
        .into());
    };
    Ok(Json(api::expected_receipt(
        &ExpectationView::from(&e),
        None,
    )))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PromiseQuery {
    #[param(schema_with = contract::id)]
    location: Option<String>,
}

#[utoipa::path(get, path = "/v1/stock/{sku}/promise", operation_id = "getPromise", tag = "reads", params(SkuPath, PromiseQuery),
    responses((status = 200, description = "what can be promised now and by each date stock is due, from the stock_levels and incoming read models", body = PromiseResponse),
              (status = 404, description = "NOT_FOUND: an item the ledger does not know", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn promise(
    State(s): State<AppState>,
    _: Can<ToRead>,
    ApiPath(SkuPath { sku }): ApiPath<SkuPath>,
    ApiQuery(q): ApiQuery<PromiseQuery>,
) -> Result<Json<PromiseResponse>, ApiError> {
    let item = Item {
        sku: Sku::parse("sku", &sku)?,
        location: Location::parse_or_default("location", q.location.as_deref())?,
    };
    let p = s
        .store
        .promise(&item)
        .await?
        .ok_or_else(|| Rejection::never_received(&item))?;
    Ok(Json(api::promise(
        &item, &p.figures, &p.promise, p.position,
    )))
}
