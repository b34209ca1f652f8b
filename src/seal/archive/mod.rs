//! Archive files: sealed history written out of the database in a form that
//! stays verifiable without it (docs/archive.md).
//!
//! An archive is a directory of segments. A segment covers whole sealed
//! blocks, from block 1 on without a gap, and is two files: its rows, one
//! JSON line per chain row (the chain row's stored hash, the writing
//! transaction, and the event exactly as `GET /v1/events` serves it), gzip
//! compressed; and its manifest, which names the rows' file with its
//! SHA-256 and holds the segment's counts, ranges and seals. A leaf is
//! hashed from the event as served, as a proof's is (`chain::canonical_event`),
//! so an event in a file is proved against a digest exactly as a live one.
//!
//! `write` makes segments from the database, checking every row against its
//! block's seal as it goes (a block that does not verify removes the file
//! and refuses the run) and reading the file back before its manifest is
//! written; `read` opens a directory, names what is missing or altered, and
//! streams the rows to `verify`, `prove` and the audit.

pub mod check;
pub mod detach;
pub mod files;
pub mod prove;
pub mod read;
pub mod write;

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::seal::proof::SealedBlock;
use crate::store::StoreError;

pub use read::{Archive, ArchivedRow};

/// The `format` every manifest carries.
pub const ARCHIVE_FORMAT: &str = "stockledger-archive/v1";

/// A manifest's file name ends so; its rows' file is named alike.
pub const MANIFEST_SUFFIX: &str = ".manifest.json";
pub const ROWS_SUFFIX: &str = ".rows.jsonl.gz";

/// One sealed block as a manifest holds it: its seal fields, the seal hash
/// before it and its own (both hex), as the `seals` table stores them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchivedSeal {
    #[serde(flatten)]
    pub block: SealedBlock,
    pub previous: String,
    pub hash: String,
}

impl ArchivedSeal {
    /// A row of `SELECT {proof::SEAL_COLUMNS} FROM seals`.
    pub(crate) fn from_row(r: &tokio_postgres::Row) -> Result<ArchivedSeal, StoreError> {
        let hex = |i: usize| crate::domain::fingerprint::hex_bytes(r.get::<_, &[u8]>(i));
        Ok(ArchivedSeal {
            block: SealedBlock::from_row(r)?,
            previous: hex(9),
            hash: hex(10),
        })
    }
}

/// What a segment holds, written after its rows' file was read back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    /// The rows' file, in the manifest's directory.
    pub rows_file: String,
    /// SHA-256 of the rows' file as written (hex), and its size.
    pub sha256: String,
    pub bytes: u64,
    pub events: u64,
    pub first_block: i64,
    pub last_block: i64,
    pub first_seq: i64,
    pub last_seq: i64,
    /// The lowest and highest log position among the segment's events
    /// (chain order is commit order, so positions interleave).
    pub min_position: i64,
    pub max_position: i64,
    /// The stored chain hash before the segment's first row (zeros for row 1)
    /// and at its last, which is its last block's chain head.
    pub chain_before: String,
    pub chain_head: String,
    /// The segment's blocks, in order.
    pub seals: Vec<ArchivedSeal>,
    pub written_at: DateTime<Utc>,
}

/// One line of a rows' file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowLine {
    pub chain_seq: i64,
    /// The chain hash the `event_chain` table stored for this row (hex).
    pub hash: String,
    /// The writing transaction: with the position, the event's place in
    /// safe commit order, which the served event does not carry.
    pub tx_id: i64,
    pub event: Value,
}

/// The stem both files of the segment of `first ..= last` blocks share:
/// zero-padded, so the names sort as the blocks do.
pub fn segment_stem(first_block: i64, last_block: i64) -> String {
    format!("blocks-{first_block:012}-{last_block:012}")
}

/// Why an archive cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{path}: {why}")]
    Io { path: String, why: std::io::Error },
    /// Something in the directory does not read as this format, or does not
    /// follow on: `verify --archive` names it.
    #[error("{path}: {why}")]
    Unreadable { path: String, why: String },
    /// A block about to be archived does not match its seal: the database
    /// was changed after it was sealed. Nothing is written.
    #[error(
        "block {block} does not verify ({why}): run `stockledger verify`; nothing from it on was archived"
    )]
    NotVerified { block: i64, why: String },
    #[error("block {block}, the archive's last, is not sealed in this database as the archive has it: the directory is not this ledger's archive")]
    NotThisLedger { block: i64 },
    /// The directory's segments end before events that left the database
    /// (`archive --detach`): the segments holding them are missing, and the
    /// database cannot write them again. Nothing is written.
    #[error("the archive's segments end at block {last_block}, but events up to {cut} left the database: the segments after block {last_block} are missing from this directory (a manifest removed or not restored?) and cannot be written again; restore them from a copy, and run `stockledger verify --archive`. Nothing was written")]
    BehindTheCut { last_block: i64, cut: String },
    /// The run failed after it set aside rows files that no manifest named:
    /// they are kept, and named here, because they may be the only copy.
    #[error("{error} (set aside, not deleted, as no manifest names them: {})", .files.join(", "))]
    SetAside {
        files: Vec<String>,
        error: Box<ArchiveError>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ArchiveError {
    fn io(path: &Path, why: std::io::Error) -> ArchiveError {
        ArchiveError::Io {
            path: path.display().to_string(),
            why,
        }
    }

    /// `error`, naming the rows files the run set aside when there are any.
    fn set_aside(files: Vec<std::path::PathBuf>, error: ArchiveError) -> ArchiveError {
        if files.is_empty() {
            return error;
        }
        ArchiveError::SetAside {
            files: files.iter().map(|f| f.display().to_string()).collect(),
            error: Box::new(error),
        }
    }

    fn unreadable(path: &Path, why: impl std::fmt::Display) -> ArchiveError {
        ArchiveError::Unreadable {
            path: path.display().to_string(),
            why: why.to_string(),
        }
    }
}
