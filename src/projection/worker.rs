//! The projection runner: one task that folds the log into every live
//! projection until cancelled.
//!
//! One active runner per database: it holds the session advisory lock of
//! every projection on its own connection (taken out of the pool, so the
//! locks die with the connection, never linger in an idle pooled one).
//! Others wait and take over when it dies. The checkpoint row locks of each
//! batch keep even a wrongly doubled runner exactly-once.
//!
//! Each batch reads one window of the log and applies it to every read model
//! in one transaction (`live.rs`). The runner is woken in-process when this
//! process's commands commit (the `wake` handed in) and polls anyway, which
//! is how it finds what other writers appended. While events keep coming it
//! waits `debounce` after a wake-up, so that one batch takes many commits
//! rather than one each; after a quiet spell the first commit is applied at
//! once.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{ClientWrapper, Pool};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::limits::{PROJECTION_BATCH_EVENTS, PROJECTION_DEBOUNCE_MS, PROJECTION_POLL_INTERVAL_MS};
use crate::projection::live::apply_live;
use crate::projection::ReadModel;
use crate::store::locks::{Lock, TRY_SESSION_LOCKS};
use crate::store::{pool, StoreError};

#[derive(Clone, Copy, Debug)]
pub struct WorkerConfig {
    pub batch_events: i64,
    pub poll_interval: Duration,
    /// How long a wake-up waits for more commits while events keep coming.
    pub debounce: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            batch_events: PROJECTION_BATCH_EVENTS,
            poll_interval: Duration::from_millis(PROJECTION_POLL_INTERVAL_MS),
            debounce: Duration::from_millis(PROJECTION_DEBOUNCE_MS),
        }
    }
}

/// Tries to become the runner of `models`. The locks are tried on a pooled
/// connection and only a connection that got them all is taken out of the
/// pool (the locks must die with it, never linger on a pooled one); one that
/// got only some gives them back, so a process that waits for another
/// runner opens and closes no connection.
async fn become_runner(
    pool: &Pool,
    models: &[&'static dyn ReadModel],
) -> Result<Option<ClientWrapper>, StoreError> {
    let client = pool::get(pool).await?;
    let names: Vec<String> = models
        .iter()
        .map(|p| Lock::ProjectionRunner(p.name()).name())
        .collect();
    // A connection that may hold some of the locks after an error is closed,
    // never handed back: a rollback does not release session locks.
    let got: bool = match client.query_one(TRY_SESSION_LOCKS, &[&names]).await {
        Ok(row) => row.get(0),
        Err(e) => {
            drop(deadpool_postgres::Object::take(client));
            return Err(e.into());
        }
    };
    if got {
        return Ok(Some(deadpool_postgres::Object::take(client)));
    }
    if let Err(e) = client
        .batch_execute("SELECT pg_advisory_unlock_all()")
        .await
    {
        drop(deadpool_postgres::Object::take(client));
        return Err(e.into());
    }
    Ok(None)
}

/// Waits for a wake-up, the poll interval or cancellation; returns whether
/// it was a wake-up.
async fn idle(wake: &Notify, cancel: &CancellationToken, config: WorkerConfig) -> bool {
    tokio::select! {
        _ = wake.notified() => true,
        _ = tokio::time::sleep(config.poll_interval) => false,
        _ = cancel.cancelled() => false,
    }
}

/// Runs every live projection until `cancel` fires; `wake` is notified when
/// commands of this process commit. A batch under way when `cancel` fires is
/// finished first.
pub async fn run_all(
    pool: Pool,
    wake: Arc<Notify>,
    cancel: CancellationToken,
    config: WorkerConfig,
) {
    let models = crate::projection::ALL;
    while !cancel.is_cancelled() {
        // Until it is the runner, a process looks again at the poll
        // interval, not at each of its commits.
        let wait = || async {
            tokio::select! {
                _ = tokio::time::sleep(config.poll_interval) => {}
                _ = cancel.cancelled() => {}
            }
        };
        let mut client = match become_runner(&pool, models).await {
            Ok(Some(c)) => c,
            Ok(None) => {
                wait().await;
                continue;
            }
            Err(e) => {
                warn!(error = %e, "projections cannot reach the database; will retry");
                wait().await;
                continue;
            }
        };
        info!("projections running");
        while !cancel.is_cancelled() {
            match apply_live(&mut client, models, config.batch_events).await {
                // A full batch: more is waiting.
                Ok(a) if a.events >= config.batch_events => {}
                Ok(a) => {
                    let woken = idle(&wake, &cancel, config).await;
                    if woken && a.events > 0 {
                        tokio::select! {
                            _ = tokio::time::sleep(config.debounce) => {}
                            _ = cancel.cancelled() => {}
                        }
                    }
                }
                Err(e) => {
                    // Dropping the connection releases the runner locks, so a
                    // healthy process can take over; a failure that repeats
                    // (a corrupt row, say) is tried again at the poll
                    // interval, not in a tight loop.
                    warn!(error = %e, "projection batch failed; reconnecting");
                    drop(client);
                    wait().await;
                    break;
                }
            }
        }
    }
    info!("projections stopped");
}

/// Brings every live projection up to the safe horizon once, for tools and
/// tests that need current read tables. It takes no runner lock, so it never
/// waits for a worker elsewhere; the checkpoint row lock keeps it exactly-once
/// alongside running workers.
pub async fn catch_up(pool: &Pool) -> Result<i64, StoreError> {
    let mut total = 0;
    let mut client = pool::get(pool).await?;
    loop {
        let a = apply_live(&mut client, crate::projection::ALL, PROJECTION_BATCH_EVENTS).await?;
        total += a.events;
        if a.events == 0 {
            return Ok(total);
        }
    }
}

/// Catches `models` up if no worker runs them anywhere (their runner locks
/// are free); returns whether it did. One-shot tools use this so that a
/// reader without running workers still sees current rows, while a running
/// worker is left to do its job and its lag is reported instead. The models
/// are caught up together, each window to one horizon, so a reader that adds
/// several up finds them at one checkpoint.
pub async fn catch_up_if_idle(
    pool: &Pool,
    models: &[&'static dyn ReadModel],
) -> Result<bool, StoreError> {
    let Some(mut client) = become_runner(pool, models).await? else {
        return Ok(false);
    };
    loop {
        let a = apply_live(&mut client, models, PROJECTION_BATCH_EVENTS).await?;
        if a.events == 0 {
            return Ok(true);
        }
    }
}

/// Catches every live projection up until none lags behind the log, or
/// `timeout` passes; returns whether they are current.
///
/// `catch_up` alone stops at the safe horizon, and that horizon is
/// server-wide: a transaction still open in any database on the server (even
/// another application's) holds it back. Callers that need the read models
/// to include everything committed so far wait here.
pub async fn catch_up_fully(pool: &Pool, timeout: Duration) -> Result<bool, StoreError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        catch_up(pool).await?;
        let client = pool::get(pool).await?;
        let statuses = crate::projection::status::status(&**client).await?;
        if statuses.iter().all(|s| s.live.lag_events == 0) {
            return Ok(true);
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(crate::limits::CATCH_UP_POLL_MS)).await;
    }
}
