//! A read model's copy in a slot's schema, made empty: what a rebuild fills
//! and what the snapshot at the cut is seeded into.

use deadpool_postgres::ClientWrapper;

use crate::projection::{ReadModel, Slot};
use crate::store::StoreError;

/// Drops any copy of `slot` left by an earlier, interrupted run and creates
/// an empty one, with its checkpoint at the start of the log.
pub(crate) async fn prepare_copy(
    client: &mut ClientWrapper,
    p: &dyn ReadModel,
    slot: Slot,
) -> Result<(), StoreError> {
    let schema = slot.schema();
    let tx = client.transaction().await?;
    // The copy is the owner's, as the live tables are (the service may
    // write it, by the owner's default privileges).
    crate::store::roles::act_as_owner(&*tx).await?;
    let mut sql = format!("CREATE SCHEMA IF NOT EXISTS {schema};");
    for t in p.tables() {
        sql.push_str(&format!("DROP TABLE IF EXISTS {schema}.{t};"));
    }
    sql.push_str(&format!(
        "SET LOCAL search_path = {schema}, public; {}",
        p.schema_sql()
    ));
    tx.batch_execute(&sql).await?;
    tx.execute(
        "INSERT INTO projection_checkpoints (name, slot, definition_checksum) VALUES ($1, $3, $2)
         ON CONFLICT (name, slot) DO UPDATE
         SET tx_id = '0'::xid8, position = 0, events_applied = 0, last_event_at = NULL,
             definition_checksum = EXCLUDED.definition_checksum, updated_at = now(), started_at = now()",
        &[&p.name(), &p.checksum(), &slot.as_str()],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
