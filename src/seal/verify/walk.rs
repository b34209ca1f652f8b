//! The walk of `verify`: the chain rows in order, each block's leaves, its
//! seal and the digest held against two recomputations (see `verify`).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::seal::chain::{self, Hash, SealFields, ZERO};
use crate::seal::digest::{self, Digest};

/// A seal as stored: its fields, the seal hash before it and its own.
pub(super) use crate::seal::archive::check::Seal as StoredSeal;

use super::report::{Finding, Report};

/// The pure recomputation: the chain hash and the seal hash the log alone
/// gives, or `None` once an event is missing (nothing after it can be
/// recomputed).
struct Pure {
    chain: Option<Hash>,
    seal: Option<Hash>,
}

/// Walks the chain in order; one block's leaves at a time. Seals are
/// pushed in block order ahead of the rows they end (`push_seal`), and
/// leave once their block was walked: the walk holds the seals of the rows
/// in flight, not every seal of the log.
pub(super) struct Walk {
    pub(super) report: Report,
    /// Seals pushed whose blocks were not walked yet, in block order.
    seals: VecDeque<StoredSeal>,
    /// Seals pushed so far, and the last one's block, last row and hash.
    pushed: i64,
    last_pushed: Option<(i64, i64, Hash)>,
    digest: Option<(Digest, Hash, Hash)>,
    /// Blocks walked so far.
    walked: i64,
    leaves: Vec<Option<Hash>>,
    expected_seq: i64,
    /// The stored hash of the row before (the checked chain's base).
    stored_before: Hash,
    pure: Pure,
    cursor_before: Option<(i64, i64)>,
    /// Whether the digest's block was reached and held against it.
    digest_checked: bool,
    /// The chain row whose event was found last.
    last_found: Option<i64>,
}

/// What the log holds at one chain row, hashed.
pub(super) enum Found {
    Missing,
    Undecodable(String),
    Event {
        leaf: Hash,
        cursor: (i64, i64),
        stream: String,
        seq: u32,
    },
}

/// One chain row and what the log holds there.
pub(super) struct ChainRow {
    pub(super) seq: i64,
    pub(super) position: i64,
    pub(super) stored: Result<Hash, String>,
    pub(super) found: Found,
    /// The archive segment it was read from; `None` for the database.
    pub(super) file: Option<Arc<str>>,
}

impl Walk {
    /// The next seal, checked against the one pushed before it: numbered
    /// from 1, its rows following on, its `previous` the stored hash before,
    /// its own hash over its fields.
    pub(super) fn push_seal(&mut self, s: StoredSeal) {
        let block = s.fields.block;
        let (want_block, want_first, want_previous) = match self.last_pushed {
            None => (1, 1, ZERO),
            Some((b, last_seq, hash)) => (b + 1, last_seq + 1, hash),
        };
        let mut found = Vec::new();
        if block != want_block || self.pushed + 1 != block {
            found.push(format!("block {block} where block {want_block} belongs"));
        }
        if s.fields.first_seq != want_first {
            let first = s.fields.first_seq;
            found.push(format!(
                "starts at chain row {first} instead of {want_first}"
            ));
        }
        if s.previous != want_previous {
            found.push("its previous seal hash is not the stored hash of the block before".into());
        }
        if chain::seal(&s.previous, &s.fields) != s.hash {
            found.push("its hash does not cover its own fields".into());
        }
        for what in found {
            self.report.found(Finding::SealBroken { block, what });
        }
        self.pushed += 1;
        self.last_pushed = Some((block, s.fields.last_seq, s.hash));
        self.seals.push_back(s);
    }

    /// The last row the seals pushed so far end at (0 before any).
    pub(super) fn sealed_through(&self) -> i64 {
        self.last_pushed.map_or(0, |(_, last_seq, _)| last_seq)
    }

    pub(super) fn new(head: Option<Digest>, digest: Option<(Digest, Hash, Hash)>) -> Walk {
        Walk {
            report: Report {
                events: 0,
                blocks: 0,
                head,
                unsealed: 0,
                // Known only once the digest's block is reached.
                digest_matches: digest.as_ref().map(|_| false),
                findings: Vec::new(),
                more: 0,
            },
            seals: VecDeque::new(),
            pushed: 0,
            last_pushed: None,
            digest,
            walked: 0,
            leaves: Vec::new(),
            expected_seq: 1,
            stored_before: ZERO,
            pure: Pure {
                chain: Some(ZERO),
                seal: Some(ZERO),
            },
            cursor_before: None,
            digest_checked: false,
            last_found: None,
        }
    }

    /// A chain row's stored hash; a broken one is a finding (and zeros).
    fn stored_hash(&mut self, seq: i64, stored: Result<Hash, String>) -> Hash {
        stored.unwrap_or_else(|why| {
            let what = format!("chain row {seq}: its hash is {why}");
            let block = self.walked + 1;
            self.report.found(Finding::SealBroken { block, what });
            ZERO
        })
    }

