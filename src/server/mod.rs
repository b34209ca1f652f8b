//! `stockledger serve`: the HTTP API of `shared/design/http-api.md`, with the
//! projection workers, the expiry worker and the sealer in the same process
//! (each can be switched off for deployments that run them apart).
//!
//! The world is passed in: `serve` takes a bound listener, a store, its
//! settings and a shutdown token. On
//! shutdown it stops accepting, finishes the requests in flight, then stops
//! the workers after their current batch.

pub mod auth;
mod commands;
pub mod error;
mod json;
mod key_cache;
pub mod listener;
pub mod metrics;
pub mod openapi;
mod ops;
mod params;
mod rate;
mod reads;
mod routes;
mod state;
mod stream;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::projection::worker;
use crate::store::Store;

pub use routes::{current_correlation_id, router, CAUSATION_HEADER, CORRELATION_HEADER};
pub use state::{AppState, ServerConfig};

/// The part of a request's time its command may take, all attempts and
/// waits for a connection together: all but `ANSWER_MARGIN_MS`, and at least
/// half of it.
pub fn command_deadline(request_timeout: std::time::Duration) -> std::time::Duration {
    let margin = std::time::Duration::from_millis(crate::limits::ANSWER_MARGIN_MS);
    request_timeout
        .saturating_sub(margin)
        .max(request_timeout / 2)
}

/// Serves until `shutdown` fires, then drains and stops the workers.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Store,
    config: ServerConfig,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    if config.dev {
        let banner = "DEVELOPMENT MODE: no API keys are checked; every caller is an admin. Never expose this server.";
        warn!("{banner}");
        eprintln!("\n  !!! {banner} !!!\n");
    }
    // A command may take most of its request's time (waiting out a failover,
    // say); the rest is kept for answering.
    // Commands that append events wake the projection runner in-process.
    let commits = std::sync::Arc::new(tokio::sync::Notify::new());
    let store = store
        .with_command_deadline(command_deadline(config.request_timeout))
        .with_commit_signal(commits.clone());
    // Concurrent requests share transactions (group commit); the workers use
    // the plain store.
    let state = AppState::new(
        store.grouped(crate::store::group::GroupConfig::default()),
        config.clone(),
        shutdown.clone(),
    );
    let workers = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    if config.run_projections {
        tasks.spawn(worker::run_all(
            store.pool().clone(),
            commits,
            workers.clone(),
            worker::WorkerConfig::default(),
        ));
    }
    if config.run_sealer {
        tasks.spawn(crate::seal::sealer::run(
            store.pool().clone(),
            crate::seal::sealer::default_interval(),
            workers.clone(),
        ));
    }
    let store_for_relay = store.clone();
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
    if let Some((url, relay_config)) = config.relay.clone() {
        tasks.spawn(run_relay(
            store_for_relay,
            url,
            relay_config,
            workers.clone(),
        ));
    }
    info!(address = %listener.local_addr()?, "serving");
    let served = listener::serve(listener, router(state), config.connections, shutdown).await;
    // Requests are drained; now the workers finish their batch and stop.
    workers.cancel();
    while tasks.join_next().await.is_some() {}
    served
}

/// The event relay inside the server. A failure that waiting cannot mend
/// (the stream deleted) stops the relay, not the server: it is logged, and
/// the relay's lag keeps growing in `/metrics` for an operator to see.
async fn run_relay(
    store: Store,
    url: String,
    config: crate::relay::RelayConfig,
    cancel: CancellationToken,
) {
    let result = match crate::relay::connect(&url).await {
        Ok(client) => crate::relay::run(store, crate::relay::context(client), config, cancel).await,
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        tracing::error!(error = %e, "the event relay stopped");
    }
}
