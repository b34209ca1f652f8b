//! Proofs: that one event is in the log under a digest, checked without a
//! database. A proof carries the event as `GET /v1/events` serves it, its
//! Merkle audit path to its block's root, its block's seal fields, and every
//! later block's seal fields up to the digest's block; the check recomputes
//! the seal hashes from the event up and must arrive at the digest's seal.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::MAX_PROOF_LATER_BLOCKS;
use crate::seal::chain::{self, Hash, SealFields, SealVersion};
use crate::seal::digest::Digest;
use crate::seal::sealer::leaf_of;
use crate::store::read::event_json;
use crate::store::rows::{recorded_event, EVENT_COLUMNS};
use crate::store::{pool, StoreError};

/// The `format` every proof carries.
/// Version 2: each block carries its seal version, the sealer's cursor and
/// its time, which version 2 seals cover; a proof of version 1 cannot be
/// checked against every field of a digest, so `stockledger prove` makes a
/// new one.
pub const PROOF_FORMAT: &str = "stockledger-proof/v2";

/// The `format` of a proof of an event written in a version of its shape
/// above 1 (docs/events.md), whose leaf covers that version: a checker from
/// before versions, which knows only version 2 proofs, refuses it as a format
/// it does not know instead of calling the event altered. A proof of a
/// version-1 event stays version 2, which every checker since can read.
pub const PROOF_FORMAT_VERSIONED: &str = "stockledger-proof/v3";

/// The format a proof of `event` (as served) carries.
fn format_for(event: &serde_json::Value) -> &'static str {
    match event.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v != 1 => PROOF_FORMAT_VERSIONED,
        _ => PROOF_FORMAT,
    }
}

/// A block's seal fields as a proof carries them (hashes in hex).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedBlock {
    pub version: SealVersion,
    pub block: i64,
    pub first_seq: i64,
    pub last_seq: i64,
    pub merkle_root: String,
    pub chain_head: String,
    pub last_tx_id: i64,
    pub last_position: i64,
    pub sealed_at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    pub format: String,
    /// The event, as `GET /v1/events` serves it.
    pub event: Value,
    /// Its row in the chain.
    pub chain_seq: i64,
    /// Its block, and the seal hash before that block.
    pub block: SealedBlock,
    pub previous_seal: String,
    /// The siblings from the event's leaf up to its block's Merkle root.
    pub path: Vec<String>,
    /// Every later block up to the digest's, in order.
    pub later: Vec<SealedBlock>,
    /// The digest the proof was made for: which one to check it against.
    /// It is not trusted: `check` takes the auditor's own copy.
    pub digest: Digest,
}

/// Why a proof does not hold.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProofError {
    #[error(
        "not a proof of this format (expected {PROOF_FORMAT}, or {PROOF_FORMAT_VERSIONED} for \
         an event of a later shape version)"
    )]
    Format,
    #[error("the event cannot be encoded: {0}")]
    Event(#[from] chain::EncodeError),
    #[error("a hash in the proof is not 64 hex digits")]
    BadHash,
    #[error("the event's chain row {0} is not in its block")]
    NotInBlock(i64),
    #[error("the event and its path do not lead to the block's Merkle root: the event is not the one sealed")]
    NotUnderRoot,
    #[error("the blocks from the event's to the digest's do not follow on from each other")]
    Broken,
    #[error("the seals do not lead to the trusted digest's seal")]
    NotUnderDigest,
}

