//! `stockledger serve`: the HTTP API of `shared/design/http-api.md`, with the
//! projection workers and the expiry worker in the same process (each can be
//! switched off for deployments that run them apart).
//!
//! The world is passed in: `serve` takes a bound listener, a store, the
//! connection settings for LISTEN, its settings and a shutdown token. On
//! shutdown it stops accepting, finishes the requests in flight, then stops
//! the workers after their current batch.

pub mod auth;
mod key_cache;
mod rate;
mod commands;
pub mod error;
mod json;
pub mod listener;
pub mod metrics;
pub mod openapi;
mod ops;
mod reads;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn, Instrument};

use crate::domain::Rejection;
use crate::limits::{
    DEFAULT_EXPIRY_BATCH, DEFAULT_EXPIRY_INTERVAL_MS, DEFAULT_KEY_CACHE_SECONDS,
    DEFAULT_RATE_LIMIT_BURST, DEFAULT_RATE_LIMIT_PER_SECOND, DEFAULT_REQUEST_TIMEOUT_MS,
    KEY_LOOKUPS_PER_ADDRESS_BURST, KEY_LOOKUPS_PER_ADDRESS_PER_SECOND, MAX_HEAVY_READS_IN_FLIGHT,
    MAX_KEY_LOOKUPS_IN_FLIGHT, MAX_METADATA_ID_LEN, MAX_REQUEST_BODY_BYTES,
};
use crate::projection::worker;
use crate::store::Store;
use key_cache::KeyCache;
use rate::{ChargedAfter, RateLimiter};
use error::ApiError;
use metrics::Metrics;

pub const CORRELATION_HEADER: &str = "x-correlation-id";
pub const CAUSATION_HEADER: &str = "x-causation-id";

tokio::task_local! {
    /// The correlation id of the request being answered, for error bodies.
    static CORRELATION_ID: String;
}

/// The correlation id of the request this task is answering, if any.
pub fn current_correlation_id() -> Option<String> {
    CORRELATION_ID.try_with(Clone::clone).ok()
}

/// Every setting of the server; the CLI fills it from flags and
/// `STOCKLEDGER_*` variables.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// No keys: every caller is an admin. Said loudly at start.
    pub dev: bool,
    pub request_timeout: Duration,
    pub rate_limit_per_second: u32,
    pub rate_limit_burst: u32,
    pub key_cache: Duration,
    pub run_projections: bool,
    pub run_expiry: bool,
    pub expiry_interval: Duration,
    pub expiry_batch: i64,
    pub connections: listener::ConnectionLimits,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            dev: false,
            request_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
            rate_limit_per_second: DEFAULT_RATE_LIMIT_PER_SECOND,
            rate_limit_burst: DEFAULT_RATE_LIMIT_BURST,
            key_cache: Duration::from_secs(DEFAULT_KEY_CACHE_SECONDS),
            run_projections: true,
            run_expiry: true,
            expiry_interval: Duration::from_millis(DEFAULT_EXPIRY_INTERVAL_MS),
            expiry_batch: DEFAULT_EXPIRY_BATCH,
            connections: listener::ConnectionLimits::default(),
        }
    }
}

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<ServerConfig>,
    pub keys: Arc<KeyCache>,
    pub limiter: Arc<RateLimiter>,
    /// Per client address: lookups of keys not in the cache that found none.
    pub lookups: Arc<ChargedAfter>,
    /// Key lookups running at once, whatever their address.
    pub lookups_in_flight: Arc<tokio::sync::Semaphore>,
    pub metrics: Arc<Metrics>,
    /// Projection lag for `/metrics`, read at most once per
    /// `METRICS_CACHE_MS`, however often it is scraped.
    pub lag: Arc<ops::LagCache>,
    /// Permits for heavy reads (as-of figures, history), so they cannot take
    /// the connections and the time commands need.
    pub heavy_reads: Arc<tokio::sync::Semaphore>,
}

