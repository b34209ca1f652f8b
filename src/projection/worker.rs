//! Projection workers: one task per projection, folding the log into its
//! live tables until cancelled.
//!
//! One active runner per projection: a worker holds a session advisory lock
//! on its own connection (taken out of the pool, so the lock dies with the
//! connection, never lingers in an idle pooled one). Others wait and take over
//! when it dies. The checkpoint row lock of each batch keeps even a wrongly
//! doubled runner exactly-once. Workers wake on LISTEN/NOTIFY and poll anyway,
//! because polling is the source of truth.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{ClientWrapper, Pool};
use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::limits::{PROJECTION_BATCH_EVENTS, PROJECTION_POLL_INTERVAL_MS};
use crate::projection::{apply_batch, ReadModel, Slot};
use crate::store::{pool, StoreError};

/// The channel the events table notifies on commit.
pub const CHANNEL: &str = "stockledger_events";

#[derive(Clone, Copy, Debug)]
pub struct WorkerConfig {
    pub batch_events: i64,
    pub poll_interval: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            batch_events: PROJECTION_BATCH_EVENTS,
            poll_interval: Duration::from_millis(PROJECTION_POLL_INTERVAL_MS),
        }
    }
}

fn runner_lock_sql(kind: &str) -> String {
    format!("SELECT {kind}(hashtextextended('projection:' || $1, 0))")
}

/// Tries to become the runner. The lock is tried on a pooled connection and
/// only a connection that got it is taken out of the pool (the lock must die
/// with it, never linger on a pooled one); a process that waits for another
/// runner hands the connection back, so it opens and closes none.
async fn become_runner(
    pool: &Pool,
    p: &dyn ReadModel,
) -> Result<Option<ClientWrapper>, StoreError> {
    let client = pool::get(pool).await?;
    let got: bool = client
        .query_one(&runner_lock_sql("pg_try_advisory_lock"), &[&p.name()])
        .await?
        .get(0);
    Ok(got.then(|| deadpool_postgres::Object::take(client)))
}

/// Runs the worker of one projection until `cancel` fires. A batch under way
/// when it fires is finished first.
pub async fn run(
    pool: Pool,
    p: &'static dyn ReadModel,
    wake: Arc<Notify>,
    cancel: CancellationToken,
    config: WorkerConfig,
) {
    let idle = |wake: Arc<Notify>, cancel: CancellationToken| async move {
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(config.poll_interval) => {}
            _ = cancel.cancelled() => {}
        }
    };
    while !cancel.is_cancelled() {
        let mut client = match become_runner(&pool, p).await {
            Ok(Some(c)) => c,
            Ok(None) => {
                idle(wake.clone(), cancel.clone()).await;
                continue;
            }
            Err(e) => {
                warn!(projection = p.name(), error = %e, "cannot reach the database; will retry");
                idle(wake.clone(), cancel.clone()).await;
                continue;
            }
        };
        info!(projection = p.name(), "running");
        while !cancel.is_cancelled() {
            match apply_batch(&mut client, p, Slot::Live, config.batch_events).await {
                Ok(a) if a.events > 0 => {}
                Ok(_) => idle(wake.clone(), cancel.clone()).await,
                Err(e) => {
                    // Dropping the connection releases the runner lock, so a
                    // healthy process can take over while we reconnect.
                    warn!(projection = p.name(), error = %e, "batch failed; reconnecting");
                    break;
                }
            }
        }
    }
    info!(projection = p.name(), "stopped");
}

/// Listens for commit notifications and wakes every worker. Reconnects when
/// the connection drops; until then the workers poll.
pub async fn listen(
    config: tokio_postgres::Config,
    wakes: Vec<Arc<Notify>>,
    cancel: CancellationToken,
) {
    while !cancel.is_cancelled() {
        match pool::hardened(config.clone())
            .connect(tokio_postgres::NoTls)
            .await
        {
            Ok((client, mut connection)) => {
                let mut messages =
                    futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                let sql = format!("LISTEN {CHANNEL}");
                let listen = client.batch_execute(&sql);
                // The connection must be driven while LISTEN is sent.
                let mut listen = std::pin::pin!(listen);
                let ok = loop {
                    tokio::select! {
                        r = &mut listen => break r.is_ok(),
                        m = messages.next() => if m.is_none() { break false },
                        _ = cancel.cancelled() => return,
                    }
                };
                if ok {
                    loop {
                        tokio::select! {
                            m = messages.next() => match m {
                                Some(Ok(tokio_postgres::AsyncMessage::Notification(_))) => {
                                    wakes.iter().for_each(|w| w.notify_one());
                                }
                                Some(Ok(_)) => {}
                                Some(Err(_)) | None => break,
                            },
                            _ = cancel.cancelled() => return,
                        }
                    }
                }
            }
            Err(e) => warn!(error = %e, "cannot listen for commits; workers poll"),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(PROJECTION_POLL_INTERVAL_MS)) => {}
            _ = cancel.cancelled() => return,
        }
    }
}

/// Runs every projection's worker and the listener until `cancel` fires.
pub async fn run_all(
    pool: Pool,
    listen_config: tokio_postgres::Config,
    cancel: CancellationToken,
    config: WorkerConfig,
) {
    let wakes: Vec<Arc<Notify>> = crate::projection::ALL
        .iter()
        .map(|_| Arc::new(Notify::new()))
        .collect();
    // A JoinSet aborts its tasks when dropped, so aborting this future stops
    // every worker it started.
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(listen(listen_config, wakes.clone(), cancel.clone()));
    for (&p, wake) in crate::projection::ALL.iter().zip(wakes) {
        tasks.spawn(run(pool.clone(), p, wake, cancel.clone(), config));
    }
    while tasks.join_next().await.is_some() {}
}

/// Brings every live projection up to the safe horizon once, for tools and
/// tests that need current read tables. It takes no runner lock, so it never
/// waits for a worker elsewhere; the checkpoint row lock keeps it exactly-once
/// alongside running workers.
pub async fn catch_up(pool: &Pool) -> Result<i64, StoreError> {
    let mut total = 0;
    let mut client = pool::get(pool).await?;
    for &p in crate::projection::ALL {
        loop {
            let a = apply_batch(&mut client, p, Slot::Live, PROJECTION_BATCH_EVENTS).await?;
            total += a.events;
            if a.events == 0 {
                break;
            }
        }
    }
    Ok(total)
}

/// Catches `p` up if no worker runs it anywhere (its runner lock is free);
/// returns whether it did. One-shot tools use this so that a reader without
/// running workers still sees current rows, while a running worker is left
/// to do its job and its lag is reported instead.
pub async fn catch_up_if_idle(pool: &Pool, p: &'static dyn ReadModel) -> Result<bool, StoreError> {
    let Some(mut client) = become_runner(pool, p).await? else {
        return Ok(false);
    };
    loop {
        let a = apply_batch(&mut client, p, Slot::Live, PROJECTION_BATCH_EVENTS).await?;
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
