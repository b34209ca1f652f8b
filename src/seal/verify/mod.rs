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

mod sources;
mod walk;

use serde::Serialize;
use tokio_postgres::IsolationLevel;

use crate::limits::{MAX_VERIFY_FINDINGS, VERIFY_READERS, VERIFY_WINDOW_ROWS};
use crate::seal::archive::Archive;
use crate::seal::digest::{self, Digest};
use crate::store::{pool, StoreError};

use sources::{boundary, spawn_readers, SealPages};
use walk::Walk;

/// What does not match, each naming where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// A chained event is no longer in the log.
    EventMissing { chain_seq: i64, position: i64 },
    /// The event's content no longer hashes to its chain row: it was
    /// changed after it was sealed.
    EventAltered {
        chain_seq: i64,
        position: i64,
        stream: String,
        seq: u32,
        sealed_hash: String,
        now_hash: String,
        /// The archive segment the event was read from (`verify --archive`).
        #[serde(skip_serializing_if = "Option::is_none")]
        archive: Option<String>,
    },
    /// The event's row no longer decodes as an event at all.
    EventUndecodable {
        chain_seq: i64,
        position: i64,
        why: String,
    },
    /// The event no longer follows the one before it in safe commit order:
    /// the log was reordered.
    OutOfOrder { chain_seq: i64, position: i64 },
    /// Chain rows are missing before this one.
    ChainGap { expected: i64, found: i64 },
    /// An event below the sealed cursor that the chain does not cover:
    /// inserted after its neighbours were sealed.
    Uncovered { position: i64 },
    /// A seal that does not agree with the chain it covers, or with the
    /// seal before it.
    SealBroken { block: i64, what: String },
    /// The log no longer hashes to the digest given.
    DigestMismatch { block: i64, what: String },
    /// The digest names a block the log does not have.
    DigestNotInLog { block: i64, sealed_blocks: i64 },
    /// An archive file that does not read, does not follow the one before,
    /// or was changed after it was written (`verify --archive`).
    ArchiveProblem { file: String, what: String },
}

/// What `verify` found.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Chain rows and seals checked.
    pub events: u64,
    pub blocks: u64,
    /// The latest seal as stored.
    pub head: Option<Digest>,
    /// Events in the log not sealed yet (above the sealed cursor).
    pub unsealed: i64,
    /// Whether a digest was given and the log still hashes to it.
    pub digest_matches: Option<bool>,
    /// The first `MAX_VERIFY_FINDINGS` findings in chain order; `more`
    /// counts the rest.
    pub findings: Vec<Finding>,
    pub more: u64,
}

impl Report {
    pub fn clean(&self) -> bool {
        self.findings.is_empty() && self.digest_matches != Some(false)
    }

    pub(super) fn found(&mut self, f: Finding) {
        if self.findings.len() < MAX_VERIFY_FINDINGS {
            self.findings.push(f);
        } else {
            self.more += 1;
        }
    }
}

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