/// Why no proof can be made.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("no event at position {0} is sealed yet")]
    NotSealed(i64),
    #[error("the digest names block {0}, which this log does not have")]
    DigestNotInLog(i64),
    #[error("the event is in block {block}, after the digest's block {digest_block}: take a newer digest")]
    AfterDigest { block: i64, digest_block: i64 },
    #[error("the event is {0} blocks before the digest, more than a proof walks ({MAX_PROOF_LATER_BLOCKS}): take a digest nearer to it")]
    TooFar(i64),
    #[error("the log no longer matches block {0}'s seal: run `stockledger verify`")]
    Altered(i64),
    #[error("no block is sealed yet")]
    NothingSealed,
    /// The archive file that holds the event does not read, or does not
    /// match its seal: `stockledger verify --archive` names what is wrong.
    #[error("the archive: {0}")]
    Archive(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SealedBlock {
    pub(crate) fn fields(&self) -> Result<SealFields, ProofError> {
        let hash = |s: &str| chain::from_hex(s).ok_or(ProofError::BadHash);
        Ok(SealFields {
            version: self.version,
            block: self.block,
            first_seq: self.first_seq,
            last_seq: self.last_seq,
            merkle_root: hash(&self.merkle_root)?,
            chain_head: hash(&self.chain_head)?,
            last_tx_id: self.last_tx_id,
            last_position: self.last_position,
            sealed_at: self.sealed_at,
        })
    }

    pub(crate) fn from_row(r: &tokio_postgres::Row) -> Result<SealedBlock, StoreError> {
        let hex = |i: usize| crate::domain::fingerprint::hex_bytes(r.get::<_, &[u8]>(i));
        Ok(SealedBlock {
            version: r
                .get::<_, i16>(5)
                .try_into()
                .map_err(|e: String| StoreError::Corrupt(e.into()))?,
            block: r.get(0),
            first_seq: r.get(1),
            last_seq: r.get(2),
            merkle_root: hex(3),
            chain_head: hex(4),
            last_tx_id: r.get(6),
            last_position: r.get(7),
            sealed_at: r.get(8),
        })
    }
}

/// Checks `proof` against `trusted`, a digest the auditor kept (never the
/// one the proof file carries: anyone can make up an event and a digest that
/// agree with each other). The event's leaf, up its path to its block's
/// root, that block's seal, and every later seal, must come to the trusted
/// digest's seal hash at its block, with every other field the digest shows
/// (its last chain row and chain head, its last position and its time).
/// Pure: no database, no clock.
pub fn check(proof: &Proof, trusted: &Digest) -> Result<(), ProofError> {
    if proof.format != format_for(&proof.event) {
        return Err(ProofError::Format);
    }
    let leaf = chain::leaf(&chain::canonical_event(&proof.event)?);
    let block = proof.block.fields()?;
    if proof.chain_seq < block.first_seq || proof.chain_seq > block.last_seq {
        return Err(ProofError::NotInBlock(proof.chain_seq));
    }
    let path: Vec<Hash> = proof
        .path
        .iter()
        .map(|h| chain::from_hex(h).ok_or(ProofError::BadHash))
        .collect::<Result<_, _>>()?;
    // Bounds checked above and by `fields` (first ≤ chain_seq ≤ last).
    let m = usize::try_from(proof.chain_seq - block.first_seq).map_err(|_| ProofError::Broken)?;
    let n = usize::try_from(
        block
            .last_seq
            .checked_sub(block.first_seq)
            .ok_or(ProofError::Broken)?,
    )
    .map_err(|_| ProofError::Broken)?
    .checked_add(1)
    .ok_or(ProofError::Broken)?;
    if chain::root_from_path(m, n, &leaf, &path) != Some(block.merkle_root) {
        return Err(ProofError::NotUnderRoot);
    }
    let previous = chain::from_hex(&proof.previous_seal).ok_or(ProofError::BadHash)?;
    let mut seal = chain::seal(&previous, &block);
    let mut before = block;
    for later in &proof.later {
        let fields = later.fields()?;
        if Some(fields.block) != before.block.checked_add(1)
            || Some(fields.first_seq) != before.last_seq.checked_add(1)
            || fields.last_seq < fields.first_seq
        {
            return Err(ProofError::Broken);
        }
        seal = chain::seal(&seal, &fields);
        before = fields;
    }
    let (trusted_head, trusted_seal) = trusted.hashes().map_err(|_| ProofError::BadHash)?;
    if trusted.format != crate::seal::digest::DIGEST_FORMAT
        || before.block != trusted.block
        || before.last_seq != trusted.last_seq
        || before.chain_head != trusted_head
        || before.last_position != trusted.last_position
        || before.sealed_at != trusted.sealed_at
        || seal != trusted_seal
    {
        return Err(ProofError::NotUnderDigest);
    }
    Ok(())
}

/// Makes the proof that the event at `position` is under `digest` (the
/// latest seal when `None`), after checking that its block still matches
/// its seal. One REPEATABLE READ snapshot.
pub async fn prove(
    pool: &deadpool_postgres::Pool,
    position: i64,
    digest: Option<Digest>,
) -> Result<Proof, ProveError> {
    let mut client = pool::get(pool).await?;
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(StoreError::from)?;
    let digest = match digest {
        Some(d) => d,
        None => crate::seal::digest::latest(&tx)
            .await?
            .ok_or(ProveError::NothingSealed)?,
    };
    if let Some((cut, floor)) = crate::store::cut::cut_and_floor_any_schema(&*tx).await? {
        if position < floor {
            let what = format!("the event at position {position} (prove it with --archive DIR)");
            return Err(crate::store::cut::archived(what, cut).into());
        }
    }
    let (chain_seq, block, previous_seal) = locate(&tx, position).await?;
    reaches(&block, &digest)?;
    let later = later_blocks(&tx, block.block, &digest).await?;
    let (leaves, event) = block_leaves(&tx, &block, position).await?;
    tx.commit().await.map_err(StoreError::from)?;
    let found = Located {
        event,
        chain_seq,
        block,
        previous_seal,
        leaves,
    };
    assemble(found, later, digest)
}

/// An event found in its block: what a proof is made of, with the later
/// blocks and the digest. The block's leaves are checked against its root.
pub(crate) struct Located {
    pub event: Value,
    pub chain_seq: i64,
    pub block: SealedBlock,
    pub previous_seal: String,
    pub leaves: Vec<Hash>,
}

/// The event's block is at or before the digest's, and near enough.
pub(crate) fn reaches(block: &SealedBlock, digest: &Digest) -> Result<(), ProveError> {
    if block.block > digest.block {
        return Err(ProveError::AfterDigest {
            block: block.block,
            digest_block: digest.block,
        });
    }
    if digest.block - block.block > MAX_PROOF_LATER_BLOCKS {
        return Err(ProveError::TooFar(digest.block - block.block));
    }
    Ok(())
}

/// The database's blocks after `after`, up to the digest's.
pub(crate) async fn later_blocks(
    client: &impl deadpool_postgres::GenericClient,
    after: i64,
    digest: &Digest,
) -> Result<Vec<SealedBlock>, ProveError> {
    Ok(client
        .query(
            &format!(
                "SELECT {SEAL_COLUMNS} FROM seals WHERE block > $1 AND block <= $2 ORDER BY block"
            ),
            &[&after, &digest.block],
        )
        .await
        .map_err(StoreError::from)?
        .iter()
        .map(SealedBlock::from_row)
        .collect::<Result<_, _>>()?)
}

/// The proof of `found` under `digest`, through `later` (every block after
/// the event's, up to the digest's).
pub(crate) fn assemble(
    found: Located,
    later: Vec<SealedBlock>,
    digest: Digest,
) -> Result<Proof, ProveError> {
    let block = found.block;
    reaches(&block, &digest)?;
    if later.last().map_or(block.block, |b| b.block) != digest.block {
        return Err(ProveError::DigestNotInLog(digest.block));
    }
    let m = (found.chain_seq - block.first_seq) as usize;
    Ok(Proof {
        format: format_for(&found.event).to_owned(),
        event: found.event,
        chain_seq: found.chain_seq,
        path: chain::merkle_path(m, &found.leaves)
            .iter()
            .map(chain::hex)
            .collect(),
        block,
        previous_seal: found.previous_seal,
        later,
        digest,
    })
}

/// A seal row as `SealedBlock::from_row` reads it, then the seal hash before
/// it and its own (`ArchivedSeal::from_row`).
pub(crate) const SEAL_COLUMNS: &str = "block, first_seq, last_seq, merkle_root, chain_head, \
                            version, last_tx_id, last_position, sealed_at, previous, hash";

/// The chain row of the event at `position`, its block, and the seal hash
/// before that block.
async fn locate(
    tx: &deadpool_postgres::Transaction<'_>,
    position: i64,
) -> Result<(i64, SealedBlock, String), ProveError> {
    let chain_seq: i64 = tx
        .query_opt(
            "SELECT seq FROM event_chain WHERE position = $1",
            &[&position],
        )
        .await
        .map_err(StoreError::from)?
        .ok_or(ProveError::NotSealed(position))?
        .get(0);
    let row = tx
        .query_opt(
            &format!("SELECT {SEAL_COLUMNS} FROM seals WHERE first_seq <= $1 AND last_seq >= $1"),
            &[&chain_seq],
        )
        .await
        .map_err(StoreError::from)?
        .ok_or(ProveError::NotSealed(position))?;
    let previous_seal = crate::domain::fingerprint::hex_bytes(row.get::<_, &[u8]>(9));
    Ok((chain_seq, SealedBlock::from_row(&row)?, previous_seal))
}

/// Every leaf of `block`, recomputed from the log, and the event at
/// `position` as served; refused when they no longer make the sealed root.
async fn block_leaves(
    tx: &deadpool_postgres::Transaction<'_>,
    block: &SealedBlock,
    position: i64,
) -> Result<(Vec<Hash>, Value), ProveError> {
    let rows = tx
        .query(
            &format!(
                "SELECT e.* FROM event_chain c
                 LEFT JOIN (SELECT {EVENT_COLUMNS} FROM events) e ON e.position = c.position
                 WHERE c.seq BETWEEN $1 AND $2 ORDER BY c.seq"
            ),
            &[&block.first_seq, &block.last_seq],
        )
        .await
        .map_err(StoreError::from)?;
    let altered = || ProveError::Altered(block.block);
    let mut leaves = Vec::with_capacity(rows.len());
    let mut event = None;
    let expected = (block.last_seq - block.first_seq + 1) as usize;
    let missing =
        rows.len() < expected || rows.iter().any(|r| r.get::<_, Option<i64>>(0).is_none());
    if missing {
        // A block the cut runs through: some of its events (and chain
        // rows) left the database, so its leaves are in the archive.
        if let Some((cut, _)) = crate::store::cut::cut_and_floor_any_schema(&**tx).await? {
            let what = format!(
                "part of block {} (prove position {position} with --archive DIR)",
                block.block
            );
            return Err(crate::store::cut::archived(what, cut).into());
        }
        return Err(altered());
    }
    for r in &rows {
        let e = recorded_event(r).map_err(|_| altered())?;
        leaves.push(leaf_of(&e)?);
        if e.position == position {
            event = Some(event_json(&e));
        }
    }
    let sealed_root = chain::from_hex(&block.merkle_root).ok_or_else(altered)?;
    match event {
        Some(e) if leaves.len() == expected && chain::merkle_root(&leaves) == sealed_root => {
            Ok((leaves, e))
        }
        _ => Err(altered()),
    }
}
