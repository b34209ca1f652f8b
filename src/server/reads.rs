//! Read routes. Reservations come from the log (always current), stock and
//! orders from the read models (which say how far they have come), the log
//! itself in safe commit order.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;

use crate::api::answers as api;
use crate::api::contract;
use crate::domain::{
    page_limit, AsOf, Balance, Item, Location, OrderId, Rejection, ReservationId, Sku,
};
use crate::limits::MAX_STREAM_PREFIX_LEN;
use crate::server::auth::{Can, ToAudit, ToRead};
use crate::server::error::ApiError;
use crate::server::json::{ApiPath, ApiQuery};
use crate::server::openapi::{
    DigestResponse, ErrorBody, EventsPage, LowStockResponse, OrderResponse, ProjectionsResponse,
    ReservationResponse, StockResponse,
};
use crate::server::params::{OrderPath, ReservationPath, SkuPath};
use crate::server::AppState;
use crate::store::Cursor;

#[utoipa::path(get, path = "/v1/reservations/{id}", operation_id = "getReservation", tag = "reads", params(ReservationPath),
    responses((status = 200, description = "the reservation, read from the log", body = ReservationResponse),
              (status = 404, description = "RESERVATION_NOT_FOUND", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn reservation(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToRead>,
    ApiPath(ReservationPath { id }): ApiPath<ReservationPath>,
) -> Result<Json<ReservationResponse>, ApiError> {
    let rid = ReservationId::parse("reservation_id", &id)?;
    let Some(d) = s.store.reservation(&rid).await? else {
        return Err(Rejection::ReservationNotFound { reservation_id: id }.into());
    };
    Ok(Json(crate::api::reservation(
        &d,
        None,
        caller.sees_command_metadata(),
    )))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StockQuery {
    #[param(schema_with = contract::id)]
    location: Option<String>,
    #[param(schema_with = contract::as_of_time)]
    as_of: Option<String>,
    /// Read as text and parsed here, so that a bad value is refused with
    /// its own message rather than serde's.
    #[param(schema_with = contract::as_of_position)]
    as_of_position: Option<String>,
}

#[utoipa::path(get, path = "/v1/stock/{sku}", operation_id = "getStock", tag = "reads", params(SkuPath, StockQuery),
    responses((status = 200, description = "the figures, from the stock_levels read model or (with as_of) the log", body = StockResponse),
              (status = 404, description = "NOT_FOUND: never received (without as_of; a past moment before the first receipt has zeros)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn stock(
    State(s): State<AppState>,
    _: Can<ToRead>,
    ApiPath(SkuPath { sku }): ApiPath<SkuPath>,
    ApiQuery(q): ApiQuery<StockQuery>,
) -> Result<Json<StockResponse>, ApiError> {
    let item = Item {
        sku: Sku::parse("sku", &sku)?,
        location: Location::parse_or_default("location", q.location.as_deref())?,
    };
    let (b, moment) = match AsOf::parse(q.as_of.as_deref(), q.as_of_position.as_deref())? {
        Some(a) => stock_as_of(&s, &item, a).await?,
        None => {
            let now = s
                .store
                .stock_now(&item)
                .await?
                .ok_or_else(|| Rejection::never_received(&item))?;
            (now.figures, api::now(now.position, now.recorded_at))
        }
    };
    Ok(Json(api::stock(&item, b, moment)))
}

/// An item's figures at a past moment, replayed from the log. Heavy: it waits
/// for a permit (within the request timeout), so that at most a few run at
/// once and commands keep their connections.
async fn stock_as_of(
    s: &AppState,
    item: &Item,
    a: AsOf,
) -> Result<(Balance, crate::api::AsOf), ApiError> {
    let _permit = s
        .heavy_reads
        .acquire()
        .await
        .map_err(|_| ApiError::unavailable("the server is shutting down"))?;
    let f = s.store.stock_as_of(item, a).await?;
    Ok((f.figures, api::past(&f)))
}

#[utoipa::path(get, path = "/v1/orders/{order_id}", operation_id = "getOrder", tag = "reads", params(OrderPath),
    responses((status = 200, description = "the per-order view", body = OrderResponse),
              (status = 404, description = "NOT_FOUND", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn order(
    State(s): State<AppState>,
    _: Can<ToRead>,
    ApiPath(OrderPath { order_id }): ApiPath<OrderPath>,
) -> Result<Json<OrderResponse>, ApiError> {
    let order = OrderId::parse("order_id", &order_id)?;
    if let Some(row) = s.store.order_view(&order).await? {
        return Ok(Json(api::order(row)));
    }
    // Not projected yet (the read model lags a little): answer from the log,
    // in the same shape.
    let from_log = s.store.order_history(&order).await?;
    match from_log.as_ref().and_then(api::order_from_log) {
        Some(answer) => Ok(Json(answer)),
        None => Err(Rejection::NotFound {
            what: "order",
            key: order_id,
        }
        .into()),
    }
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    #[param(schema_with = contract::cursor)]
    after: Option<String>,
    #[param(schema_with = contract::events_limit)]
    limit: Option<String>,
    #[param(schema_with = contract::stream_prefix)]
    stream: Option<String>,
}

#[utoipa::path(get, path = "/v1/events", operation_id = "listEvents", tag = "reads", params(EventsQuery),
    responses((status = 200, description = "a page of the log in safe commit order; read on with `next` as `after` until `next` comes back equal to `after`. A page filtered by `stream` looks at no more than 20,000 events of the log (MAX_EVENTS_SCANNED_PER_FILTERED_READ), so it may be short, or empty, before the end", body = EventsPage)),
    security(("bearer" = [])))]
pub async fn events(
    State(s): State<AppState>,
    _: Can<ToAudit>,
    ApiQuery(q): ApiQuery<EventsQuery>,
) -> Result<Json<EventsPage>, ApiError> {
    let after = match q.after {
        Some(a) => a.parse::<Cursor>()?,
        None => Cursor::START,
    };
    let limit = page_limit(q.limit.as_deref())?;
    if let Some(prefix) = &q.stream {
        let len = prefix.chars().count();
        if len == 0 || len > MAX_STREAM_PREFIX_LEN {
            let reason = format!("must be 1 to {MAX_STREAM_PREFIX_LEN} characters");
            return Err(Rejection::invalid("stream", reason).into());
        }
        crate::domain::text::check("stream", prefix)?;
    }
    // A filtered page may walk up to MAX_EVENTS_SCANNED_PER_FILTERED_READ
    // events to fill itself: heavy, so it waits for a permit like the other
    // heavy reads, within the request timeout.
    let _permit = match q.stream {
        Some(_) => Some(
            s.heavy_reads
                .acquire()
                .await
                .map_err(|_| ApiError::unavailable("the server is shutting down"))?,
        ),
        None => None,
    };
    let page = s.store.events(after, limit, q.stream.as_deref()).await?;
    Ok(Json(api::events_page(&page)))
}

#[utoipa::path(get, path = "/v1/digest", operation_id = "getDigest", tag = "reads",
    responses((status = 200, description = "the latest seal of the log, to keep outside the database (docs/auditing.md)", body = DigestResponse),
              (status = 404, description = "NOT_FOUND: nothing is sealed yet", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn digest(
    State(s): State<AppState>,
    _: Can<ToAudit>,
) -> Result<Json<DigestResponse>, ApiError> {
    match s.store.digest().await? {
        Some(d) => Ok(Json(api::digest(d))),
        None => Err(Rejection::NotFound {
            what: "seal",
            key: "latest".into(),
        }
        .into()),
    }
}

#[utoipa::path(get, path = "/v1/low-stock", operation_id = "listLowStock", tag = "reads",
    responses((status = 200, description = "the items whose available stock is below their reorder point, from the low_stock read model", body = LowStockResponse)),
    security(("bearer" = [])))]
pub async fn low_stock(
    State(s): State<AppState>,
    _: Can<ToRead>,
) -> Result<Json<LowStockResponse>, ApiError> {
    let (items, truncated) = s.store.low_stock().await?;
    Ok(Json(api::low_stock(&items, truncated)))
}

#[utoipa::path(get, path = "/v1/projections", operation_id = "listProjections", tag = "reads",
    responses((status = 200, description = "each projection's checkpoint, lag and state", body = ProjectionsResponse)),
    security(("bearer" = [])))]
pub async fn projections(
    State(s): State<AppState>,
    _: Can<ToAudit>,
) -> Result<Json<ProjectionsResponse>, ApiError> {
    let all = s.store.projection_status().await?;
    Ok(Json(api::projections(all)))
}
