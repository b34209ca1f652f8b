//! Supervising the workers the server runs beside its routes (projections,
//! sealer, expiry, relay, the readiness check).
//!
//! Each worker runs in a task of its own. A worker that panics is started
//! again after a back-off (doubled after each panic, reset once it has run a
//! while), the restart is logged and counted (`stockledger_worker_restarts`),
//! and its state shows in `/readyz` and `/metrics` meanwhile. A worker that
//! returns has ended on purpose (shutdown, or a failure it reported itself)
//! and is not started again.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::limits::{
    WORKER_HEALTHY_AFTER_MS, WORKER_RESTART_BACKOFF_MAX_MS, WORKER_RESTART_BACKOFF_START_MS,
};
use crate::server::health::{Health, WorkerState};
use crate::server::metrics::Metrics;

/// A failure a test injects: the named worker panics once, the next time it
/// starts. Only tests set it (`ServerConfig::injected_panic`; no flag does).
#[derive(Clone, Debug)]
pub struct PanicOnce {
    worker: &'static str,
    armed: Arc<AtomicBool>,
}

impl PanicOnce {
    pub fn new(worker: &'static str) -> PanicOnce {
        PanicOnce {
            worker,
            armed: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Whether `worker` is to panic now (true once at most).
    fn fires(&self, worker: &str) -> bool {
        self.worker == worker && self.armed.swap(false, Ordering::SeqCst)
    }
}

/// What every supervised worker shares: where it reports, and when to stop.
#[derive(Clone)]
pub struct Supervisor {
    pub health: Arc<Health>,
    pub metrics: Arc<Metrics>,
    pub fault: Option<PanicOnce>,
    pub cancel: CancellationToken,
}

impl Supervisor {
    /// Runs the worker `start` makes, and a new one each time it panics,
    /// until it returns or `cancel` fires.
    pub async fn run<F, Fut>(self, name: &'static str, mut start: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut backoff = Duration::from_millis(WORKER_RESTART_BACKOFF_START_MS);
        loop {
            self.health.set_worker(name, WorkerState::Running);
            let started = Instant::now();
            let worker = start();
            let fault = self.fault.clone();
            let run = tokio::spawn(async move {
                if fault.is_some_and(|f| f.fires(name)) {
                    panic!("a panic injected into the {name} worker by a test");
                }
                worker.await;
            });
            let panic = match run.await {
                Ok(()) => break,
                Err(e) if e.is_panic() => panic_message(e.into_panic()),
                Err(_) => break, // cancelled: the runtime is shutting down
            };
            if self.cancel.is_cancelled() {
                break;
            }
            if started.elapsed() >= Duration::from_millis(WORKER_HEALTHY_AFTER_MS) {
                backoff = Duration::from_millis(WORKER_RESTART_BACKOFF_START_MS);
            }
            self.metrics.worker_restarted(name);
            self.health.set_worker(name, WorkerState::Restarting);
            error!(
                worker = name,
                panic = %panic,
                backoff_ms = backoff.as_millis() as u64,
                "a worker panicked; starting it again after a back-off"
            );
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.cancel.cancelled() => break,
            }
            backoff = (backoff * 2).min(Duration::from_millis(WORKER_RESTART_BACKOFF_MAX_MS));
            info!(worker = name, "restarting a worker");
        }
        self.health.set_worker(name, WorkerState::Stopped);
    }
}

/// A panic's message, when it has one.
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}
