//! Room in the log: its partitions are made ahead of the appends
//! (`schema/0021_partitioned_log.sql`, docs/archive.md). There is no default
//! partition, so an append whose position no partition holds fails; the
//! sealer makes room on every pass and the command path makes room and
//! tries again when an append finds none, so neither a server nor a ledger
//! run from the command line stops for want of a partition.

use tokio_postgres::GenericClient;
use tracing::info;

use crate::store::StoreError;

/// Makes the partitions the log and the chain need next: half a partition
/// ahead of their last row, or room for `ahead` rows more if that is more
/// (the database caps it); returns how many it made. Safe to call from any
/// number of processes at once: the database function serialises them, and
/// a second caller finds the room made.
pub async fn make_room(client: &impl GenericClient, ahead: i64) -> Result<i32, StoreError> {
    let made: i32 = client
        .query_one("SELECT log_make_room($1)", &[&ahead])
        .await?
        .get(0);
    if made > 0 {
        info!(made, "partitions of the log made ahead");
    }
    Ok(made)
}

/// How many partitions the log (`events`) and the chain (`event_chain`)
/// have attached now, by table: what every lookup of a stream or an order
/// pays for (docs/archive.md), for `/metrics`.
pub async fn attached(client: &impl GenericClient) -> Result<Vec<(String, i64)>, StoreError> {
    Ok(client
        // From the catalog, not `log_partitions`: a partition detached by
        // hand is still in the ranges' record.
        .query(
            "SELECT c.relname::text, count(i.inhrelid) FROM pg_class c
             LEFT JOIN pg_inherits i ON i.inhparent = c.oid
             WHERE c.oid IN ('events'::regclass, 'event_chain'::regclass)
             GROUP BY c.relname ORDER BY 1",
            &[],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

/// Cuts an empty log anew into partitions of `rows` rows (the owner's, for
/// a ledger that has not written its first event: the partitions made at
/// migration are dropped, the size is set, and room for `ahead` rows is
/// made). A log or chain with a row in it is refused and left as it was.
pub async fn partition_anew(
    client: &mut tokio_postgres::Client,
    rows: i64,
    ahead: i64,
) -> Result<i32, StoreError> {
    let tx = client.transaction().await?;
    let empty: bool = tx
        .query_one(
            "SELECT NOT EXISTS (SELECT 1 FROM events) AND NOT EXISTS (SELECT 1 FROM event_chain)",
            &[],
        )
        .await?
        .get(0);
    if !empty {
        return Err(StoreError::Database(
            "only an empty log is cut into partitions anew".into(),
        ));
    }
    tx.execute(
        "UPDATE log_partitioning SET rows_per_partition = $1",
        &[&rows],
    )
    .await?;
    tx.batch_execute(
        "DO $$
         DECLARE r record;
         BEGIN
             FOR r IN SELECT parent, name FROM log_partitions WHERE detached_at IS NULL LOOP
                 EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', r.parent, r.name);
                 EXECUTE format('DROP TABLE %I', r.name);
             END LOOP;
             DELETE FROM log_partitions;
         END $$;",
    )
    .await?;
    let made = make_room(&tx, ahead).await?;
    tx.commit().await?;
    Ok(made)
}
