//! The projection runtime: folds the log into read tables in safe commit
//! order, exactly once, with the checkpoint in the same transaction; runs one
//! active worker per projection; rebuilds a projection beside the live copy and
//! swaps it in atomically.

mod batch;
mod copy;
mod live;
pub mod rebuild;
pub mod snapshot;
pub mod status;
pub mod worker;

pub use crate::read_model::slot::{
    Slot, LIVE_SCHEMA, REBUILD_SCHEMA, RETIRED_SCHEMA, SNAPSHOT_SCHEMA,
};
pub use crate::read_model::{by_name, ReadModel, ALL};
pub use batch::{apply_batch, Applied};
pub use live::apply_live;

use tokio_postgres::GenericClient;

use crate::store::StoreError;

/// Creates the live tables and checkpoint of every projection that does not
/// have them yet. Called with the migrations; the caller holds the migration
/// lock, so two processes cannot both create them.
pub async fn install_live(client: &impl GenericClient) -> Result<(), StoreError> {
    for &p in ALL {
        let exists = client
            .query_opt(
                "SELECT 1 FROM projection_checkpoints WHERE name = $1 AND slot = $2",
                &[&p.name(), &Slot::Live.as_str()],
            )
            .await?
            .is_some();
        if exists {
            continue;
        }
        client
            .batch_execute(&format!(
                "SET search_path = {LIVE_SCHEMA}; {}",
                p.schema_sql()
            ))
            .await?;
        client
            .execute(
                "INSERT INTO projection_checkpoints (name, slot, definition_checksum) VALUES ($1, $3, $2)",
                &[&p.name(), &p.checksum(), &Slot::Live.as_str()],
            )
            .await?;
    }
    Ok(())
}
