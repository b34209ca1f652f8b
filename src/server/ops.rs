//! Operational routes: liveness, readiness, metrics and the API description.
//! None needs a key (`/metrics` does when the operator says so); all are
//! rate-limited per client address (`ops_limit`), and none reads the
//! database itself on every call: readiness comes from the check the server
//! runs in the background (`health`), metrics from a cached read.

use crate::api::{Readiness, Status};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::limits::METRICS_CACHE_MS;
use crate::server::auth::{Can, ToRead};
use crate::server::error::ApiError;
use crate::server::health::WorkerState;
use crate::server::metrics::Gauges;
use crate::server::AppState;

/// `200` while the process runs.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "operations", responses((status = 200, description = "the process runs", body = Status)))]
pub async fn healthz() -> Json<Status> {
    Json(Status {
        status: "ok".into(),
    })
}

/// `200` when the database answered the server's last readiness check (run
/// in the background, at most `READINESS_CHECK_INTERVAL_MS` old) and its
/// schema is what this binary expects; the body names each worker's state.
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "operations",
    responses((status = 200, description = "the database answers and migrations are current", body = Readiness)))]
pub async fn readyz(State(s): State<AppState>) -> Response {
    match s.health.readiness().await {
        Ok(()) => {
            let workers = s
                .health
                .workers()
                .into_iter()
                .map(|(name, state)| (name.to_owned(), state))
                .collect();
            Json(Readiness {
                status: "ready".into(),
                workers,
            })
            .into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// Every route without a key passes this first: a budget per client
/// address, so an unauthenticated caller cannot make the server work
/// without bound.
pub async fn ops_limit(
    State(s): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let address = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map_or_else(String::new, |c| c.0.ip().to_string());
    match s.ops_limiter.check(&address) {
        Ok(()) => next.run(req).await,
        Err(retry_after) => ApiError::RateLimited { retry_after }.into_response(),
    }
}

/// Prometheus (OpenMetrics) text: commands by type and outcome, latency
/// histograms, pool use, projection lag, how far the seals are behind,
/// expiries, reservations by state, the log's attached partitions, key
/// lookups by outcome, whether the database is up and how old the figures
/// read from it are, workers and their restarts. The business's own figures
/// (reservations and units by state) only for callers with a key (any
/// role); with `--metrics-key-required`, every figure.
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "operations", responses((status = 200, description = "OpenMetrics text format; reservations and units by state only with a key", content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8", body = String),
    (status = 401, description = "UNAUTHENTICATED (a key that is not valid, or none with --metrics-key-required)", body = crate::server::openapi::ErrorBody)))]
pub async fn metrics(State(s): State<AppState>, req: axum::extract::Request) -> Response {
    // A key, when one is sent, must be valid: a scraper whose key was
    // revoked hears so, instead of silently losing the business series.
    // In development mode every caller is an admin, so it sees everything.
    let keyed = s.config.dev
        || s.config.metrics_key_required
        || req.headers().contains_key(header::AUTHORIZATION);
    if keyed {
        let (mut parts, _) = req.into_parts();
        if let Err(e) =
            <Can<ToRead> as axum::extract::FromRequestParts<AppState>>::from_request_parts(
                &mut parts, &s,
            )
            .await
        {
            return e.into_response();
        }
    }
    let status = s.store.pool_status();
    let read = s.scrape.get(&s).await;
    let gauges = Gauges {
        pool_size: status.size,
        pool_available: status.available,
        pool_waiting: status.waiting,
        projections: read.lag,
        reservations: if keyed { read.totals } else { Vec::new() },
        relays: read.relays,
        partitions: read.partitions,
        seal: read.seal.map(|l| (l.events, l.seconds)),
        database_up: s.health.database_up().unwrap_or(false),
        figures_age_seconds: s.scrape.figures_age().as_secs_f64(),
        workers: s
            .health
            .workers()
            .into_iter()
            .map(|(name, state)| (name, state == WorkerState::Running))
            .collect(),
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
/// events, lag in seconds), reservations and units by state, the relays'
/// progress and the partitions attached by table.
#[derive(Clone, Default)]
struct Read {
    lag: Vec<(&'static str, i64, f64)>,
    totals: Vec<(String, i64, i64)>,
    relays: Vec<(String, i64, i64)>,
    partitions: Vec<(String, i64)>,
    seal: Option<crate::store::lag::Lag>,
}

async fn seal_lag(s: &AppState) -> Result<crate::store::lag::Lag, crate::store::StoreError> {
    // Cancelled on the server if the scrape stops waiting.
    crate::store::pool::reading(s.store.pool(), async |client| {
        crate::seal::sealer::lag(client).await
    })
    .await
}

/// What `/metrics` reads from the database, read at most once per
/// `METRICS_CACHE_MS`: a scrape costs no more than a cached read, however
/// many scrapers there are, and concurrent scrapes share one read.
pub struct ScrapeCache {
    cached: tokio::sync::Mutex<Option<(std::time::Instant, Read)>>,
    /// When every figure was last read (at first, when the server started).
    complete: std::sync::Mutex<std::time::Instant>,
}

impl Default for ScrapeCache {
    fn default() -> Self {
        ScrapeCache {
            cached: tokio::sync::Mutex::new(None),
            complete: std::sync::Mutex::new(std::time::Instant::now()),
        }
    }
}

impl ScrapeCache {
    /// How old the figures read from the database are.
    fn figures_age(&self) -> std::time::Duration {
        self.complete.lock().expect("scrape time").elapsed()
    }

    async fn get(&self, s: &AppState) -> Read {
        let mut cached = self.cached.lock().await;
        if let Some((at, read)) = cached.as_ref() {
            if at.elapsed() < std::time::Duration::from_millis(METRICS_CACHE_MS) {
                return read.clone();
            }
        }
        // Metrics must answer even when the database does not: what cannot
        // be read is left out (never its last value), and the figures' age
        // says since when.
        let mut complete = true;
        let lag = match s.store.projection_status().await {
            Ok(all) => all
                .into_iter()
                .map(|p| (p.name, p.live.lag_events, p.live.lag_seconds))
                .collect(),
            Err(_) => {
                complete = false;
                Vec::new()
            }
        };
        let totals = match s.store.reservation_totals().await {
            Ok(t) => t.into_iter().map(|(state, (n, u))| (state, n, u)).collect(),
            Err(_) => {
                complete = false;
                Vec::new()
            }
        };
        let relays = match crate::relay::status(&s.store).await {
            Ok(all) => all
                .into_iter()
                .map(|r| (r.stream, r.published, r.lag_events))
                .collect(),
            Err(_) => {
                complete = false;
                Vec::new()
            }
        };
        let partitions = match s.store.log_partitions().await {
            Ok(all) => all,
            Err(_) => {
                complete = false;
                Vec::new()
            }
        };
        let seal = match seal_lag(s).await {
            Ok(lag) => Some(lag),
            Err(_) => {
                complete = false;
                None
            }
        };
        if complete {
            *self.complete.lock().expect("scrape time") = std::time::Instant::now();
        }
        let read = Read {
            lag,
            totals,
            relays,
            partitions,
            seal,
        };
        *cached = Some((std::time::Instant::now(), read.clone()));
        read
    }
}
