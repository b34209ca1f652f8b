//! Operational routes: liveness, readiness, metrics and the API description.
//! None needs a key.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::server::error::ApiError;
use crate::server::metrics::Gauges;
use crate::server::AppState;
use crate::store::{migrate, pool};

/// `200` while the process runs.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "the process runs")))]
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// `200` when the database answers and its schema is what this binary expects.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, description = "the database answers and migrations are current"),
              (status = 503, description = "UNAVAILABLE", body = crate::server::openapi::ErrorBody)))]
pub async fn readyz(State(s): State<AppState>) -> Response {
    let check = async {
        let client = pool::get(s.store.pool()).await?;
        migrate::pending(&client).await
    };
    match check.await {
        Ok(pending) if pending.is_empty() => Json(json!({"status": "ready"})).into_response(),
        Ok(pending) => {
            ApiError::Unavailable(format!("migrations {pending:?} are not applied")).into_response()
        }
        Err(e) => ApiError::Unavailable(e.to_string()).into_response(),
    }
}

/// Prometheus text: commands by type and outcome, latency histograms, pool
/// use, projection lag, expiries.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(s): State<AppState>) -> Response {
    let status = s.store.pool().status();
    let projections = async {
        let client = pool::get(s.store.pool()).await?;
        crate::projection::status::status(&**client).await
    };
    let projections = match projections.await {
        Ok(all) => all
            .into_iter()
            .map(|p| (p.name, p.live.lag_events, p.live.lag_seconds))
            .collect(),
        // Metrics must answer even when the database does not.
        Err(_) => Vec::new(),
    };
    let gauges = Gauges {
        pool_size: status.size,
        pool_available: status.available,
        pool_waiting: status.waiting,
        projections,
    };
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        s.metrics.render(&gauges),
    )
        .into_response()
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations", responses((status = 200, description = "the OpenAPI 3.1 description")))]
pub async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::server::openapi::document(),
    )
        .into_response()
}
