//! The whole schema: the migrations of `schema/` (the store's) and the live
//! tables of every read model (the projection runtime's), installed under
//! one migration lock, so that two processes starting together cannot race
//! on either.

use futures_util::future::BoxFuture;
use tokio_postgres::{Client, Transaction};

use crate::store::{migrate, pool, Store, StoreError};

impl Store {
    /// Applies pending schema migrations and installs missing read-model
    /// tables; returns the migration versions applied.
    pub async fn migrate(&self) -> Result<Vec<i32>, StoreError> {
        let mut client = pool::get(self.pool()).await?;
        let client: &mut Client = &mut client;
        migrate_through(client, i32::MAX).await
    }

    /// The migrations this binary knows that the database lacks.
    pub async fn pending_migrations(&self) -> Result<Vec<i32>, StoreError> {
        pool::reading(self.pool(), async |c| migrate::pending(c).await).await
    }
}

/// Applies the pending migrations up to and including version `last`, then
/// installs the read models' missing live tables: how a test builds a
/// database as an older release left it. (Not quite, for `last` 14 to 18:
/// `event_types` is filled from schema 19 on, when it has every column this
/// binary writes, so there it stays empty.)
pub async fn migrate_through(client: &mut Client, last: i32) -> Result<Vec<i32>, StoreError> {
    migrate::migrate_through(client, last, install_read_models).await
}

fn install_read_models<'a>(tx: &'a Transaction<'_>) -> BoxFuture<'a, Result<(), StoreError>> {
    Box::pin(crate::projection::install_live(tx))
}
