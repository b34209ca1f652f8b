//! `stockledger archive --detach`: the partitions whose every event is in
//! the archive leave the database (`store::detach` does the database's
//! side, docs/archive.md decisions 3, 4 and 7).
//!
//! From then on the files are the only copy of those events, so before a
//! partition of the log leaves, every segment holding one of its positions
//! is read again and checked: its rows against its seals (`check_segment`),
//! and its seals against the ones the database keeps (seals never leave).
//! A file changed since it was written stops the run before anything of
//! that partition is touched.
//!
//! What the read models must keep of a partition's events before the cut
//! passes it (their snapshots, decision 5) is the caller's to provide
//! (`BeforeTheCut`, the projection runtime's `projection::snapshot`): it
//! stands on a floor above this one.

use deadpool_postgres::Pool;
use futures_util::future::BoxFuture;

use crate::limits::MAX_PARTITIONS_PER_DETACH;
use crate::seal::archive::read::{check_segment, Segment};
use crate::seal::archive::{Archive, ArchiveError};
use crate::store::detach::{Archived, Detached, Detacher, Partition};
use crate::store::{pool, Cursor, StoreError};

/// Keeps what the read models need of the events up to `through` before
/// they leave: called before a partition is considered, with its last event.
pub trait BeforeTheCut: Sync {
    fn cover<'a>(
        &'a self,
        pool: &'a Pool,
        through: Cursor,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// What a run took out, and why the next partition stays.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DetachReport {
    pub detached: Vec<Detached>,
    /// For the log and for the chain, why its oldest partition left in the
    /// database stays (nothing when none is left to consider).
    pub kept: Vec<String>,
}

/// Takes out every partition of the log, then of the chain, that `archive`
/// (opened whole) holds and the database no longer needs, oldest first, at
/// most `MAX_PARTITIONS_PER_DETACH` of each.
pub async fn detach(
    pool: &Pool,
    archive: &Archive,
    before_the_cut: &dyn BeforeTheCut,
) -> Result<DetachReport, ArchiveError> {
    let client = pool::get(pool).await?;
    archive
        .anchor(&**client)
        .await
        .map_err(|why| ArchiveError::Unreadable {
            path: archive.dir.display().to_string(),
            why,
        })?;
    drop(client);
    let a = Archived {
        cursor: archive.last_cursor(),
        last_seq: archive.last_seq(),
        last_block: archive.last_block(),
    };
    let mut d = Detacher::open(pool).await?;
    let mut report = DetachReport::default();
    for _ in 0..MAX_PARTITIONS_PER_DETACH {
        let Some(p) = d.oldest("events").await? else {
            break;
        };
        // First, so that a snapshot left short is named by `keeps`.
        if let Some(last) = d.last_of(&p).await? {
            before_the_cut.cover(pool, last).await?;
        }
        if let Some(why) = d.keeps(&p, &a).await? {
            report.kept.push(why);
            break;
        }
        recheck(pool, archive, &d, &p).await?;
        report.detached.push(d.detach_events(&p, &a).await?);
    }
    if report.detached.iter().any(|d| d.parent == "events") {
        crate::store::detach::vacuum_carried(pool).await?;
    }
    for _ in 0..MAX_PARTITIONS_PER_DETACH {
        let Some(p) = d.oldest("event_chain").await? else {
            break;
        };
        if let Some(why) = d.chain_keeps(&p, &a).await? {
            report.kept.push(why);
            break;
        }
        report.detached.push(d.detach_chain(&p, &a).await?);
    }
    Ok(report)
}

/// Checks again every segment that holds an event of the log's partition
/// `p`: its file against its manifest and seals, its seals against the
/// database's. Which segments those are comes from the database's chain and
/// seals (`Detacher::sealed_blocks`): a manifest's position ranges are under
/// no hash, so one that lies must not be able to turn this check off.
async fn recheck(
    pool: &Pool,
    archive: &Archive,
    d: &Detacher,
    p: &Partition,
) -> Result<(), ArchiveError> {
    let Some((first, last)) = d.sealed_blocks(p).await? else {
        return Ok(()); // Nothing of `p` is sealed: `keeps` let it go empty.
    };
    let holding: Vec<&Segment> = archive
        .segments
        .iter()
        .filter(|s| s.manifest.first_block <= last && s.manifest.last_block >= first)
        .collect();
    // The archive's segments run from block 1 without a gap (`whole`), so
    // these cover every block from `first` to `last`; an archive that ends
    // before `last` holds less than `keeps` was told.
    if archive.last_block() < last {
        return Err(ArchiveError::Unreadable {
            path: archive.dir.display().to_string(),
            why: format!(
                "it ends at block {}, but {}'s events are sealed up to block {last}; {} stays in the database",
                archive.last_block(),
                p.name,
                p.name
            ),
        });
    }
    for s in holding {
        let refused = |why: String| ArchiveError::Unreadable {
            path: s.manifest_path.display().to_string(),
            why: format!("{why}; {} stays in the database", p.name),
        };
        same_seals(pool, s)
            .await?
            .map_or(Ok(()), |why| Err(refused(why)))?;
        check_segment(archive, s).await.map_err(refused)?;
    }
    Ok(())
}

/// Why the segment's seals are not the database's, if they are not.
async fn same_seals(pool: &Pool, s: &Segment) -> Result<Option<String>, StoreError> {
    let seals = match s.seals() {
        Ok(seals) => seals,
        Err(why) => return Ok(Some(why)),
    };
    let client = pool::get(pool).await?;
    let stored = client
        .query(
            "SELECT block, hash FROM seals WHERE block >= $1 AND block <= $2 ORDER BY block",
            &[&s.manifest.first_block, &s.manifest.last_block],
        )
        .await?;
    let differs = stored.len() != seals.len()
        || stored.iter().zip(&seals).any(|(row, seal)| {
            let hash = crate::domain::fingerprint::hex_bytes(row.get::<_, &[u8]>(1));
            row.get::<_, i64>(0) != seal.block.block || hash != seal.hash
        });
    Ok(differs.then(|| "its seals are not the ones the database keeps".to_owned()))
}