impl AppState {
    pub fn new(store: Store, config: ServerConfig) -> AppState {
        AppState {
            store,
            keys: Arc::new(KeyCache::new(config.key_cache)),
            limiter: Arc::new(RateLimiter::new(
                config.rate_limit_per_second,
                config.rate_limit_burst,
            )),
            lookups: Arc::new(ChargedAfter::new(
                KEY_LOOKUPS_PER_ADDRESS_PER_SECOND,
                KEY_LOOKUPS_PER_ADDRESS_BURST,
            )),
            lookups_in_flight: Arc::new(tokio::sync::Semaphore::new(MAX_KEY_LOOKUPS_IN_FLIGHT)),
            metrics: Arc::new(Metrics::default()),
            lag: Arc::new(ops::LagCache::default()),
            heavy_reads: Arc::new(tokio::sync::Semaphore::new(MAX_HEAVY_READS_IN_FLIGHT)),
            config: Arc::new(config),
        }
    }
}

/// The router with every route of the contract.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/stock/receipts", post(commands::receive))
        .route("/v1/stock/adjustments", post(commands::adjust))
        .route("/v1/reservations", post(commands::reserve))
        .route("/v1/reservations/{id}/confirm", post(commands::confirm))
        .route("/v1/reservations/{id}/release", post(commands::release))
        .route("/v1/reservations/{id}", get(reads::reservation))
        .route("/v1/stock/{sku}", get(reads::stock))
        .route("/v1/orders/{order_id}", get(reads::order))
        .route("/v1/events", get(reads::events))
        .route("/v1/projections", get(reads::projections))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route("/openapi.json", get(ops::openapi))
        .fallback(|| async {
            ApiError::Rejected(Rejection::NotFound {
                what: "route",
                key: "here".into(),
            })
        })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY_BYTES))
        .with_state(state)
}

/// Per request: a correlation id (the caller's, or a new one), a tracing
/// span carrying it, the request timeout, one log line and the metrics.
async fn observe(
    State(state): State<AppState>,
    matched: Option<MatchedPath>,
    req: Request,
    next: Next,
) -> Response {
    let route = matched.map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let correlation = req
        .headers()
        .get(CORRELATION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= MAX_METADATA_ID_LEN)
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    let method = req.method().clone();
    // The correlation id comes from the caller: logged with Debug, so quotes,
    // spaces and control characters are escaped and cannot forge log fields.
    let span =
        tracing::info_span!("request", %method, route = %route, correlation_id = ?correlation);
    let started = Instant::now();
    let timeout = state.config.request_timeout;
    let inner = span.clone();
    let mut response = CORRELATION_ID
        .scope(correlation.clone(), async move {
            match tokio::time::timeout(timeout, next.run(req).instrument(inner)).await {
                Ok(r) => r,
                Err(_) => ApiError::unavailable("the request took longer than the server allows")
                    .into_response(),
            }
        })
        .await;
    let took = started.elapsed();
    let status = response.status().as_u16();
    state.metrics.request(&route, status, took);
    span.in_scope(|| info!(status, millis = took.as_secs_f64() * 1e3, "request"));
    if let Ok(v) = HeaderValue::from_str(&correlation) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(CORRELATION_HEADER), v);
    }
    response
}

/// Serves until `shutdown` fires, then drains and stops the workers.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Store,
    listen: tokio_postgres::Config,
    config: ServerConfig,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    if config.dev {
        let banner = "DEVELOPMENT MODE: no API keys are checked; every caller is an admin. Never expose this server.";
        warn!("{banner}");
        eprintln!("\n  !!! {banner} !!!\n");
    }
    // Concurrent requests share transactions (group commit); the workers use
    // the plain store.
    let state = AppState::new(
        store.grouped(crate::store::group::GroupConfig::default()),
        config.clone(),
    );
    let workers = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    if config.run_projections {
        tasks.spawn(worker::run_all(
            store.pool().clone(),
            listen,
            workers.clone(),
            worker::WorkerConfig::default(),
        ));
    }
    if config.run_expiry {
        let metrics = state.metrics.clone();
        tasks.spawn(crate::expiry::run(
            store,
            config.expiry_interval,
            config.expiry_batch,
            workers.clone(),
            move |n| metrics.expired(n),
        ));
    }
    info!(address = %listener.local_addr()?, "serving");
    let served = listener::serve(listener, router(state), config.connections, shutdown).await;
    // Requests are drained; now the workers finish their batch and stop.
    workers.cancel();
    while tasks.join_next().await.is_some() {}
    served
}
