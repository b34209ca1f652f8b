//! What `verify` reports: the findings, each naming where, and the counts.

use serde::Serialize;

use crate::limits::MAX_VERIFY_FINDINGS;
use crate::seal::digest::Digest;

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
