//! Command routes: validate, run through the store, answer. `201` when the
//! command did the work, `200` when it was a replay (or a confirm/release).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::contract;
use crate::domain::{
    command, AdjustRequest, Command, CommandContext, ConfirmLinesRequest, CountRequest,
    ExtendRequest, LimitRequest, Outcome, ReceiveRequest, RecordedEvent, ReleaseLinesRequest,
    ReorderPointRequest, ReserveRequest, TransferRequest,
};
use crate::server::auth::{Can, ToWrite};
use crate::server::error::ApiError;
use crate::server::json::{ApiJson, ApiPath};
use crate::server::openapi::{
    AdjustmentResponse, CountResponse, ErrorBody, LimitResponse, ReceiptResponse,
    ReorderPointResponse, ReservationResponse, TransferResponse,
};
use crate::server::params::{CommandHeaders, ReservationPath};
use crate::server::AppState;
use crate::store::{Answered, ReservationDetails};

/// The body of a confirm: none, or `{}`; unknown fields are still refused.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmBody {}

/// The body of a release: none, `{}`, or a reason.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseBody {
    #[serde(default)]
    #[schema(schema_with = contract::release_reason)]
    pub reason: Option<String>,
}

/// Runs one command and counts its outcome.
async fn run(
    s: &AppState,
    kind: &'static str,
    cmd: Result<Command, crate::domain::Rejection>,
    ctx: CommandContext,
) -> Result<Committed, ApiError> {
    let cmd = cmd.inspect_err(|r| s.metrics.command(kind, r.code().as_str()))?;
    match s.store.execute_answered(cmd, ctx).await {
        Err(e) => {
            s.metrics.command(kind, "error");
            Err(e.into())
        }
        Ok(Answered { result: Err(r), .. }) => {
            s.metrics.command(kind, r.code().as_str());
            Err(r.into())
        }
        Ok(Answered {
            result: Ok(outcome),
            timeline,
        }) => {
            let replayed = outcome.replayed();
            s.metrics
                .command(kind, if replayed { "replayed" } else { "created" });
            Ok(Committed { outcome, timeline })
        }
    }
}

/// An accepted command's outcome, and its stream's events as its commit left them.
struct Committed {
    outcome: Outcome,
    timeline: Vec<RecordedEvent>,
}

fn created_or_replayed(replayed: bool) -> StatusCode {
    if replayed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    }
}

/// Runs a command of a single-event stream (receipt, adjustment, transfer,
/// count, limit) and answers with its outcome: `201` when it did the work, `200`
/// for a replay.
pub(super) async fn single(
    s: &AppState,
    kind: &'static str,
    cmd: Result<Command, crate::domain::Rejection>,
    ctx: CommandContext,
) -> Result<Response, ApiError> {
    let o = run(s, kind, cmd, ctx).await?;
    Ok((
        created_or_replayed(o.outcome.replayed()),
        Json(crate::api::answer(&o.outcome)),
    )
        .into_response())
}

/// The reservation as `GET /v1/reservations/{id}` shows it, plus `replayed`,
/// as the command's own commit left it: built from the batch's answer, not
/// read back (a later command may have moved the reservation on since).
fn reservation_body(committed: Committed) -> Result<(bool, Value), ApiError> {
    let Outcome::Reservation { view, replayed } = committed.outcome else {
        return Err(ApiError::Internal(format!(
            "a reservation command answered {:?}",
            committed.outcome
        )));
    };
    let body = match ReservationDetails::committed(view.clone(), committed.timeline) {
        // The metadata is the caller's own: it sent the command.
        Some(details) => json!(crate::api::reservation(&details, Some(replayed), true)),
        None => json!(crate::api::answer(&Outcome::Reservation { view, replayed })),
    };
    Ok((replayed, body))
}

