//! The audit: read the whole log, check that every stream obeys the rules,
//! recompute every figure and every projection row in Rust, and compare with
//! the write-side balances and every projection's tables.
//!
//! Everything is read in one REPEATABLE READ snapshot, so the log, the
//! balances and the projections are seen at one moment. Balances reflect every
//! committed event; a projection reflects the events up to its own checkpoint,
//! so its expected rows are folded from exactly those events.
//!
//! The same engine verifies a rebuilt copy before it is swapped in.

mod backlogs;
mod deliveries;
mod doubles;
mod replay;
mod settings;

use std::time::{Duration, Instant};

use deadpool_postgres::{ClientWrapper, Pool};
use serde::Serialize;

use crate::limits::AUDIT_READERS;
use crate::projection::rebuild::{Verified, VerifyCopies};
use crate::projection::Slot;
use crate::read_model::{ReadModel, ALL};
use crate::seal::archive::Archive;
use crate::store::error::Cause;
use crate::store::{pool, Cursor, StoreError};

pub use crate::read_model::Difference;
pub use replay::{Replay, Target};

#[derive(Clone, Debug, Serialize)]
pub struct AuditReport {
    pub events: u64,
    pub streams: u64,
    pub items: u64,
    pub orders: u64,
    pub seconds: f64,
    pub events_per_second: f64,
    /// Every projection compared, with the checkpoint it was compared at.
    pub projections: Vec<(String, String)>,
    pub difference_count: u64,
    /// The first differences (at most `MAX_REPORTED_DIFFERENCES`).
    pub differences: Vec<Difference>,
}

impl AuditReport {
    pub fn clean(&self) -> bool {
        self.difference_count == 0
    }
}

async fn snapshot(
    client: &mut ClientWrapper,
) -> Result<deadpool_postgres::Transaction<'_>, StoreError> {
    Ok(client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?)
}

async fn checkpoint(
    tx: &deadpool_postgres::Transaction<'_>,
    p: &dyn ReadModel,
    slot: Slot,
) -> Result<Option<Cursor>, StoreError> {
    Ok(tx
        .query_opt(
            "SELECT tx_id::text::bigint, position FROM projection_checkpoints WHERE name = $1 AND slot = $2",
            &[&p.name(), &slot.as_str()],
        )
        .await?
        .map(|r| Cursor { tx_id: r.get(0), position: r.get(1) }))
}

/// Audits the whole ledger.
pub async fn audit(pool: &Pool) -> Result<AuditReport, StoreError> {
    audit_with(pool, None).await
}

/// Audits the whole ledger replaying its archived part from `archive`'s
/// files (`audit --from-archive`), the rest from the database: the check
/// that the files hold the history the balances and read models were made
/// from. The archive must be whole (`Archive::whole`).
pub async fn audit_from_archive(pool: &Pool, archive: &Archive) -> Result<AuditReport, StoreError> {
    audit_with(pool, Some(archive)).await
}

async fn audit_with(pool: &Pool, archive: Option<&Archive>) -> Result<AuditReport, StoreError> {
    let started = Instant::now();
    let mut client = pool::get(pool).await?;
    let tx = snapshot(&mut client).await?;
    // Taken first, so that a detach waits for this snapshot's readers
    // instead of taking a partition out from under them.
    tx.batch_execute("LOCK TABLE events IN ACCESS SHARE MODE")
        .await?;
    refuse_part_of_log(&tx, archive, "to audit", "--from-archive DIR").await?;
    // With the archive, the snapshots at the cut are checked too: a rebuild
    // after the cut starts from them.
    let slots: &[Slot] = match archive {
        None => &[Slot::Live],
        Some(_) => &[Slot::Live, Slot::Snapshot],
    };
    let mut targets = Vec::new();
    for &slot in slots {
        for &p in ALL {
            if let Some(cutoff) = checkpoint(&tx, p, slot).await? {
                targets.push(Target {
                    projection: p,
                    cutoff,
                    slot,
                });
            }
        }
    }
    let result = compare_in_snapshot(pool, &tx, targets, true, archive).await?;
    tx.commit().await?;
    Ok(report(result, started.elapsed()))
}

