//! `verify`: recomputes the chain and every seal from the log, in one
//! snapshot, and holds them against what the sealer stored and against a
//! digest kept outside.
//!
//! Two recomputations run side by side. The *checked* one starts each link
//! from the hash the chain table stores for the row before, so every
//! altered event is named on its own, not only the first. The *pure* one
//! never looks at stored hashes: it is what the log alone hashes to, and is
//! what a digest is held against. An attacker who rewrites events, chain
//! rows and seals consistently passes the first and fails the second.

mod report;
mod sources;
mod walk;

use tokio_postgres::IsolationLevel;

use crate::limits::{VERIFY_READERS, VERIFY_WINDOW_ROWS};
use crate::seal::archive::Archive;
use crate::seal::digest::{self, Digest};
use crate::store::{pool, StoreError};

pub use report::{Finding, Report};
use sources::{boundary, spawn_readers, SealPages};
use walk::Walk;

/// Recomputes the chain and the seals from the log and checks them, and
/// `digest` when given. One REPEATABLE READ snapshot, shared by
/// `VERIFY_READERS` connections that read and hash windows of the chain side
/// by side (`window`); this task walks the windows in order.
pub async fn verify(
    pool: &deadpool_postgres::Pool,
    digest: Option<&Digest>,
) -> Result<Report, StoreError> {
    verify_in_windows(pool, digest, VERIFY_WINDOW_ROWS).await
}

/// `verify` with windows of `window_rows` chain rows (tests use small ones).
pub async fn verify_in_windows(
    pool: &deadpool_postgres::Pool,
    digest: Option<&Digest>,
    window_rows: i64,
) -> Result<Report, StoreError> {
    verify_with(pool, digest, window_rows, None).await
}

/// `verify` across an archive and the database: the archive's segments
/// stand for the blocks they hold, read from the files and never from the
/// database, and the database for the blocks after them, as one chain.
pub async fn verify_across(
    pool: &deadpool_postgres::Pool,
    digest: Option<&Digest>,
    archive: &Archive,
) -> Result<Report, StoreError> {
    verify_with(pool, digest, VERIFY_WINDOW_ROWS, Some(archive)).await
}

/// Takes the log first, so that a detach waits for this snapshot's readers
/// instead of taking a partition out from under them; then refuses a walk
/// that would start before the cut: the plain one, and one across an
/// archive older than the cut.
async fn hold_against_detach(
    tx: &deadpool_postgres::Transaction<'_>,
    archive: Option<&Archive>,
) -> Result<(), StoreError> {
    tx.batch_execute("LOCK TABLE events, event_chain IN ACCESS SHARE MODE")
        .await?;
    if !crate::store::cut::schema_has_cut(&**tx).await? {
        return Ok(());
    }
    match archive {
        None => {
            crate::store::cut::refuse_if_cut(&**tx, || {
                "the start of the chain (run `stockledger verify --archive DIR`)".to_owned()
            })
            .await
        }
        Some(a) => {
            let last = a.last_cursor();
            crate::store::cut::refuse_before(&**tx, last, || {
                format!("the chain after the archive's last event ({last}): an archive made since holds it")
            })
            .await
        }
    }
}

async fn verify_with(
    pool: &deadpool_postgres::Pool,
    digest: Option<&Digest>,
    window_rows: i64,
    archive: Option<&Archive>,
) -> Result<Report, StoreError> {
    let window_rows = window_rows.clamp(1, VERIFY_WINDOW_ROWS);
    let mut client = pool::get(pool).await?;
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    hold_against_detach(&tx, archive).await?;
    // The archive's files are read before the snapshot is shared.
    crate::store::snapshot::idle_long(&tx).await?;
    let (archived, archived_seq) = archive.map_or((0, 0), |a| (a.last_block(), a.last_seq()));
    let head = digest::latest(&tx).await?;
    let digest = match digest {
        Some(d) => {
            let (h, s) = d
                .hashes()
                .map_err(|e| StoreError::Corrupt(format!("the digest: {e}").into()))?;
            Some((d.clone(), h, s))
        }
        None => None,
    };
    let last_seq: i64 = tx
        .query_one("SELECT coalesce(max(seq), 0) FROM event_chain", &[])
        .await?
        .get(0);
    let mut walk = Walk::new(head, digest);
    if let Some(a) = archive {
        if let Some(f) = boundary(a, &tx).await? {
            walk.report.found(f);
        }
        walk.archive(a).await;
    }
    let id = crate::store::snapshot::export(&tx).await?;
    let first = archived_seq + 1;
    let windows = (last_seq - first + 1 + window_rows - 1).max(0) / window_rows;
    let mut readers = spawn_readers(pool, &id, first, windows, window_rows);
    let mut seals = SealPages::after(archived, window_rows);
    for w in 0..windows {
        let rows = readers[w as usize % VERIFY_READERS]
            .recv()
            .await
            .ok_or_else(|| StoreError::Database("a verify reader stopped".into()))??;
        seals
            .push_through(&tx, &mut walk, first + (w + 1) * window_rows - 1)
            .await?;
        rows.into_iter().for_each(|r| walk.row(r));
    }
    seals.push_through(&tx, &mut walk, i64::MAX).await?;
    walk.finish_chain();
    walk.uncovered(&tx).await?;
    tx.commit().await?;
    Ok(walk.report)
}
