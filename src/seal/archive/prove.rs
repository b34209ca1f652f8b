//! `prove --archive`: the proof of an event in an archive file, made from
//! the file and the seals after it. It is the proof `prove` makes from the
//! database, field for field, so `verify-proof` checks it the same way.

use crate::seal::archive::check;
use crate::seal::archive::read::Segment;
use crate::seal::archive::Archive;
use crate::seal::chain::Hash;
use crate::seal::digest::Digest;
use crate::seal::proof::{self, Located, Proof, ProveError, SealedBlock};
use crate::store::pool;

/// The proof that the event at `position` is under `digest` (the latest
/// seal when `None`), or `None` when no segment of `archive` holds it.
pub async fn prove(
    pool: &deadpool_postgres::Pool,
    archive: &Archive,
    position: i64,
    digest: Option<Digest>,
) -> Result<Option<Proof>, ProveError> {
    if let Some(p) = archive.problems.first() {
        return Err(ProveError::Archive(format!("{}: {}", p.file, p.what)));
    }
    let mut found = None;
    for s in &archive.segments {
        let m = &s.manifest;
        if (m.min_position..=m.max_position).contains(&position) {
            found = find(archive, s, position).await?;
            if found.is_some() {
                break;
            }
        }
    }
    let Some(found) = found else {
        return Ok(None);
    };
    let client = pool::get(pool).await?;
    archive
        .anchor(&**client)
        .await
        .map_err(ProveError::Archive)?;
    let digest = match digest {
        Some(d) => d,
        None => crate::seal::digest::latest(&client)
            .await?
            .ok_or(ProveError::NothingSealed)?,
    };
    proof::reaches(&found.block, &digest)?;
    // `reaches` bounds how many later blocks there are to read and keep.
    let mut later: Vec<SealedBlock> = Vec::new();
    let (after, through) = (found.block.block, digest.block);
    for s in &archive.segments {
        let m = &s.manifest;
        if m.last_block > after && m.first_block <= through {
            let seals = s
                .seals()
                .map_err(|why| ProveError::Archive(format!("{}: {why}", s.name)))?;
            later.extend(
                seals
                    .into_iter()
                    .map(|s| s.block)
                    .filter(|b| b.block > after && b.block <= through),
            );
        }
    }
    if digest.block > archive.last_block() {
        later.extend(proof::later_blocks(&client, archive.last_block(), &digest).await?);
    }
    proof::assemble(found, later, digest).map(Some)
}

/// The event at `position` in segment `s`, with its block's leaves. Every
/// row up to the end of its block is held against the seals first
/// (`CheckedRows`), so a proof is made only from what was sealed.
async fn find(
    archive: &Archive,
    s: &Segment,
    position: i64,
) -> Result<Option<Located>, ProveError> {
    let refused =
        |why: String| ProveError::Archive(format!("{why} (run `stockledger verify --archive`)"));
    let seals = s
        .seals()
        .map_err(|why| refused(format!("{}: {why}", s.name)))?;
    let mut rows = archive.checked_segment(s).map_err(refused)?;
    let (mut block, mut leaves) = (0usize, Vec::<Hash>::new());
    let mut target = None;
    while let Some(batch) = rows.next().await.map_err(refused)? {
        for r in batch {
            // Checked: the rows follow on, inside the segment's blocks.
            while seals
                .get(block)
                .is_some_and(|b| r.line.chain_seq > b.block.last_seq)
            {
                (block, leaves) = (block + 1, Vec::new());
            }
            let (Some(sealed), Ok(leaf)) = (seals.get(block), r.leaf) else {
                return Err(refused(format!("{}: a row outside its blocks", s.name)));
            };
            leaves.push(leaf);
            if check::cursor(&r.line).1 == position {
                target = Some((r.line.chain_seq, r.line.event));
            }
            if r.line.chain_seq < sealed.block.last_seq {
                continue;
            }
            if let Some((chain_seq, event)) = target.take() {
                return Ok(Some(Located {
                    event,
                    chain_seq,
                    block: sealed.block.clone(),
                    previous_seal: sealed.previous.clone(),
                    leaves,
                }));
            }
        }
    }
    Ok(None)
}
