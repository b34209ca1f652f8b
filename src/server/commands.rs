//! Command routes: validate, run through the store, answer. `201` when the
//! command did the work, `200` when it was a replay (or a confirm/release).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::domain::{
    command, AdjustRequest, Command, CommandContext, Outcome, ReceiveRequest, RecordedEvent,
    ReserveRequest,
};
use crate::server::auth::{Caller, Can, ToWrite};
use crate::server::error::ApiError;
use crate::server::json::{ApiJson, ApiPath};
use crate::server::openapi::{AdjustmentResponse, ErrorBody, ReceiptResponse, ReservationResponse};
use crate::server::{AppState, CAUSATION_HEADER, CORRELATION_HEADER};
use crate::store::{Answered, ReservationDetails};

/// The body of a confirm: nothing (`{}`), but unknown fields are still refused.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmBody {}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseBody {
    /// Why; 1 to 200 characters. Default "cancelled".
    #[serde(default)]
    pub reason: Option<String>,
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn context(caller: &Caller, headers: &HeaderMap) -> Result<CommandContext, ApiError> {
    let mut ctx = CommandContext::new(format!("key:{}", caller.name));
    ctx.correlation_id = header(headers, CORRELATION_HEADER);
    ctx.causation_id = header(headers, CAUSATION_HEADER);
    ctx.validate()?;
    Ok(ctx)
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
    let mut body = match ReservationDetails::committed(view.clone(), committed.timeline) {
        Some(details) => details.to_json(),
        None => serde_json::to_value(&view).expect("views serialise"),
    };
    body["replayed"] = json!(replayed);
    Ok((replayed, body))
}

