//! What the server knows of its own health, kept up to date in the
//! background: whether the database answered the last readiness check (and
//! its schema is current), and the state of each worker.
//!
//! `/readyz` and `/metrics` answer from here and never touch the database
//! themselves, so a burst of probes costs the database nothing and a probe
//! is answered even when every pooled connection is busy.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::limits::{READINESS_CHECK_TIMEOUT_MS, READINESS_MAX_AGE_MS};
use crate::server::error::ApiError;
use crate::store::Store;

/// What one readiness check found.
#[derive(Clone, Debug)]
enum Outcome {
    Ready,
    /// The database answered, but these migrations are not applied.
    Behind(Vec<i32>),
    /// The database did not answer: `reason` for callers, `detail` for the log.
    Unreachable {
        reason: &'static str,
        detail: String,
    },
}

#[derive(Clone, Debug)]
struct Check {
    at: Instant,
    outcome: Outcome,
}

/// A worker's state, as `/readyz` and `/metrics` show it: the body's own
/// enum, served and documented as it is.
pub use crate::api::WorkerStateName as WorkerState;

pub struct Health {
    check: watch::Sender<Option<Check>>,
    /// A check older than this is not trusted.
    max_age: Duration,
    workers: Mutex<BTreeMap<&'static str, WorkerState>>,
}

impl Health {
    /// Health whose checks run every `interval`.
    pub fn new(interval: Duration) -> Health {
        Health {
            check: watch::Sender::new(None),
            max_age: Duration::from_millis(READINESS_MAX_AGE_MS).max(interval.saturating_mul(3)),
            workers: Mutex::new(BTreeMap::new()),
        }
    }

    fn record(&self, outcome: Outcome) {
        self.check.send_replace(Some(Check {
            at: Instant::now(),
            outcome,
        }));
    }

    /// Whether the database answered the last check: `None` before the
    /// first one, false too when the last one is too old to trust.
    pub fn database_up(&self) -> Option<bool> {
        let check = self.check.borrow();
        let check = check.as_ref()?;
        Some(
            check.at.elapsed() <= self.max_age
                && !matches!(check.outcome, Outcome::Unreachable { .. }),
        )
    }

    /// Ready, or why not. Before the first check it waits for it (a server
    /// just started is asked at once), bounded by the check's own timeout.
    pub async fn readiness(&self) -> Result<(), ApiError> {
        let mut seen = self.check.subscribe();
        let first = tokio::time::timeout(
            Duration::from_millis(READINESS_CHECK_TIMEOUT_MS),
            seen.wait_for(Option::is_some),
        )
        .await;
        let Ok(Ok(check)) = first else {
            return Err(ApiError::Unavailable {
                reason: "the server has not checked its database yet",
                detail: "no readiness check finished in time".into(),
            });
        };
        let check = check.clone().expect("waited for a check");
        if check.at.elapsed() > self.max_age {
            return Err(ApiError::Unavailable {
                reason: "the server has not checked its database recently",
                detail: format!("the last readiness check is {:?} old", check.at.elapsed()),
            });
        }
        match check.outcome {
            Outcome::Ready => Ok(()),
            Outcome::Behind(pending) => Err(ApiError::Unavailable {
                reason: "the database schema is older than this server",
                detail: format!("migrations {pending:?} are not applied"),
            }),
            Outcome::Unreachable { reason, detail } => {
                Err(ApiError::Unavailable { reason, detail })
            }
        }
    }

    pub fn set_worker(&self, name: &'static str, state: WorkerState) {
        self.workers
            .lock()
            .expect("worker states")
            .insert(name, state);
    }

    /// Every worker this server runs, by name.
    pub fn workers(&self) -> BTreeMap<&'static str, WorkerState> {
        self.workers.lock().expect("worker states").clone()
    }
}

/// The readiness check: every `interval`, whether the database answers
/// (within `READINESS_CHECK_TIMEOUT_MS`) and its schema is current.
pub async fn check_database(
    store: Store,
    health: std::sync::Arc<Health>,
    interval: Duration,
    cancel: CancellationToken,
) {
    while !cancel.is_cancelled() {
        let asked = tokio::time::timeout(
            Duration::from_millis(READINESS_CHECK_TIMEOUT_MS),
            store.pending_migrations(),
        )
        .await;
        health.record(match asked {
            Ok(Ok(pending)) if pending.is_empty() => Outcome::Ready,
            Ok(Ok(pending)) => Outcome::Behind(pending),
            Ok(Err(e)) => Outcome::Unreachable {
                reason: e.public_reason(),
                detail: e.to_string(),
            },
            Err(_) => Outcome::Unreachable {
                reason: "the database does not answer in time",
                detail: format!("the readiness check took over {READINESS_CHECK_TIMEOUT_MS} ms"),
            },
        });
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = cancel.cancelled() => {}
        }
    }
}
