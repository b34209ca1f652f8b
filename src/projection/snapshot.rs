//! The read models at the cut (docs/archive.md, decision 5).
//!
//! Once `stockledger archive --detach` has taken partitions of the log out,
//! a read model can no longer be folded from the first event. So before the
//! cut moves past a partition, `take` brings every read model's snapshot
//! copy (the `Snapshot` slot, tables in `stockledger_snapshot`) forward to
//! that partition's last event, with the model's own SQL, exactly as the
//! live copy was filled. A rebuild after the cut starts from it (`seed`) and
//! replays only the events that stayed; what checks that rebuild is a replay
//! of the archive's files and the log (`audit::ReplayVerifier` with the
//! archive), which also compares the snapshot itself (`audit
//! --from-archive`).
//!
//! A snapshot is made from the first event, so the first detach makes it
//! (as long as a rebuild takes); each later one only brings it forward. Its
//! definition is the one it was made by: after a change of a read model's
//! definition, its snapshot cannot be made again once the log's start left.
//! The detach then drops it (with a warning) and goes on, rather than mix two
//! definitions in one copy or hold every later partition back; a rebuild of
//! that model is refused from then on (`HISTORY_ARCHIVED`).

use deadpool_postgres::{ClientWrapper, Object, Pool};
use futures_util::future::BoxFuture;

use crate::limits::REBUILD_BATCH_EVENTS;
use crate::projection::batch::{apply_range, lock_checkpoint};
use crate::projection::copy::prepare_copy;
use crate::projection::{ReadModel, Slot, ALL};
use crate::seal::archive::detach::BeforeTheCut;
use crate::store::{cut, horizon, pool, Cursor, StoreError};

/// The projection runtime's side of a detach: every read model's snapshot
/// brought forward before the cut moves (`seal::archive::detach`).
pub struct Snapshots;

impl BeforeTheCut for Snapshots {
    fn cover<'a>(
        &'a self,
        pool: &'a Pool,
        through: Cursor,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(take(pool, through))
    }
}

/// Brings every read model's snapshot forward to `through` (or as near as
/// the events that have settled allow: a snapshot left short is named by
/// the detach's own check of who has not taken a partition's events).
pub async fn take(pool: &Pool, through: Cursor) -> Result<(), StoreError> {
    let mut client = Object::take(pool::get(pool).await?);
    // Every run, not only after a copy is made: a run cut short between the
    // two would leave the service able to write a snapshot.
    if snapshot_schema_exists(&client).await? {
        read_only_for_the_service(&mut client).await?;
    }
    for &p in ALL {
        bring_forward(&mut client, p, through).await?;
    }
    Ok(())
}

async fn bring_forward(
    client: &mut ClientWrapper,
    p: &dyn ReadModel,
    through: Cursor,
) -> Result<(), StoreError> {
    let checksum = client
        .query_opt(
            "SELECT definition_checksum FROM projection_checkpoints WHERE name = $1 AND slot = $2",
            &[&p.name(), &Slot::Snapshot.as_str()],
        )
        .await?
        .map(|r| r.get::<_, String>(0));
    if checksum.as_deref() != Some(&p.checksum()) {
        let cut = cut::cut(&**client).await?;
        if checksum.is_none() && cut.is_some() {
            // Dropped by an earlier run (below), or a model new since the
            // cut: nothing to bring forward, and it cannot be rebuilt.
            return Ok(());
        }
        if cut.is_some() {
            // By an earlier definition, and it cannot be made again from the
            // first event: it goes, so that it holds no partition back and
            // no audit compares it with this definition's fold. Rebuilds of
            // this model are refused from now on (`seed`).
            tracing::warn!(
                read_model = p.name(),
                "the snapshot at the cut was made by an earlier definition and cannot be made again: dropped; this read model can no longer be rebuilt"
            );
            return drop_snapshot(client, p).await;
        }
        // Made from the first event: the whole log is still here.
        prepare_copy(client, p, Slot::Snapshot).await?;
        read_only_for_the_service(client).await?;
    }
    loop {
        // Never past `through`'s transaction, nor past what has settled:
        // the events of the partition that leaves, and those before them.
        let horizon = horizon::safe_horizon(client).await?.min(through.tx_id + 1);
        let tx = client.transaction().await?;
        let from = lock_checkpoint(&tx, p, Slot::Snapshot)
            .await?
            .ok_or_else(|| {
                StoreError::Database(format!("the snapshot of {} disappeared", p.name()).into())
            })?;
        if from >= through {
            return Ok(());
        }
        let a = apply_range(&tx, p, Slot::Snapshot, from, REBUILD_BATCH_EVENTS, horizon).await?;
        if a.events == 0 {
            return Ok(());
        }
        tx.commit().await?;
    }
}

