//! One snapshot shared by several connections (`pg_export_snapshot`): how
//! the audit and `verify` read the log on more than one connection at once
//! and still see one moment of it.

use deadpool_postgres::{ClientWrapper, Pool};

use crate::limits::SNAPSHOT_IDLE_TIMEOUT_MS;
use crate::store::{pool, StoreError};

/// Lets `tx`, a read-only snapshot, sit idle up to `SNAPSHOT_IDLE_TIMEOUT_MS`
/// instead of the pool's minute, for the rest of it.
pub async fn idle_long(tx: &deadpool_postgres::Transaction<'_>) -> Result<(), StoreError> {
    tx.batch_execute(&idle_long_sql()).await?;
    Ok(())
}

fn idle_long_sql() -> String {
    format!("SET LOCAL idle_in_transaction_session_timeout = {SNAPSHOT_IDLE_TIMEOUT_MS}")
}

/// The id of `tx`'s snapshot, for `join`. `tx` must be REPEATABLE READ and
/// stay open while others use it; it may now sit idle for as long as they
/// read (`idle_long`).
pub async fn export(tx: &deadpool_postgres::Transaction<'_>) -> Result<String, StoreError> {
    idle_long(tx).await?;
    let id: String = tx
        .query_one("SELECT pg_export_snapshot()", &[])
        .await?
        .get(0);
    // A snapshot id is the server's (hex digits and dashes); check before quoting it.
    if !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Err(StoreError::Database(
            format!("unexpected snapshot id {id:?}").into(),
        ));
    }
    Ok(id)
}

/// A connection taken out of the pool, in a read-only transaction on the
/// snapshot `id`. Dropping it ends that transaction.
pub async fn join(pool: &Pool, id: &str) -> Result<ClientWrapper, StoreError> {
    let client = deadpool_postgres::Object::take(pool::get(pool).await?);
    client
        .batch_execute(&format!(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '{id}'; {}",
            idle_long_sql()
        ))
        .await?;
    Ok(client)
}
