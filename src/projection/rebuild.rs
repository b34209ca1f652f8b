//! Rebuilding a projection without downtime.
//!
//! 1. A fresh copy is created in the rebuild schema with the projection's own
//!    `schema.sql`, with a checkpoint of its own at the start of the log, or,
//!    once partitions of the log were detached, a copy of its snapshot at
//!    the cut with the snapshot's checkpoint (`projection::snapshot`).
//! 2. The copy is filled batch by batch with the projection's own apply SQL,
//!    while the live copy keeps serving and its worker keeps running.
//! 3. The copy is verified against an independent replay of the log at the
//!    copy's checkpoint: the audit's engine, handed in by the caller
//!    (`VerifyCopies`), since the audit stands on this runtime.
//! 4. The swap: one transaction locks the live checkpoint (pausing the live
//!    worker for that moment), applies what arrived meanwhile to the copy,
//!    moves the live tables out and the copy in, and hands the copy's
//!    checkpoint to the live slot.
//!
//! Until step 4 commits, nothing of the live copy has changed: an interrupted
//! or failed rebuild leaves it serving, and the next rebuild starts over.

use std::time::{Duration, Instant};

use deadpool_postgres::{ClientWrapper, Pool};
use futures_util::future::BoxFuture;

use crate::limits::REBUILD_BATCH_EVENTS;
use crate::projection::batch::{apply_range, lock_checkpoint};
use crate::projection::copy::prepare_copy;
use crate::projection::{
    apply_batch, ReadModel, Slot, LIVE_SCHEMA, REBUILD_SCHEMA, RETIRED_SCHEMA,
};
use crate::read_model::Difference;
use crate::store::locks::{Lock, TRY_SESSION_LOCK};
use crate::store::{pool, Cursor, StoreError};

/// Checks filled copies against the log before any of them is swapped in.
/// The product's check is the audit's replay (`audit::ReplayVerifier`), a
/// fold that did not build the copies.
pub trait VerifyCopies: Sync {
    /// Verifies the rebuild copies of `ps`, each at its own checkpoint.
    fn verify<'a>(
        &'a self,
        pool: &'a Pool,
        ps: &'a [&'static dyn ReadModel],
    ) -> BoxFuture<'a, Result<Verified, StoreError>>;

    /// Whether the check replays the archived part of the log from the
    /// archive's files: the only check of a copy once that part left.
    fn reads_archive(&self) -> bool;
}

/// What a verification of rebuild copies found.
pub struct Verified {
    /// The first copy that differs from the log (or the first copy, when only
    /// the log's own rules are broken); `None` when everything agrees.
    pub failed: Option<&'static dyn ReadModel>,
    pub differences: Vec<Difference>,
}

/// Reported while the copy is filled.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub projection: &'static str,
    pub events: i64,
    /// Events in the log when the rebuild started (the copy may end past it).
    pub total_estimate: i64,
    pub elapsed: Duration,
}

#[derive(Clone, Debug)]
pub struct RebuildReport {
    pub projection: &'static str,
    pub events: i64,
    pub fill: Duration,
    pub verify: Duration,
    pub swap: Duration,
    pub checkpoint: Cursor,
}

