//! Connection pools. Every connection gets the server-side timeouts of
//! `limits`, so a stuck statement or an abandoned transaction cannot hold item
//! locks for long.

use std::time::Duration;

use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use tokio_postgres::NoTls;

use crate::limits::{IDLE_IN_TRANSACTION_TIMEOUT_MS, POOL_WAIT_TIMEOUT_MS, STATEMENT_TIMEOUT_MS};
use crate::store::StoreError;

pub fn build(mut config: tokio_postgres::Config, size: usize) -> Result<Pool, StoreError> {
    let mut options = config.get_options().unwrap_or_default().to_owned();
    options.push_str(&format!(
        " -c statement_timeout={STATEMENT_TIMEOUT_MS} -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT_MS}"
    ));
    config.options(options.trim());
    if config.get_application_name().is_none() {
        config.application_name("stockledger");
    }
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            // Fast recycling only checks that the connection is open; a broken
            // one is dropped and the next get() opens a fresh one.
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size)
        .wait_timeout(Some(Duration::from_millis(POOL_WAIT_TIMEOUT_MS)))
        .create_timeout(Some(Duration::from_millis(POOL_WAIT_TIMEOUT_MS)))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| StoreError::Database(format!("building the pool: {e}")))
}

pub async fn get(pool: &Pool) -> Result<Object, StoreError> {
    pool.get().await.map_err(|e| match e {
        PoolError::Timeout(_) => {
            StoreError::Unavailable("no database connection became free in time".into())
        }
        PoolError::Backend(e) => StoreError::Unavailable(e.to_string()),
        other => StoreError::Unavailable(other.to_string()),
    })
}
