//! The check of one segment's rows against its seals, pure: the writer runs
//! it over the rows it read from the database before it writes a byte, and
//! the reader over the rows of the file after. It is the sealer's own
//! arithmetic (`chain`): each row's leaf links to its stored chain hash, each
//! block's leaves make its Merkle root, its last row's hash is its chain
//! head, its cursor is its last event's, and its seal hash covers its fields
//! and the seal before.

use std::collections::VecDeque;

use crate::seal::archive::{ArchivedSeal, RowLine};
use crate::seal::chain::{self, Hash, SealFields};

/// A block that does not hold, and why.
pub type Broken = (i64, String);

/// A seal's fields and hashes, parsed.
pub struct Seal {
    pub fields: SealFields,
    pub previous: Hash,
    pub hash: Hash,
}

impl Seal {
    pub fn parse(s: &ArchivedSeal) -> Result<Seal, Broken> {
        let hash =
            |h: &str| chain::from_hex(h).ok_or((s.block.block, format!("{h:?} is not a hash")));
        Ok(Seal {
            fields: s
                .block
                .fields()
                .map_err(|e| (s.block.block, e.to_string()))?,
            previous: hash(&s.previous)?,
            hash: hash(&s.hash)?,
        })
    }
}

/// A row's leaf: its event as served, canonically encoded and hashed, as a
/// proof's (`proof::check`).
pub fn leaf(line: &RowLine) -> Result<Hash, String> {
    chain::canonical_event(&line.event)
        .map(|bytes| chain::leaf(&bytes))
        .map_err(|e| e.to_string())
}

/// The place of a row's event in safe commit order.
pub fn cursor(line: &RowLine) -> (i64, i64) {
    let position = line
        .event
        .get("position")
        .and_then(serde_json::Value::as_i64);
    (line.tx_id, position.unwrap_or(i64::MIN))
}

/// Walks a segment's rows in chain order.
pub struct SegmentCheck {
    /// The seals of the blocks not ended yet, in block order.
    seals: VecDeque<Seal>,
    /// The last block ended (0 before any).
    ended: i64,
    expected_seq: i64,
    /// The stored chain hash of the row before.
    chain: Hash,
    previous_seal: Hash,
    leaves: Vec<Hash>,
    cursor: Option<(i64, i64)>,
}

impl SegmentCheck {
    /// Starts at chain row `first_seq`, after the row whose stored hash is
    /// `chain_before` and the seal whose hash is `previous_seal`.
    pub fn new(
        seals: Vec<Seal>,
        first_seq: i64,
        chain_before: Hash,
        previous_seal: Hash,
    ) -> SegmentCheck {
        SegmentCheck {
            seals: seals.into(),
            ended: 0,
            expected_seq: first_seq,
            chain: chain_before,
            previous_seal,
            leaves: Vec::new(),
            cursor: None,
        }
    }

    /// More seals, after the ones it has: a reader hands them over a
    /// segment at a time, ahead of the segment's rows.
    pub fn extend(&mut self, seals: impl IntoIterator<Item = Seal>) {
        self.seals.extend(seals);
    }

    /// The block the next row belongs to.
    pub fn block(&self) -> i64 {
        self.seals
            .front()
            .map_or(self.ended + 1, |s| s.fields.block)
    }

    /// The next row: its chain sequence, its stored hash, its leaf and its
    /// cursor.
    pub fn row(
        &mut self,
        seq: i64,
        stored: Hash,
        leaf: Hash,
        at: (i64, i64),
    ) -> Result<(), Broken> {
        let block = self.block();
        let Some(seal) = self.seals.front() else {
            return Err((block, format!("chain row {seq} is after the last block")));
        };
        if self.leaves.is_empty() && self.ended > 0 && block != self.ended + 1 {
            let after = self.ended;
            return Err((block, format!("block {block} follows block {after}")));
        }
        if seq != self.expected_seq {
            return Err((
                block,
                format!("chain row {seq} where row {} belongs", self.expected_seq),
            ));
        }
        if self.leaves.is_empty() && seal.fields.first_seq != seq {
            let first = seal.fields.first_seq;
            return Err((
                block,
                format!("it starts at chain row {first}, not at {seq}"),
            ));
        }
        if chain::link(&self.chain, &leaf) != stored {
            let position = at.1;
            return Err((block, format!("the event at position {position} (chain row {seq}) does not hash to its chain row")));
        }
        self.expected_seq += 1;
        self.chain = stored;
        self.leaves.push(leaf);
        self.cursor = Some(at);
        if seq < seal.fields.last_seq {
            return Ok(());
        }
        let f = &seal.fields;
        let why = if chain::merkle_root(&self.leaves) != f.merkle_root {
            "its events do not make its Merkle root"
        } else if stored != f.chain_head {
            "its chain head is not the chain hash at its last row"
        } else if self.cursor != Some((f.last_tx_id, f.last_position)) {
            "its last transaction id and position are not its last event's"
        } else if seal.previous != self.previous_seal {
            "its previous seal hash is not the block before's"
        } else if chain::seal(&seal.previous, f) != seal.hash {
            "its hash does not cover its fields"
        } else {
            ""
        };
        if !why.is_empty() {
            return Err((block, why.to_owned()));
        }
        self.previous_seal = seal.hash;
        self.leaves.clear();
        self.ended = block;
        self.seals.pop_front();
        Ok(())
    }

    /// After the last row: every block was reached and ended.
    pub fn finish(&self) -> Result<(), Broken> {
        match self.seals.front() {
            None => Ok(()),
            Some(s) => Err((
                s.fields.block,
                format!(
                    "its rows end at chain row {}, before its last ({})",
                    self.expected_seq - 1,
                    s.fields.last_seq
                ),
            )),
        }
    }
}