    pub(super) fn row(&mut self, row: ChainRow) {
        let ChainRow { seq, position, .. } = row;
        self.report.events += 1;
        if seq != self.expected_seq {
            self.report.found(Finding::ChainGap {
                expected: self.expected_seq,
                found: seq,
            });
            // The pure chain cannot bridge rows that are gone.
            self.pure.chain = None;
        }
        self.expected_seq = seq + 1;
        let stored = self.stored_hash(seq, row.stored);
        let leaf = match row.found {
            Found::Missing => {
                self.report.found(Finding::EventMissing {
                    chain_seq: seq,
                    position,
                });
                None
            }
            Found::Undecodable(why) => {
                self.report.found(Finding::EventUndecodable {
                    chain_seq: seq,
                    position,
                    why,
                });
                None
            }
            Found::Event {
                leaf,
                cursor,
                stream,
                seq: stream_seq,
            } => {
                if self.cursor_before.is_some_and(|before| before >= cursor) {
                    self.report.found(Finding::OutOfOrder {
                        chain_seq: seq,
                        position,
                    });
                }
                self.cursor_before = Some(cursor);
                self.last_found = Some(seq);
                let now = chain::link(&self.stored_before, &leaf);
                if now != stored {
                    self.report.found(Finding::EventAltered {
                        chain_seq: seq,
                        position,
                        stream,
                        seq: stream_seq,
                        sealed_hash: chain::hex(&stored),
                        now_hash: chain::hex(&now),
                        archive: row.file.as_deref().map(str::to_owned),
                    });
                }
                Some(leaf)
            }
        };
        self.pure.chain = match (self.pure.chain, leaf) {
            (Some(c), Some(l)) => Some(chain::link(&c, &l)),
            _ => None,
        };
        self.stored_before = stored;
        self.leaves.push(leaf);
        self.end_of_block(seq, stored);
    }

    /// At the last row of a block: its Merkle root and chain head against
    /// the seal, the pure seal hash, and the digest when it names this block.
    fn end_of_block(&mut self, seq: i64, stored: Hash) {
        if self.seals.front().is_none_or(|s| seq < s.fields.last_seq) {
            return;
        }
        let s = self.seals.pop_front().expect("just seen");
        let block = s.fields.block;
        let leaves: Option<Vec<Hash>> = self.leaves.drain(..).collect();
        let mut found = Vec::new();
        let root = leaves.as_deref().map(chain::merkle_root);
        if root.is_some_and(|r| r != s.fields.merkle_root) {
            found.push(Finding::SealBroken {
                block,
                what: "the Merkle root of its events is not the one sealed".into(),
            });
        }
        if seq != s.fields.last_seq || stored != s.fields.chain_head {
            found.push(Finding::SealBroken {
                block,
                what: "its chain head is not the chain hash at its last row".into(),
            });
        }
        // Where the sealer stopped is where the next block starts reading:
        // it must be the block's last event (when that is still there).
        let cursor = (s.fields.last_tx_id, s.fields.last_position);
        if self.last_found == Some(seq) && self.cursor_before != Some(cursor) {
            found.push(Finding::SealBroken {
                block,
                what: "its last transaction id and position are not its last event's".into(),
            });
        }
        let pure_fields = match (root, self.pure.chain) {
            (Some(merkle_root), Some(chain_head)) => Some(SealFields {
                merkle_root,
                chain_head,
                ..s.fields.clone()
            }),
            _ => None,
        };
        self.pure.seal = match (self.pure.seal, pure_fields) {
            (Some(previous), Some(fields)) => Some(chain::seal(&previous, &fields)),
            _ => None,
        };
        if self
            .digest
            .as_ref()
            .is_some_and(|(d, _, _)| d.block == block)
        {
            self.digest_checked = true;
            match self.check_digest(&s.fields) {
                Some(f) => found.push(f),
                None => self.report.digest_matches = Some(true),
            }
        }
        for f in found {
            self.report.found(f);
        }
        self.report.blocks += 1;
        self.walked += 1;
    }

    /// At the end of a block: the digest, if it names this block, against
    /// the pure recomputation. Every field the digest shows is checked: the
    /// ones the seal hash covers through it, the others (a version 1 seal's
    /// position and time) against the block as stored.
    fn check_digest(&self, sealed: &SealFields) -> Option<Finding> {
        let block = sealed.block;
        let (d, head, seal) = self.digest.as_ref().filter(|(d, _, _)| d.block == block)?;
        let what = if d.last_seq != sealed.last_seq {
            format!(
                "the digest ends at chain row {}, the block at {}",
                d.last_seq, sealed.last_seq
            )
        } else if d.last_position != sealed.last_position {
            format!(
                "the digest ends at log position {}, the block at {}",
                d.last_position, sealed.last_position
            )
        } else if d.sealed_at != sealed.sealed_at {
            format!(
                "the digest was sealed at {}, the block at {}",
                chain::micros_utc(d.sealed_at),
                chain::micros_utc(sealed.sealed_at)
            )
        } else if d.format != digest::DIGEST_FORMAT {
            format!("the digest's format is not {}", digest::DIGEST_FORMAT)
        } else if self.pure.chain != Some(*head) {
            "the log up to the digest no longer hashes to its chain head: it was changed after the digest was taken".to_owned()
        } else if self.pure.seal != Some(*seal) {
            "the seals up to the digest no longer hash to its seal".to_owned()
        } else {
            return None;
        };
        Some(Finding::DigestMismatch { block, what })
    }

    /// After the last row (and every seal pushed): seals with no rows, rows
    /// with no seal, and a digest beyond the log.
    pub(super) fn finish_chain(&mut self) {
        if !self.leaves.is_empty() {
            self.report.found(Finding::SealBroken {
                block: self.pushed + 1,
                what: format!("{} chain rows after the last seal", self.leaves.len()),
            });
        }
        while let Some(s) = self.seals.pop_front() {
            let (block, last) = (s.fields.block, s.fields.last_seq);
            self.report.found(Finding::SealBroken {
                block,
                what: format!("it covers chain rows up to {last} that are not there"),
            });
        }
        if let Some((d, _, _)) = &self.digest {
            // Never reached: beyond the seals, or its rows are gone.
            if !self.digest_checked {
                let (block, sealed_blocks) = (d.block, self.pushed);
                self.report.digest_matches = Some(false);
                self.report.found(Finding::DigestNotInLog {
                    block,
                    sealed_blocks,
                });
            }
        }
    }
}
