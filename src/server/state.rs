//! The server's settings and the state every handler can reach.

use std::sync::Arc;
use std::time::Duration;

use crate::limits::{
    DEFAULT_EXPIRY_INTERVAL_MS, DEFAULT_KEY_CACHE_SECONDS, DEFAULT_RATE_LIMIT_BURST,
    DEFAULT_RATE_LIMIT_PER_SECOND, DEFAULT_REQUEST_TIMEOUT_MS, KEY_LOOKUPS_PER_ADDRESS_BURST,
    KEY_LOOKUPS_PER_ADDRESS_PER_SECOND, MAX_EXPIRIES_PER_PASS, MAX_HEAVY_READS_IN_FLIGHT,
    MAX_KEY_LOOKUPS_IN_FLIGHT, OPS_REQUESTS_PER_ADDRESS_BURST, OPS_REQUESTS_PER_ADDRESS_PER_SECOND,
    READINESS_CHECK_INTERVAL_MS,
};
use crate::server::key_cache::KeyCache;
use crate::server::listener;
use crate::server::metrics::Metrics;
use crate::server::ops;
use crate::server::rate::{ChargedAfter, RateLimiter};
use crate::store::Store;

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
    /// Run the expiry worker and the backorder worker (both send the
    /// ledger's own commands, at `expiry_interval`).
    pub run_expiry: bool,
    /// Run the sealer (tamper evidence) in this process.
    pub run_sealer: bool,
    pub expiry_interval: Duration,
    pub expiry_batch: i64,
    /// Run the event relay in this process: the broker's URL and the relay's
    /// settings.
    pub relay: Option<(String, crate::relay::RelayConfig)>,
    /// `GET /v1/events/stream`: subscribers at once, and the quiet time
    /// after which a heartbeat comment is sent.
    pub stream_subscribers: usize,
    pub stream_heartbeat: Duration,
    /// How long one event stream may last before it ends (the client
    /// resumes with `Last-Event-ID`); its key is checked again every
    /// `key_cache` period while it lasts.
    pub stream_lifetime: Duration,
    pub connections: listener::ConnectionLimits,
    /// `/metrics` answers only callers with a key (any role): its figures
    /// (reservations and units by state, commands by outcome) are the
    /// business's, and an operator may not want them public.
    pub metrics_key_required: bool,
    /// The routes that need no key, per client address: sustained requests
    /// per second and burst.
    pub ops_rate_per_second: u32,
    pub ops_rate_burst: u32,
    /// How often the database's readiness is checked in the background
    /// (`/readyz` answers from the last check).
    pub readiness_interval: Duration,
    /// The address the server listens on, which `serve` fills in: in
    /// development mode a request must be addressed to it (`dev_guard`).
    pub bound: Option<std::net::SocketAddr>,
    /// A failure injected by a test: a worker that panics once. Never set
    /// outside tests; no flag sets it.
    #[doc(hidden)]
    pub injected_panic: Option<crate::server::supervise::PanicOnce>,
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
            run_sealer: true,
            expiry_interval: Duration::from_millis(DEFAULT_EXPIRY_INTERVAL_MS),
            expiry_batch: MAX_EXPIRIES_PER_PASS,
            relay: None,
            stream_subscribers: crate::limits::MAX_EVENT_STREAM_SUBSCRIBERS,
            stream_heartbeat: Duration::from_secs(crate::limits::EVENT_STREAM_HEARTBEAT_SECONDS),
            stream_lifetime: Duration::from_secs(crate::limits::EVENT_STREAM_MAX_SECONDS),
            connections: listener::ConnectionLimits::default(),
            metrics_key_required: false,
            ops_rate_per_second: OPS_REQUESTS_PER_ADDRESS_PER_SECOND,
            ops_rate_burst: OPS_REQUESTS_PER_ADDRESS_BURST,
            readiness_interval: Duration::from_millis(READINESS_CHECK_INTERVAL_MS),
            bound: None,
            injected_panic: None,
        }
    }
}

impl ServerConfig {
    /// Whether this server may listen on `addr`. Development mode checks no
    /// keys, so it may listen only on a loopback address: anyone who can
    /// reach the port would be an admin.
    pub fn check_listen_address(&self, addr: std::net::SocketAddr) -> std::io::Result<()> {
        if self.dev && !addr.ip().to_canonical().is_loopback() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "refusing --dev on {addr}: development mode checks no API keys, so it \
                     listens only on a loopback address (127.0.0.1, ::1)"
                ),
            ));
        }
        Ok(())
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
    /// What `/metrics` reads from the database (projection lag, reservations
    /// by state), read at most once per `METRICS_CACHE_MS`, however often it
    /// is scraped.
    pub scrape: Arc<ops::ScrapeCache>,
    /// Permits for heavy reads (as-of figures, history), so they cannot take
    /// the connections and the time commands need.
    pub heavy_reads: Arc<tokio::sync::Semaphore>,
    /// Permits for event-stream subscribers (`GET /v1/events/stream`).
    pub subscribers: Arc<tokio::sync::Semaphore>,
    /// Open event streams by key name (`MAX_EVENT_STREAMS_PER_KEY`).
    pub streams_by_key: Arc<crate::server::stream::StreamsByKey>,
    /// Fires when the server starts to shut down, so that endless answers
    /// (event streams) end and the drain can finish.
    pub closing: tokio_util::sync::CancellationToken,
    /// The last readiness check and the workers' states (`/readyz`, `/metrics`).
    pub health: Arc<crate::server::health::Health>,
    /// The routes that need no key, per client address.
    pub ops_limiter: Arc<RateLimiter>,
}

impl AppState {
    pub fn new(
        store: Store,
        config: ServerConfig,
        closing: tokio_util::sync::CancellationToken,
    ) -> AppState {
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
            scrape: Arc::new(ops::ScrapeCache::default()),
            heavy_reads: Arc::new(tokio::sync::Semaphore::new(MAX_HEAVY_READS_IN_FLIGHT)),
            subscribers: Arc::new(tokio::sync::Semaphore::new(config.stream_subscribers)),
            streams_by_key: Arc::default(),
            closing,
            health: Arc::new(crate::server::health::Health::new(
                config.readiness_interval,
            )),
            ops_limiter: Arc::new(RateLimiter::new(
                config.ops_rate_per_second,
                config.ops_rate_burst,
            )),
            config: Arc::new(config),
        }
    }
}
