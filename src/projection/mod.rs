//! The projection runtime: folds the log into read tables in safe commit
//! order, exactly once, with the checkpoint in the same transaction; runs one
//! active worker per projection; rebuilds a projection beside the live copy and
//! swaps it in atomically.

mod batch;
mod live;
pub mod rebuild;
pub mod status;
pub mod worker;

pub use crate::read_model::{by_name, ReadModel, ALL};
pub use batch::{apply_batch, Applied};
pub use live::apply_live;

use tokio_postgres::GenericClient;

use crate::store::StoreError;

/// Where a copy of a projection lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// What readers see, in the `public` schema.
    Live,
    /// A copy being built from the start, in `stockledger_rebuild`.
    Rebuild,
}

pub const LIVE_SCHEMA: &str = "public";
pub const REBUILD_SCHEMA: &str = "stockledger_rebuild";
/// Where the replaced live tables go for the moment of the swap.
pub const RETIRED_SCHEMA: &str = "stockledger_retired";

impl Slot {
    pub fn as_str(self) -> &'static str {
        match self {
            Slot::Live => "live",
            Slot::Rebuild => "rebuild",
        }
    }

    pub fn schema(self) -> &'static str {
        match self {
            Slot::Live => LIVE_SCHEMA,
            Slot::Rebuild => REBUILD_SCHEMA,
        }
    }
}

/// Creates the live tables and checkpoint of every projection that does not
/// have them yet. Called with the migrations; the caller holds the migration
/// lock, so two processes cannot both create them.
pub async fn install_live(client: &impl GenericClient) -> Result<(), StoreError> {
    for &p in ALL {
        let exists = client
            .query_opt(
                "SELECT 1 FROM projection_checkpoints WHERE name = $1 AND slot = 'live'",
                &[&p.name()],
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
                "INSERT INTO projection_checkpoints (name, slot, definition_checksum) VALUES ($1, 'live', $2)",
                &[&p.name(), &p.checksum()],
            )
            .await?;
    }
    Ok(())
}
