//! Packing the log's full, sealed partitions (`stockledger pack`,
//! docs/archive.md). The unique indexes of the open partition grow at many
//! places at once (a stream and an order per reservation, from many callers),
//! and a B-tree page that is not the rightmost splits in half, so they stay
//! about half full; the GIN index keeps its pending list's leftovers. A
//! partition that takes no more appends can have them rebuilt once, packed:
//! `REINDEX TABLE CONCURRENTLY`, which blocks neither appends nor reads.
//!
//! Only the owner may rebuild a partition's indexes; the service role cannot
//! (and its `/metrics` does not need to). Packing is about space alone: an
//! event committed into a packed partition after the fact (a position handed
//! out before the partition was sealed past, committed late) is indexed as any
//! insert is.

use deadpool_postgres::{Object, Pool};
use tokio_postgres::Client;

use crate::limits::{MAX_PARTITIONS_PER_PACK, PACK_LOCK_WAIT_MS, PACK_STATEMENT_TIMEOUT_MS};
use crate::store::{pool, StoreError};

/// One partition packed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Packed {
    pub partition: String,
    /// Its positions: `first` up to, not including, `next`.
    pub first: i64,
    pub next: i64,
    /// Table, TOAST and indexes, before and after.
    pub bytes_before: i64,
    pub bytes_after: i64,
    /// Half-built indexes a run cut short left behind, dropped first.
    pub leftovers_dropped: usize,
}

/// Packs the oldest full, sealed partitions of the log not packed yet, at
/// most `MAX_PARTITIONS_PER_PACK`; returns what it packed, oldest first.
///
/// A partition is full and sealed when its last position is at or below the
/// position of the last sealed event, so the sequence has passed it and its
/// appends are done. Each partition is marked packed once its indexes are
/// rebuilt, so a run cut short goes on where it stopped.
pub async fn pack_sealed(pool: &Pool) -> Result<Vec<Packed>, StoreError> {
    // A connection of its own, not returned to the pool: its timeouts are
    // this job's, and REINDEX CONCURRENTLY runs outside any transaction.
    let client = Object::take(pool::get(pool).await?);
    client
        .batch_execute(&format!(
            "SET statement_timeout = {PACK_STATEMENT_TIMEOUT_MS};
             SET lock_timeout = {PACK_LOCK_WAIT_MS}"
        ))
        .await?;
    let due = client
        .query(
            "SELECT name, first, next FROM log_partitions
             WHERE parent = 'events' AND detached_at IS NULL AND packed_at IS NULL
               AND next - 1 <= (SELECT coalesce(max(last_position), 0) FROM seals)
             ORDER BY first LIMIT $1",
            &[&MAX_PARTITIONS_PER_PACK],
        )
        .await?;
    let mut packed = Vec::with_capacity(due.len());
    for row in due {
        let (partition, first, next): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
        packed.push(pack_one(&client, partition, first, next).await?);
    }
    Ok(packed)
}

async fn pack_one(
    client: &Client,
    partition: String,
    first: i64,
    next: i64,
) -> Result<Packed, StoreError> {
    // The name as SQL spells it, quoted where it must be.
    let table: String = client
        .query_one("SELECT $1::text::regclass::text", &[&partition])
        .await?
        .get(0);
    let leftovers_dropped = drop_leftovers(client, &table).await?;
    let size = "SELECT pg_total_relation_size($1::text::regclass)";
    let bytes_before: i64 = client.query_one(size, &[&table]).await?.get(0);
    client
        .batch_execute(&format!("REINDEX TABLE CONCURRENTLY {table}"))
        .await?;
    let bytes_after: i64 = client.query_one(size, &[&table]).await?.get(0);
    client
        .execute(
            "UPDATE log_partitions SET packed_at = now() WHERE parent = 'events' AND first = $1",
            &[&first],
        )
        .await?;
    Ok(Packed {
        partition,
        first,
        next,
        bytes_before,
        bytes_after,
        leftovers_dropped,
    })
}

/// Drops the invalid indexes a `REINDEX CONCURRENTLY` cut short leaves on
/// `table` (PostgreSQL's advice): they cost space and are never used.
async fn drop_leftovers(client: &Client, table: &str) -> Result<usize, StoreError> {
    let invalid = client
        .query(
            "SELECT indexrelid::regclass::text FROM pg_index
             WHERE indrelid = $1::text::regclass AND NOT indisvalid",
            &[&table],
        )
        .await?;
    for index in &invalid {
        let index: String = index.get(0);
        client
            .batch_execute(&format!("DROP INDEX CONCURRENTLY {index}"))
            .await?;
    }
    Ok(invalid.len())
}
