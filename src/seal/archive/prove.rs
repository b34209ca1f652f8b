//! `prove --archive`: the proof of an event in an archive file, made from
//! the file and the seals after it. It is the proof `prove` makes from the
//! database, field for field, so `verify-proof` checks it the same way.

use crate::seal::archive::read::{Item, Segment};
use crate::seal::archive::Archive;
use crate::seal::chain::{self, Hash};
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
    let digest = match digest {
        Some(d) => d,
        None => crate::seal::digest::latest(&client)
            .await?
            .ok_or(ProveError::NothingSealed)?,
    };
    proof::reaches(&found.block, &digest)?;
    let mut later: Vec<SealedBlock> = archive
        .segments
        .iter()
        .flat_map(|s| &s.manifest.seals)
        .map(|s| s.block.clone())
        .filter(|b| b.block > found.block.block && b.block <= digest.block)
        .collect();
    if digest.block > archive.last_block() {
        later.extend(proof::later_blocks(&client, archive.last_block(), &digest).await?);
    }
    proof::assemble(found, later, digest).map(Some)
}

/// The event at `position` in segment `s`, with its block's leaves, which
/// must make the block's sealed root.
async fn find(
    archive: &Archive,
    s: &Segment,
    position: i64,
) -> Result<Option<Located>, ProveError> {
    let seals = &s.manifest.seals;
    let altered = |b: &SealedBlock| {
        ProveError::Archive(format!(
            "{}: block {} does not match its seal (run `stockledger verify --archive`)",
            s.name, b.block
        ))
    };
    let mut rows = archive.rows_of(vec![s.clone()]);
    let (mut block, mut leaves) = (0usize, Vec::<Hash>::new());
    let mut target = None;
    while let Some(item) = rows.recv().await {
        let batch = match item {
            Item::Rows(batch) => batch,
            Item::Problem(p) => return Err(ProveError::Archive(format!("{}: {}", p.file, p.what))),
        };
        for r in batch {
            while seals
                .get(block)
                .is_some_and(|b| r.line.chain_seq > b.block.last_seq)
            {
                (block, leaves) = (block + 1, Vec::new());
            }
            let Some(sealed) = seals.get(block) else {
                return Err(altered(&seals[seals.len() - 1].block));
            };
            leaves.push(r.leaf().map_err(|_| altered(&sealed.block))?);
            if r.position() == position {
                target = Some((r.line.chain_seq, r.line.event.clone()));
            }
            if r.line.chain_seq < sealed.block.last_seq {
                continue;
            }
            let Some((chain_seq, event)) = target.take() else {
                continue;
            };
            let root = chain::from_hex(&sealed.block.merkle_root);
            if root != Some(chain::merkle_root(&leaves)) {
                return Err(altered(&sealed.block));
            }
            return Ok(Some(Located {
                event,
                chain_seq,
                block: sealed.block.clone(),
                previous_seal: sealed.previous.clone(),
                leaves,
            }));
        }
    }
    Ok(None)
}