#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error("a rebuild of {0} is already running")]
    AlreadyRunning(&'static str),
    #[error("the rebuilt copy of {projection} does not match the log ({} differences, first: {}); the live copy is untouched", differences.len(), differences.first().map(|d| d.to_string()).unwrap_or_default())]
    VerificationFailed {
        projection: &'static str,
        differences: Vec<Difference>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Rebuilds `p` from the start of the log, has `verifier` check it and
/// swaps it in. `batch_events` is normally `REBUILD_BATCH_EVENTS`.
pub async fn rebuild(
    pool: &Pool,
    p: &'static dyn ReadModel,
    batch_events: i64,
    verifier: &dyn VerifyCopies,
    progress: impl FnMut(Progress) + Send,
) -> Result<RebuildReport, RebuildError> {
    let mut reports = rebuild_many(pool, &[p], batch_events, verifier, progress).await?;
    Ok(reports.pop().expect("one report per projection"))
}

/// Rebuilds several projections at once: their copies are filled side by
/// side (each on its own connection, so the server works on all of them),
/// verified together in one replay of the log, then swapped in one by one.
pub async fn rebuild_many(
    pool: &Pool,
    ps: &[&'static dyn ReadModel],
    batch_events: i64,
    verifier: &dyn VerifyCopies,
    progress: impl FnMut(Progress) + Send,
) -> Result<Vec<RebuildReport>, RebuildError> {
    let mut clients = lock_copies(pool, ps).await?;
    // Once part of the log left the database, a copy starts from its
    // snapshot at the cut, and only a replay that reads the archive too can
    // check it: a copy filled from what is left, checked against a replay of
    // the same part, would be wrong and still match.
    let cut = crate::store::cut::cut(&*clients[0]).await?;
    if cut.is_some() && !verifier.reads_archive() {
        crate::store::cut::refuse_if_cut(&*clients[0], || {
            "a rebuild's check from the first event (pass the archive: `--archive DIR`)".to_owned()
        })
        .await?;
    }
    for (client, &p) in clients.iter_mut().zip(ps) {
        prepare_copy(client, p, Slot::Rebuild).await?;
        if cut.is_some() {
            crate::projection::snapshot::seed(client, p).await?;
        }
    }
    let filled = fill_copies(&mut clients, ps, batch_events, progress).await?;
    let verify_started = Instant::now();
    let verified = verifier.verify(pool, ps).await?;
    if let Some(projection) = verified.failed {
        return Err(RebuildError::VerificationFailed {
            projection: projection.name(),
            differences: verified.differences,
        });
    }
    let verify = verify_started.elapsed();
    let mut reports = Vec::with_capacity(ps.len());
    for ((client, &p), (events, fill)) in clients.iter_mut().zip(ps).zip(filled) {
        let swap_started = Instant::now();
        let (caught_up, checkpoint) = swap(client, p).await?;
        reports.push(RebuildReport {
            projection: p.name(),
            events: events + caught_up,
            fill,
            verify,
            swap: swap_started.elapsed(),
            checkpoint,
        });
    }
    Ok(reports)
}

/// One connection per copy, each holding that projection's rebuild lock,
/// released when the connection goes, however the rebuild ends.
async fn lock_copies(
    pool: &Pool,
    ps: &[&'static dyn ReadModel],
) -> Result<Vec<ClientWrapper>, RebuildError> {
    let mut clients = Vec::with_capacity(ps.len());
    for &p in ps {
        let client: ClientWrapper = deadpool_postgres::Object::take(pool::get(pool).await?);
        let got: bool = client
            .query_one(TRY_SESSION_LOCK, &[&Lock::Rebuild(p.name()).name()])
            .await
            .map_err(StoreError::from)?
            .get(0);
        if !got {
            return Err(RebuildError::AlreadyRunning(p.name()));
        }
        clients.push(client);
    }
    Ok(clients)
}

/// Fills every copy from the start of the log, side by side (each on its own
/// connection, so the server works on all of them). Returns per copy the
/// events applied and the time it took.
async fn fill_copies(
    clients: &mut [ClientWrapper],
    ps: &[&'static dyn ReadModel],
    batch_events: i64,
    progress: impl FnMut(Progress) + Send,
) -> Result<Vec<(i64, Duration)>, StoreError> {
    let total_estimate: i64 = clients[0]
        .query_one("SELECT count(*) FROM events", &[])
        .await?
        .get(0);
    // The fills run concurrently in this task; the progress callback is shared
    // behind a mutex that is never held across an await.
    let progress = std::sync::Mutex::new(progress);
    let started = Instant::now();
    let fills = clients.iter_mut().zip(ps).map(|(client, &p)| {
        let progress = &progress;
        async move {
            let mut events = 0;
            loop {
                let a = apply_batch(client, p, Slot::Rebuild, batch_events).await?;
                events += a.events;
                (progress.lock().expect("progress callback panicked"))(Progress {
                    projection: p.name(),
                    events,
                    total_estimate,
                    elapsed: started.elapsed(),
                });
                if a.events == 0 {
                    return Ok::<_, StoreError>((events, started.elapsed()));
                }
            }
        }
    });
    futures_util::future::try_join_all(fills).await
}

/// Catches the copy up under the live checkpoint's lock and swaps it in.
/// Returns the events applied during the swap and the new live checkpoint.
async fn swap(client: &mut ClientWrapper, p: &dyn ReadModel) -> Result<(i64, Cursor), StoreError> {
    // Read before the transaction begins (see store/horizon.rs).
    let horizon = crate::store::horizon::safe_horizon(client).await?;
    let tx = client.transaction().await?;
    crate::store::roles::act_as_owner(&*tx).await?;
    lock_checkpoint(&tx, p, Slot::Live).await?.ok_or_else(|| {
        StoreError::Database(format!("projection {} has no live checkpoint", p.name()).into())
    })?;
    let mut cursor = lock_checkpoint(&tx, p, Slot::Rebuild)
        .await?
        .ok_or_else(|| {
            StoreError::Database(format!("the rebuild copy of {} disappeared", p.name()).into())
        })?;
    let mut caught_up = 0;
    loop {
        let a = apply_range(&tx, p, Slot::Rebuild, cursor, REBUILD_BATCH_EVENTS, horizon).await?;
        caught_up += a.events;
        cursor = a.cursor;
        if a.events == 0 {
            break;
        }
    }
    let mut sql = format!("CREATE SCHEMA IF NOT EXISTS {RETIRED_SCHEMA};");
    for t in p.tables() {
        sql.push_str(&format!(
            "DROP TABLE IF EXISTS {RETIRED_SCHEMA}.{t};
             ALTER TABLE {LIVE_SCHEMA}.{t} SET SCHEMA {RETIRED_SCHEMA};
             ALTER TABLE {REBUILD_SCHEMA}.{t} SET SCHEMA {LIVE_SCHEMA};"
        ));
    }
    tx.batch_execute(&sql).await?;
    tx.execute(
        "UPDATE projection_checkpoints AS l
         SET tx_id = r.tx_id, position = r.position, events_applied = r.events_applied,
             last_event_at = r.last_event_at, definition_checksum = r.definition_checksum,
             started_at = r.started_at, updated_at = now()
         FROM projection_checkpoints AS r
         WHERE l.name = $1 AND l.slot = $2 AND r.name = $1 AND r.slot = $3",
        &[&p.name(), &Slot::Live.as_str(), &Slot::Rebuild.as_str()],
    )
    .await?;
    tx.execute(
        "DELETE FROM projection_checkpoints WHERE name = $1 AND slot = $2",
        &[&p.name(), &Slot::Rebuild.as_str()],
    )
    .await?;
    tx.commit().await?;
    let tx = client.transaction().await?;
    crate::store::roles::act_as_owner(&*tx).await?;
    let mut drop_retired = String::new();
    for t in p.tables() {
        drop_retired.push_str(&format!("DROP TABLE IF EXISTS {RETIRED_SCHEMA}.{t};"));
    }
    tx.batch_execute(&drop_retired).await?;
    tx.commit().await?;
    Ok((caught_up, cursor))
}