async fn snapshot_schema_exists(client: &ClientWrapper) -> Result<bool, StoreError> {
    Ok(client
        .query_one(
            "SELECT to_regnamespace($1) IS NOT NULL",
            &[&Slot::Snapshot.schema()],
        )
        .await?
        .get(0))
}

/// Drops `p`'s snapshot: its tables and its checkpoint, in one transaction.
async fn drop_snapshot(client: &mut ClientWrapper, p: &dyn ReadModel) -> Result<(), StoreError> {
    let schema = Slot::Snapshot.schema();
    let tx = client.transaction().await?;
    crate::store::roles::act_as_owner(&*tx).await?;
    let mut sql = String::new();
    for t in p.tables() {
        sql.push_str(&format!("DROP TABLE IF EXISTS {schema}.{t};"));
    }
    tx.batch_execute(&sql).await?;
    tx.execute(
        "DELETE FROM projection_checkpoints WHERE name = $1 AND slot = $2",
        &[&p.name(), &Slot::Snapshot.as_str()],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The service reads the snapshots (an audit from the archive compares
/// them) and writes none of them: only the owner's detach moves them.
async fn read_only_for_the_service(client: &mut ClientWrapper) -> Result<(), StoreError> {
    use crate::store::roles::SERVICE_ROLE;
    let schema = Slot::Snapshot.schema();
    let tx = client.transaction().await?;
    crate::store::roles::act_as_owner(&*tx).await?;
    tx.batch_execute(&format!(
        "GRANT USAGE ON SCHEMA {schema} TO {SERVICE_ROLE};
         REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA {schema} FROM {SERVICE_ROLE};"
    ))
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Fills `p`'s new, empty rebuild copy with its snapshot and gives the copy
/// the snapshot's checkpoint: the rebuild replays only the events after it,
/// all still in the database. Refused (`HISTORY_ARCHIVED`) when there is no
/// snapshot by the current definition at or after the cut.
pub(crate) async fn seed(client: &mut ClientWrapper, p: &dyn ReadModel) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    crate::store::roles::act_as_owner(&*tx).await?;
    // Locked, so that a detach bringing it forward waits until it is copied.
    let snapshot = tx
        .query_opt(
            "SELECT definition_checksum, tx_id::text::bigint, position
             FROM projection_checkpoints WHERE name = $1 AND slot = $2 FOR SHARE",
            &[&p.name(), &Slot::Snapshot.as_str()],
        )
        .await?;
    let usable = snapshot.filter(|r| r.get::<_, String>(0) == p.checksum());
    let Some(at) = usable.map(|r| Cursor {
        tx_id: r.get(1),
        position: r.get(2),
    }) else {
        cut::refuse_if_cut(&*tx, || {
            format!(
                "the events a rebuild of {} would start from (it has no snapshot at the cut by this release's definition)",
                p.name()
            )
        })
        .await?;
        return Err(StoreError::Database(
            format!("{} has no snapshot to start from", p.name()).into(),
        ));
    };
    cut::refuse_before(&*tx, at, || {
        format!(
            "the events between the snapshot of {} and the cut",
            p.name()
        )
    })
    .await?;
    let (from, to) = (Slot::Snapshot.schema(), Slot::Rebuild.schema());
    let mut sql = String::new();
    for t in p.tables() {
        let columns = stored_columns(&tx, from, t).await?;
        sql.push_str(&format!(
            "INSERT INTO {to}.{t} ({columns}) SELECT {columns} FROM {from}.{t};"
        ));
    }
    tx.batch_execute(&sql).await?;
    tx.execute(
        "UPDATE projection_checkpoints AS r
         SET tx_id = s.tx_id, position = s.position, events_applied = s.events_applied,
             last_event_at = s.last_event_at, updated_at = now()
         FROM projection_checkpoints AS s
         WHERE r.name = $1 AND r.slot = $2 AND s.name = $1 AND s.slot = $3",
        &[&p.name(), &Slot::Rebuild.as_str(), &Slot::Snapshot.as_str()],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The columns of `schema.table` a row is written with (generated ones are
/// computed again), quoted, in order.
async fn stored_columns(
    tx: &deadpool_postgres::Transaction<'_>,
    schema: &str,
    table: &str,
) -> Result<String, StoreError> {
    let names: Vec<String> = tx
        .query(
            "SELECT quote_ident(attname) FROM pg_attribute
             WHERE attrelid = format('%I.%I', $1::text, $2::text)::regclass
               AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
             ORDER BY attnum",
            &[&schema, &table],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok(names.join(", "))
}