#[utoipa::path(post, path = "/v1/stock/receipts", tag = "commands", request_body = ReceiveRequest,
    params(("X-Correlation-Id" = Option<String>, Header), ("X-Causation-Id" = Option<String>, Header)),
    responses((status = 201, description = "received", body = ReceiptResponse),
              (status = 200, description = "a replay of the same receipt", body = ReceiptResponse),
              (status = "4XX", description = "INVALID_ARGUMENT, MALFORMED_JSON, UNAUTHENTICATED, FORBIDDEN, IDEMPOTENCY_CONFLICT, PAYLOAD_TOO_LARGE, RATE_LIMITED", body = ErrorBody),
              (status = 415, description = "UNSUPPORTED_MEDIA_TYPE: a body not sent as application/json", body = ErrorBody),
              (status = 503, description = "UNAVAILABLE: retry with the same ids", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn receive(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ReceiveRequest>,
) -> Result<Response, ApiError> {
    let ctx = context(&caller, &headers)?;
    let o = run(&s, "receive", req.validate(), ctx).await?;
    Ok((
        created_or_replayed(o.outcome.replayed()),
        Json(o.outcome.to_json()),
    )
        .into_response())
}

#[utoipa::path(post, path = "/v1/stock/adjustments", tag = "commands", request_body = AdjustRequest,
    params(("X-Correlation-Id" = Option<String>, Header), ("X-Causation-Id" = Option<String>, Header)),
    responses((status = 201, description = "adjusted", body = AdjustmentResponse),
              (status = 200, description = "a replay of the same adjustment", body = AdjustmentResponse),
              (status = 422, description = "INSUFFICIENT_STOCK: on_hand would fall below reserved", body = ErrorBody),
              (status = "4XX", description = "INVALID_ARGUMENT, MALFORMED_JSON, UNAUTHENTICATED, FORBIDDEN, IDEMPOTENCY_CONFLICT, PAYLOAD_TOO_LARGE, RATE_LIMITED", body = ErrorBody),
              (status = 415, description = "UNSUPPORTED_MEDIA_TYPE: a body not sent as application/json", body = ErrorBody),
              (status = 503, description = "UNAVAILABLE", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn adjust(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<AdjustRequest>,
) -> Result<Response, ApiError> {
    let ctx = context(&caller, &headers)?;
    let o = run(&s, "adjust", req.validate(), ctx).await?;
    Ok((
        created_or_replayed(o.outcome.replayed()),
        Json(o.outcome.to_json()),
    )
        .into_response())
}

#[utoipa::path(post, path = "/v1/reservations", tag = "commands", request_body = ReserveRequest,
    params(("X-Correlation-Id" = Option<String>, Header), ("X-Causation-Id" = Option<String>, Header)),
    responses((status = 201, description = "reserved", body = ReservationResponse),
              (status = 200, description = "a replay: the reservation as it is now", body = ReservationResponse),
              (status = 409, description = "IDEMPOTENCY_CONFLICT, RESERVATION_RELEASED, ORDER_ALREADY_RESERVED", body = ErrorBody),
              (status = 422, description = "INSUFFICIENT_STOCK with details.shortfalls", body = ErrorBody),
              (status = "4XX", description = "INVALID_ARGUMENT, MALFORMED_JSON, UNAUTHENTICATED, FORBIDDEN, PAYLOAD_TOO_LARGE, RATE_LIMITED", body = ErrorBody),
              (status = 415, description = "UNSUPPORTED_MEDIA_TYPE: a body not sent as application/json", body = ErrorBody),
              (status = 503, description = "UNAVAILABLE", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn reserve(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ReserveRequest>,
) -> Result<Response, ApiError> {
    let ctx = context(&caller, &headers)?;
    let o = run(&s, "reserve", req.validate(), ctx).await?;
    let (replayed, body) = reservation_body(o)?;
    Ok((created_or_replayed(replayed), Json(body)).into_response())
}

#[utoipa::path(post, path = "/v1/reservations/{id}/confirm", tag = "commands", request_body = ConfirmBody,
    params(("id" = String, Path), ("X-Correlation-Id" = Option<String>, Header), ("X-Causation-Id" = Option<String>, Header)),
    responses((status = 200, description = "confirmed (or already confirmed: replayed)", body = ReservationResponse),
              (status = 404, description = "RESERVATION_NOT_FOUND", body = ErrorBody),
              (status = 409, description = "RESERVATION_EXPIRED, RESERVATION_RELEASED", body = ErrorBody),
              (status = "4XX", description = "INVALID_ARGUMENT, MALFORMED_JSON, UNAUTHENTICATED, FORBIDDEN, PAYLOAD_TOO_LARGE, RATE_LIMITED", body = ErrorBody),
              (status = 415, description = "UNSUPPORTED_MEDIA_TYPE: a body not sent as application/json", body = ErrorBody),
              (status = 503, description = "UNAVAILABLE", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn confirm(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    ApiJson(_): ApiJson<ConfirmBody>,
) -> Result<Response, ApiError> {
    let ctx = context(&caller, &headers)?;
    let o = run(&s, "confirm", command::confirm(&id), ctx).await?;
    let (_, body) = reservation_body(o)?;
    Ok(Json(body).into_response())
}

#[utoipa::path(post, path = "/v1/reservations/{id}/release", tag = "commands", request_body = ReleaseBody,
    params(("id" = String, Path), ("X-Correlation-Id" = Option<String>, Header), ("X-Causation-Id" = Option<String>, Header)),
    responses((status = 200, description = "released (a tombstone if it did not exist yet), or already released or expired: replayed", body = ReservationResponse),
              (status = 409, description = "ALREADY_CONFIRMED (returns are new stock: a receipt)", body = ErrorBody),
              (status = "4XX", description = "INVALID_ARGUMENT, MALFORMED_JSON, UNAUTHENTICATED, FORBIDDEN, PAYLOAD_TOO_LARGE, RATE_LIMITED", body = ErrorBody),
              (status = 415, description = "UNSUPPORTED_MEDIA_TYPE: a body not sent as application/json", body = ErrorBody),
              (status = 503, description = "UNAVAILABLE", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn release(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToWrite>,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ReleaseBody>,
) -> Result<Response, ApiError> {
    let ctx = context(&caller, &headers)?;
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