/// Replays the log and compares it with the tables of `targets` (and the
/// balances, when asked), all in the snapshot of `tx`.
///
/// The work is spread over connections that share that one snapshot
/// (`pg_export_snapshot`): `AUDIT_READERS` of them each stream and fold one
/// hash partition of the log, on threads of their own, while another loads
/// the tables; the partial replays are merged and compared at the end.
async fn compare_in_snapshot(
    pool: &Pool,
    tx: &deadpool_postgres::Transaction<'_>,
    targets: Vec<Target>,
    balances: bool,
    archive: Option<&Archive>,
) -> Result<replay::Outcome, StoreError> {
    let id = crate::store::snapshot::export(tx).await?;
    let in_snapshot =
        |pool: Pool, id: String| async move { crate::store::snapshot::join(&pool, &id).await };
    let tables = {
        let (pool, id, targets) = (pool.clone(), id.clone(), targets.clone());
        tokio::spawn(async move {
            let client = in_snapshot(pool, id).await?;
            replay::load_tables(&client, &targets, balances).await
        })
    };
    let mut readers = Vec::new();
    let parts = if archive.is_some() { 1 } else { AUDIT_READERS };
    for part in 0..parts {
        let (pool, id, targets) = (pool.clone(), id.clone(), targets.clone());
        let archive = archive.cloned();
        readers.push(tokio::spawn(async move {
            // The connection was taken out of the pool: dropping it ends its
            // read-only transaction.
            let client = in_snapshot(pool, id).await?;
            let mut replay = Replay::new(targets);
            match &archive {
                Some(a) => replay.read_archive_and_log(&*client, a).await?,
                None => replay.read_log(&*client, part, parts).await?,
            }
            Ok::<_, StoreError>(replay)
        }));
    }
    let joined = |e: tokio::task::JoinError| {
        StoreError::Database(Cause::with_source("an audit task failed", e))
    };
    let mut merged: Option<Replay> = None;
    for r in readers {
        let part = r.await.map_err(joined)??;
        match &mut merged {
            None => merged = Some(part),
            Some(m) => m.merge(part),
        }
    }
    let tables = tables.await.map_err(joined)??;
    Ok(merged.expect("at least one reader").diff(tables))
}

fn report(r: replay::Outcome, elapsed: Duration) -> AuditReport {
    let seconds = elapsed.as_secs_f64();
    AuditReport {
        events: r.events,
        streams: r.streams,
        items: r.items,
        orders: r.orders,
        seconds,
        events_per_second: if seconds > 0.0 {
            r.events as f64 / seconds
        } else {
            0.0
        },
        projections: r.compared,
        difference_count: r.diffs.count,
        differences: r.diffs.kept,
    }
}

/// The audit's replay as the check a rebuild makes before its swap
/// (`projection::rebuild::VerifyCopies`), of the log in the database.
pub struct ReplayVerifier;

impl VerifyCopies for ReplayVerifier {
    fn verify<'a>(
        &'a self,
        pool: &'a Pool,
        ps: &'a [&'static dyn ReadModel],
    ) -> futures_util::future::BoxFuture<'a, Result<Verified, StoreError>> {
        Box::pin(verify_copies(pool, ps, None))
    }

    fn reads_archive(&self) -> bool {
        false
    }
}

/// The same check replaying the archived part of the log from an
/// archive's files (which must be whole) and the rest from the database:
/// the check of a rebuild once partitions were detached.
pub struct ArchiveReplayVerifier<'a>(pub &'a Archive);

impl VerifyCopies for ArchiveReplayVerifier<'_> {
    fn verify<'a>(
        &'a self,
        pool: &'a Pool,
        ps: &'a [&'static dyn ReadModel],
    ) -> futures_util::future::BoxFuture<'a, Result<Verified, StoreError>> {
        Box::pin(verify_copies(pool, ps, Some(self.0)))
    }

    fn reads_archive(&self) -> bool {
        true
    }
}

/// Verifies the rebuild copies of `ps` against the log (its archived part
/// from `archive`, when given), each at its own checkpoint, in one replay.
pub async fn verify_copies(
    pool: &Pool,
    ps: &[&'static dyn ReadModel],
    archive: Option<&Archive>,
) -> Result<Verified, StoreError> {
    let mut client = pool::get(pool).await?;
    let tx = snapshot(&mut client).await?;
    // A rebuild that was filling when a detach took part of the log out
    // would match a replay of the same part: it stops here instead.
    refuse_part_of_log(&tx, archive, "to verify a rebuild", "--archive DIR").await?;
    let mut targets = Vec::with_capacity(ps.len());
    for &p in ps {
        let cutoff = checkpoint(&tx, p, Slot::Rebuild).await?.ok_or_else(|| {
            StoreError::Database(format!("{} has no rebuild copy to verify", p.name()).into())
        })?;
        targets.push(Target {
            projection: p,
            cutoff,
            slot: Slot::Rebuild,
        });
    }
    let result = compare_in_snapshot(pool, &tx, targets, false, archive).await?;
    tx.commit().await?;
    let differs = result.diffs.count > 0;
    Ok(Verified {
        failed: result
            .first_differing
            .or(ps.first().copied().filter(|_| differs)),
        differences: result.diffs.kept,
    })
}

/// Refuses a replay that would read only part of the log: without an
/// archive, once any of it left; with one, when events after the archive's
/// last one left too (an archive made since holds them). `why` says what
/// the replay is for, `flag` how its command is given the archive.
async fn refuse_part_of_log(
    tx: &deadpool_postgres::Transaction<'_>,
    archive: Option<&Archive>,
    why: &str,
    flag: &str,
) -> Result<(), StoreError> {
    match archive {
        None => {
            crate::store::cut::refuse_if_cut(&**tx, || {
                format!("a replay of the whole log {why} (replay the archive with it: `{flag}`)")
            })
            .await
        }
        Some(a) => {
            let last = a.last_cursor();
            crate::store::cut::refuse_before(&**tx, last, || {
                format!("the events after the archive's last one ({last}): an archive made since holds them")
            })
            .await
        }
    }
}