#[utoipa::path(post, path = "/v1/stock/receipts", operation_id = "receiveStock", tag = "commands", request_body = ReceiveRequest,
    params(CommandHeaders),
    responses((status = 201, description = "received", body = ReceiptResponse),
              (status = 200, description = "a replay of the same receipt", body = ReceiptResponse),
              (status = 404, description = "NOT_FOUND: `against` names no expected receipt", body = ErrorBody),
              (status = 409, description = "IDEMPOTENCY_CONFLICT: the receipt id was used for another receipt; EXPECTED_RECEIPT_CANCELLED, EXPECTED_RECEIPT_FULL, EXPECTED_ITEM_MISMATCH: `against` names an expected receipt that takes no delivery of this item", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn receive(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiJson(req): ApiJson<ReceiveRequest>,
) -> Result<Response, ApiError> {
    single(&s, "receive", req.validate(), headers.context(&caller)?).await
}

#[utoipa::path(post, path = "/v1/stock/counts", operation_id = "countStock", tag = "commands", request_body = CountRequest,
    params(CommandHeaders),
    responses((status = 201, description = "recorded: on_hand is now the counted units, the change from the books appended", body = CountResponse),
              (status = 200, description = "a replay of the same count, with the books' figure it saw", body = CountResponse),
              (status = 409, description = "IDEMPOTENCY_CONFLICT: the count id was used for another count", body = ErrorBody),
              (status = 422, description = "INSUFFICIENT_STOCK: fewer units counted than open reservations hold", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn count(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiJson(req): ApiJson<CountRequest>,
) -> Result<Response, ApiError> {
    single(&s, "count", req.validate(), headers.context(&caller)?).await
}

#[utoipa::path(post, path = "/v1/stock/limits", operation_id = "limitPerOrder", tag = "commands", request_body = LimitRequest,
    params(CommandHeaders),
    responses((status = 201, description = "set: reserves of the item decided from now on are held to it; open reservations keep what they hold", body = LimitResponse),
              (status = 200, description = "a replay of the same limit", body = LimitResponse),
              (status = 409, description = "IDEMPOTENCY_CONFLICT: the limit id was used for another limit", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn limit(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiJson(req): ApiJson<LimitRequest>,
) -> Result<Response, ApiError> {
    single(&s, "limit", req.validate(), headers.context(&caller)?).await
}

#[utoipa::path(post, path = "/v1/stock/reorder-points", operation_id = "setReorderPoint", tag = "commands", request_body = ReorderPointRequest,
    params(CommandHeaders),
    responses((status = 201, description = "set: from now on the item is low while its available units are below it; if that changed whether it is low, a StockLow or StockRecovered event follows", body = ReorderPointResponse),
              (status = 200, description = "a replay of the same reorder point", body = ReorderPointResponse),
              (status = 409, description = "IDEMPOTENCY_CONFLICT: the id was used for another reorder point", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn reorder_point(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiJson(req): ApiJson<ReorderPointRequest>,
) -> Result<Response, ApiError> {
    single(
        &s,
        "reorder_point",
        req.validate(),
        headers.context(&caller)?,
    )
    .await
}

#[utoipa::path(post, path = "/v1/stock/transfers", operation_id = "transferStock", tag = "commands", request_body = TransferRequest,
    params(CommandHeaders),
    responses((status = 201, description = "moved: the source's on_hand down, the destination's up, at once", body = TransferResponse),
              (status = 200, description = "a replay of the same transfer", body = TransferResponse),
              (status = 409, description = "IDEMPOTENCY_CONFLICT: the transfer id was used for another transfer", body = ErrorBody),
              (status = 422, description = "INSUFFICIENT_STOCK: the source's available stock is short; the shortfall names it", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn transfer(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiJson(req): ApiJson<TransferRequest>,
) -> Result<Response, ApiError> {
    single(&s, "transfer", req.validate(), headers.context(&caller)?).await
}

#[utoipa::path(post, path = "/v1/stock/adjustments", operation_id = "adjustStock", tag = "commands", request_body = AdjustRequest,
    params(CommandHeaders),
    responses((status = 201, description = "adjusted", body = AdjustmentResponse),
              (status = 200, description = "a replay of the same adjustment", body = AdjustmentResponse),
              (status = 409, description = "IDEMPOTENCY_CONFLICT: the adjustment id was used for another adjustment", body = ErrorBody),
              (status = 422, description = "INSUFFICIENT_STOCK: on_hand would fall below reserved", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn adjust(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiJson(req): ApiJson<AdjustRequest>,
) -> Result<Response, ApiError> {
    single(&s, "adjust", req.validate(), headers.context(&caller)?).await
}

#[utoipa::path(post, path = "/v1/reservations", operation_id = "reserve", tag = "commands", request_body = ReserveRequest,
    params(CommandHeaders),
    responses((status = 201, description = "reserved", body = ReservationResponse),
              (status = 200, description = "a replay: the reservation as it is now", body = ReservationResponse),
              (status = 409, description = "IDEMPOTENCY_CONFLICT, RESERVATION_RELEASED, ORDER_ALREADY_RESERVED; BACKLOG_FULL: with `backorder`, the most orders already wait for an item", body = ErrorBody),
              (status = 422, description = "ORDER_LIMIT_EXCEEDED with details.lines (checked first), INSUFFICIENT_STOCK with details.shortfalls", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn reserve(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiJson(req): ApiJson<ReserveRequest>,
) -> Result<Response, ApiError> {
    let ctx = headers.context(&caller)?;
    reservation_step(&s, "reserve", req.validate(), ctx).await
}

#[utoipa::path(post, path = "/v1/reservations/{id}/confirm", operation_id = "confirmReservation", tag = "commands", request_body = Option<ConfirmBody>,
    params(ReservationPath, CommandHeaders),
    responses((status = 200, description = "confirmed (or already confirmed: replayed)", body = ReservationResponse),
              (status = 404, description = "RESERVATION_NOT_FOUND", body = ErrorBody),
              (status = 409, description = "RESERVATION_EXPIRED, RESERVATION_RELEASED; BACKORDER_WAITING: units still wait for stock (confirm what is held by lines, or wait until they are filled)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn confirm(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiPath(ReservationPath { id }): ApiPath<ReservationPath>,
    ApiJson(_): ApiJson<ConfirmBody>,
) -> Result<Response, ApiError> {
    let ctx = headers.context(&caller)?;
    let o = run(&s, "confirm", command::confirm(&id), ctx).await?;
    let (_, body) = reservation_body(o)?;
    Ok(Json(body).into_response())
}

#[utoipa::path(post, path = "/v1/reservations/{id}/release", operation_id = "releaseReservation", tag = "commands", request_body = Option<ReleaseBody>,
    params(ReservationPath, CommandHeaders),
    responses((status = 200, description = "released (a tombstone if it did not exist yet), or already released or expired: replayed", body = ReservationResponse),
              (status = 409, description = "ALREADY_CONFIRMED (returns are new stock: a receipt)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn release(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiPath(ReservationPath { id }): ApiPath<ReservationPath>,
    ApiJson(body): ApiJson<ReleaseBody>,
) -> Result<Response, ApiError> {
    let ctx = headers.context(&caller)?;
    let o = run(
        &s,
        "release",
        command::release(&id, body.reason.as_deref()),
        ctx,
    )
    .await?;
    let (_, body) = reservation_body(o)?;
    Ok(Json(body).into_response())
}

/// Runs a command on an existing reservation and answers with it: `201`
/// when the step was taken, `200` for a replay.
async fn reservation_step(
    s: &AppState,
    kind: &'static str,
    cmd: Result<Command, crate::domain::Rejection>,
    ctx: CommandContext,
) -> Result<Response, ApiError> {
    let o = run(s, kind, cmd, ctx).await?;
    let (replayed, body) = reservation_body(o)?;
    Ok((created_or_replayed(replayed), Json(body)).into_response())
}

#[utoipa::path(post, path = "/v1/reservations/{id}/confirmations", operation_id = "confirmLines", tag = "commands", request_body = ConfirmLinesRequest,
    params(ReservationPath, CommandHeaders),
    responses((status = 201, description = "confirmed those units; the rest stays reserved (CONFIRMED when nothing is left open)", body = ReservationResponse),
              (status = 200, description = "a replay of the same confirmation id with the same lines", body = ReservationResponse),
              (status = 404, description = "RESERVATION_NOT_FOUND", body = ErrorBody),
              (status = 409, description = "IDEMPOTENCY_CONFLICT (the confirmation id was used for other lines), RESERVATION_EXPIRED, RESERVATION_RELEASED, STEP_LIMIT", body = ErrorBody),
              (status = 422, description = "EXCEEDS_RESERVED: a line asks for more than is still reserved; details.lines names each", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn confirm_lines(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiPath(ReservationPath { id }): ApiPath<ReservationPath>,
    ApiJson(req): ApiJson<ConfirmLinesRequest>,
) -> Result<Response, ApiError> {
    let ctx = headers.context(&caller)?;
    reservation_step(&s, "confirm_lines", req.validate(&id), ctx).await
}

#[utoipa::path(post, path = "/v1/reservations/{id}/releases", operation_id = "releaseLines", tag = "commands", request_body = ReleaseLinesRequest,
    params(ReservationPath, CommandHeaders),
    responses((status = 201, description = "released those units; the rest stays reserved (RELEASED when nothing is left open)", body = ReservationResponse),
              (status = 200, description = "a replay of the same release id with the same lines", body = ReservationResponse),
              (status = 404, description = "RESERVATION_NOT_FOUND", body = ErrorBody),
              (status = 409, description = "IDEMPOTENCY_CONFLICT (the release id was used for other lines), ALREADY_CONFIRMED, RESERVATION_EXPIRED, RESERVATION_RELEASED, STEP_LIMIT", body = ErrorBody),
              (status = 422, description = "EXCEEDS_RESERVED: a line asks for more than is still reserved; details.lines names each", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn release_lines(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiPath(ReservationPath { id }): ApiPath<ReservationPath>,
    ApiJson(req): ApiJson<ReleaseLinesRequest>,
) -> Result<Response, ApiError> {
    let ctx = headers.context(&caller)?;
    reservation_step(&s, "release_lines", req.validate(&id), ctx).await
}

#[utoipa::path(post, path = "/v1/reservations/{id}/extensions", operation_id = "extendReservation", tag = "commands", request_body = ExtendRequest,
    params(ReservationPath, CommandHeaders),
    responses((status = 201, description = "extended: the reservation now expires ttl_seconds from now", body = ReservationResponse),
              (status = 200, description = "a replay of the same extension id with the same ttl_seconds", body = ReservationResponse),
              (status = 404, description = "RESERVATION_NOT_FOUND", body = ErrorBody),
              (status = 409, description = "IDEMPOTENCY_CONFLICT, EXPIRY_NOT_LATER (the new expiry would not be later), ALREADY_CONFIRMED, RESERVATION_EXPIRED, RESERVATION_RELEASED, STEP_LIMIT", body = ErrorBody),
              (status = 422, description = "HOLD_TOO_LONG: the hold would last longer than the longest time to live from its reserve", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn extend(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: CommandHeaders,
    ApiPath(ReservationPath { id }): ApiPath<ReservationPath>,
    ApiJson(req): ApiJson<ExtendRequest>,
) -> Result<Response, ApiError> {
    let ctx = headers.context(&caller)?;
    reservation_step(&s, "extend", req.validate(&id), ctx).await
}
