//! `stockledger serve`: the HTTP API of `shared/design/http-api.md`, with the
//! projection workers, the expiry worker and the sealer in the same process
//! (each can be switched off for deployments that run them apart).
//!
//! Every worker runs supervised (`supervise`): one that panics is started
//! again after a back-off, and counted.
//!
//! The world is passed in: `serve` takes a bound listener, a store, its
//! settings and a shutdown token. On
//! shutdown it stops accepting, finishes the requests in flight, then stops
//! the workers after their current batch.

pub mod auth;
mod commands;
mod console;
mod dev_guard;
pub mod error;
mod expected;
pub mod health;
mod json;
mod key_cache;
pub mod listener;
pub mod metrics;
pub mod openapi;
mod ops;
mod overview;
mod params;
mod rate;
mod reads;
mod route_table;
mod routes;
mod state;
mod stream;
pub mod supervise;

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
    config.check_listen_address(listener.local_addr()?)?;
    // Development mode answers only requests addressed to this address.
    let config = ServerConfig {
        bound: Some(listener.local_addr()?),
        ..config
    };
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
    // Every worker is supervised: one that panics is started again.
    let supervisor = supervise::Supervisor {
        health: state.health.clone(),
        metrics: state.metrics.clone(),
        fault: config.injected_panic.clone(),
        cancel: workers.clone(),
    };
    let mut tasks = spawn_workers(&supervisor, &store, commits, &config);
    info!(address = %listener.local_addr()?, "serving");
    let served = listener::serve(listener, router(state), config.connections, shutdown).await;
    // Requests are drained; now the workers finish their batch and stop.
    workers.cancel();
    while tasks.join_next().await.is_some() {}
    served
}

/// The workers this server runs (the readiness check always; the others as
/// `config` says), each under `supervisor`.
fn spawn_workers(
    supervisor: &supervise::Supervisor,
    store: &Store,
    commits: std::sync::Arc<tokio::sync::Notify>,
    config: &ServerConfig,
) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    let workers = &supervisor.cancel;
    {
        let (store, health, every, cancel) = (
            store.clone(),
            supervisor.health.clone(),
            config.readiness_interval,
            workers.clone(),
        );
        tasks.spawn(supervisor.clone().run("readiness", move || {
            health::check_database(store.clone(), health.clone(), every, cancel.clone())
        }));
    }
    if config.run_projections {
        let (pool, cancel) = (store.pool().clone(), workers.clone());
        tasks.spawn(supervisor.clone().run("projections", move || {
            worker::run_all(
                pool.clone(),
                commits.clone(),
                cancel.clone(),
                worker::WorkerConfig::default(),
            )
        }));
    }
    if config.run_sealer {
        let (pool, cancel) = (store.pool().clone(), workers.clone());
        tasks.spawn(supervisor.clone().run("sealer", move || {
            crate::seal::sealer::run(
                pool.clone(),
                crate::seal::sealer::default_interval(),
                cancel.clone(),
            )
        }));
    }
    if config.run_expiry {
        let (store, metrics, cancel) = (store.clone(), supervisor.metrics.clone(), workers.clone());
        let (interval, batch) = (config.expiry_interval, config.expiry_batch);
        tasks.spawn(supervisor.clone().run("expiry", move || {
            let metrics = metrics.clone();
            crate::app::expiry::run(store.clone(), interval, batch, cancel.clone(), move |n| {
                metrics.expired(n)
            })
        }));
    }
    if config.run_expiry {
        let (store, metrics, cancel) = (store.clone(), supervisor.metrics.clone(), workers.clone());
        let interval = config.expiry_interval;
        tasks.spawn(supervisor.clone().run("backorders", move || {
            let metrics = metrics.clone();
            crate::app::backorders::run(store.clone(), interval, cancel.clone(), move |n| {
                metrics.filled(n)
            })
        }));
    }
    if let Some((url, relay_config)) = config.relay.clone() {
        let (store, cancel) = (store.clone(), workers.clone());
        tasks.spawn(supervisor.clone().run("relay", move || {
            run_relay(
                store.clone(),
                url.clone(),
                relay_config.clone(),
                cancel.clone(),
            )
        }));
    }
    tasks
}

/// The event relay inside the server. A failure that waiting cannot mend
/// (the stream deleted) stops the relay, not the server: it is logged, the
/// relay shows as `stopped` in `/readyz` and `stockledger_worker_up`, and its
/// lag keeps growing in `/metrics` for an operator to see.
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
