//! Operational routes: liveness, readiness, metrics and the API description.
//! None needs a key.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::limits::METRICS_CACHE_MS;
use crate::server::error::ApiError;
use crate::server::metrics::Gauges;
use crate::server::AppState;

/// `200` while the process runs.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "operations", responses((status = 200, description = "the process runs", body = crate::server::openapi::Status)))]
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// `200` when the database answers and its schema is what this binary expects.
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "operations",
    responses((status = 200, description = "the database answers and migrations are current", body = crate::server::openapi::Status),
              (status = 503, description = "UNAVAILABLE", body = crate::server::openapi::ErrorBody)))]
pub async fn readyz(State(s): State<AppState>) -> Response {
    match s.store.pending_migrations().await {
        Ok(pending) if pending.is_empty() => Json(json!({"status": "ready"})).into_response(),
        Ok(pending) => ApiError::Unavailable {
            reason: "the database schema is older than this server",
            detail: format!("migrations {pending:?} are not applied"),
        }
        .into_response(),
        Err(e) => ApiError::Unavailable {
            reason: e.public_reason(),
            detail: e.to_string(),
        }
        .into_response(),
    }
}

/// Prometheus (OpenMetrics) text: commands by type and outcome, latency
/// histograms, pool use, projection lag, expiries, reservations by state.
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "operations", responses((status = 200, description = "OpenMetrics text format", content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8", body = String)))]
pub async fn metrics(State(s): State<AppState>) -> Response {
    let status = s.store.pool_status();
    let read = s.scrape.get(&s).await;
    let gauges = Gauges {
        pool_size: status.size,
        pool_available: status.available,
        pool_waiting: status.waiting,
        projections: read.lag,
        reservations: read.totals,
        relays: read.relays,
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, crate::server::metrics::CONTENT_TYPE)],
        s.metrics.render(&gauges),
    )
        .into_response()
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi", tag = "operations", responses((status = 200, description = "the OpenAPI 3.1 description", body = Object)))]
pub async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::server::openapi::document(),
    )
        .into_response()
}

/// What `/metrics` reads from the database: projection lag as (name, lag in
/// events, lag in seconds), and reservations and units by state.
#[derive(Clone, Default)]
struct Read {
    lag: Vec<(&'static str, i64, f64)>,
    totals: Vec<(String, i64, i64)>,
    relays: Vec<(String, i64, i64)>,
}

/// What `/metrics` reads from the database, read at most once per
/// `METRICS_CACHE_MS`: a scrape costs no more than a cached read, however
/// many scrapers there are, and concurrent scrapes share one read.
#[derive(Default)]
pub struct ScrapeCache {
    cached: tokio::sync::Mutex<Option<(std::time::Instant, Read)>>,
}

impl ScrapeCache {
    async fn get(&self, s: &AppState) -> Read {
        let mut cached = self.cached.lock().await;
        if let Some((at, read)) = cached.as_ref() {
            if at.elapsed() < std::time::Duration::from_millis(METRICS_CACHE_MS) {
                return read.clone();
            }
        }
        // Metrics must answer even when the database does not: what cannot
        // be read is left out.
        let lag = match s.store.projection_status().await {
            Ok(all) => all
                .into_iter()
                .map(|p| (p.name, p.live.lag_events, p.live.lag_seconds))
                .collect(),
            Err(_) => Vec::new(),
        };
        let totals = match s.store.reservation_totals().await {
            Ok(t) => t.into_iter().map(|(state, (n, u))| (state, n, u)).collect(),
            Err(_) => Vec::new(),
        };
        let relays = match crate::relay::status(&s.store).await {
            Ok(all) => all
                .into_iter()
                .map(|r| (r.stream, r.published, r.lag_events))
                .collect(),
            Err(_) => Vec::new(),
        };
        let read = Read {
            lag,
            totals,
            relays,
        };
        *cached = Some((std::time::Instant::now(), read.clone()));
        read
    }
}
