//! `stockledger serve`: the HTTP API of `shared/design/http-api.md`, with the
//! projection workers and the expiry worker in the same process (each can be
//! switched off for deployments that run them apart).
//!
//! The world is passed in: `serve` takes a bound listener, a store, the
//! connection settings for LISTEN, its settings and a shutdown token. On
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

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::projection::worker;
use crate::store::Store;

pub use routes::{current_correlation_id, router, CAUSATION_HEADER, CORRELATION_HEADER};
pub use state::{AppState, ServerConfig};

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
