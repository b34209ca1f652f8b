//! The reads an operator's overview needs beyond the ledger's own (the
//! console's pages, `console.rs`): who a key is, the reservations about to
//! expire, the event relays' standing, and where the log ends now.

use axum::extract::State;
use axum::Json;

use crate::server::auth::{Can, ToAudit, ToList, ToRead};
use crate::server::error::ApiError;
use crate::server::openapi::{
    EventsHead, ExpiringReservation, ExpiringReservationsResponse, MeResponse, RelaysResponse,
};
use crate::server::AppState;

#[utoipa::path(get, path = "/v1/me", operation_id = "getMe", tag = "reads",
    responses((status = 200, description = "the key's name and role: what a console shows and hides by", body = MeResponse)),
    security(("bearer" = [])))]
pub async fn me(Can { caller, .. }: Can<ToRead>) -> Json<MeResponse> {
    Json(MeResponse {
        name: caller.name,
        role: caller.role.as_str().to_owned(),
    })
}

#[utoipa::path(get, path = "/v1/expiring-reservations", operation_id = "listExpiringReservations", tag = "reads",
    responses((status = 200, description = "the held reservations that expire soonest, soonest first (at most 100), from the reservation_expiry read model; for writer, auditor and admin keys (a listing names orders the caller did not ask for by id)", body = ExpiringReservationsResponse)),
    security(("bearer" = [])))]
pub async fn expiring(
    State(s): State<AppState>,
    _: Can<ToList>,
) -> Result<Json<ExpiringReservationsResponse>, ApiError> {
    let (rows, truncated) = s.store.expiring_soonest().await?;
    let reservations = rows
        .into_iter()
        .map(|(reservation_id, row)| ExpiringReservation {
            reservation_id,
            order_id: row.order_id,
            expires_at: row.expires_at,
        })
        .collect();
    Ok(Json(ExpiringReservationsResponse {
        reservations,
        truncated,
    }))
}

#[utoipa::path(get, path = "/v1/relays", operation_id = "listRelays", tag = "reads",
    responses((status = 200, description = "each event relay's checkpoint: what it published and how far it is behind the log", body = RelaysResponse)),
    security(("bearer" = [])))]
pub async fn relays(
    State(s): State<AppState>,
    _: Can<ToAudit>,
) -> Result<Json<RelaysResponse>, ApiError> {
    let relays = crate::relay::status(&s.store).await?;
    Ok(Json(RelaysResponse { relays }))
}

#[utoipa::path(get, path = "/v1/events/head", operation_id = "getEventsHead", tag = "reads",
    responses((status = 200, description = "the cursor of the log's last event now, in safe commit order: follow the stream after it to see only what comes next", body = EventsHead)),
    security(("bearer" = [])))]
pub async fn events_head(
    State(s): State<AppState>,
    _: Can<ToAudit>,
) -> Result<Json<EventsHead>, ApiError> {
    let cursor = s.store.events_head().await?;
    Ok(Json(EventsHead {
        cursor: cursor.to_string(),
    }))
}
