//! Connection pools. Every connection gets the server-side timeouts of
//! `limits` (statements, lock waits, abandoned transactions) and TCP
//! keepalive and user timeouts on both ends, so neither a stuck statement, an
//! abandoned transaction nor a silently dead peer can hold a connection, or
//! item locks, for long.

use std::time::Duration;

use deadpool_postgres::{
    Hook, HookError, Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use tokio_postgres::NoTls;

use crate::limits::{
    CONNECT_TIMEOUT_MS, IDLE_IN_TRANSACTION_TIMEOUT_MS, LOCK_TIMEOUT_MS, POOL_WAIT_TIMEOUT_MS,
    STATEMENT_TIMEOUT_MS, TCP_KEEPALIVE_IDLE_SECONDS, TCP_KEEPALIVE_INTERVAL_SECONDS,
    TCP_KEEPALIVE_RETRIES, TCP_USER_TIMEOUT_MS,
};
use crate::store::error::Cause;
use crate::store::StoreError;

/// `config` with the timeouts every stockledger connection carries. The
/// server-side settings travel as startup options; the client-side ones are
/// socket options (they do nothing on a Unix socket, where no peer can vanish).
/// `stockledger.schema` says which schema this release was built for: a
/// database refuses to chain events it would read wrongly from a session of
/// an older one (schema 0020).
/// JIT is off: every statement here is short or streams, and on a young table
/// without statistics the planner's estimates ran high enough to compile a
/// command's one-row lookups, costing ~10 ms a batch (docs/benchmarks.md).
pub fn hardened(mut config: tokio_postgres::Config) -> tokio_postgres::Config {
    let mut options = config.get_options().unwrap_or_default().to_owned();
    options.push_str(&format!(
        " -c statement_timeout={STATEMENT_TIMEOUT_MS} \
          -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT_MS} \
          -c lock_timeout={LOCK_TIMEOUT_MS} \
          -c tcp_keepalives_idle={TCP_KEEPALIVE_IDLE_SECONDS} \
          -c tcp_keepalives_interval={TCP_KEEPALIVE_INTERVAL_SECONDS} \
          -c tcp_keepalives_count={TCP_KEEPALIVE_RETRIES} \
          -c tcp_user_timeout={TCP_USER_TIMEOUT_MS} \
          -c jit=off \
          -c stockledger.schema={}",
        crate::store::migrate::latest()
    ));
    config.options(options.trim());
    config
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(TCP_KEEPALIVE_IDLE_SECONDS))
        .keepalives_interval(Duration::from_secs(TCP_KEEPALIVE_INTERVAL_SECONDS))
        .keepalives_retries(TCP_KEEPALIVE_RETRIES)
        .tcp_user_timeout(Duration::from_millis(TCP_USER_TIMEOUT_MS));
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS));
    }
    if config.get_application_name().is_none() {
        config.application_name("stockledger");
    }
    config
}

pub fn build(config: tokio_postgres::Config, size: usize) -> Result<Pool, StoreError> {
    let manager = Manager::from_config(
        hardened(config),
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
        .recycle_timeout(Some(Duration::from_millis(POOL_WAIT_TIMEOUT_MS)))
        .runtime(Runtime::Tokio1)
        .post_create(Hook::async_fn(|client, _| {
            Box::pin(async move {
                // Bounded like the connection itself: a connection that
                // stalls here is dropped, never handed out. One that cannot
                // record the row still serves: the function writes the row
                // itself when it is missing.
                let deadline = Duration::from_millis(POOL_WAIT_TIMEOUT_MS);
                match tokio::time::timeout(deadline, record_incarnation(client)).await {
                    Err(_) => {
                        return Err(HookError::message(
                            "a new connection stalled while recording the server's incarnation",
                        ))
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "could not record the server's incarnation")
                    }
                    Ok(Ok(())) => {}
                }
                Ok::<(), HookError>(())
            })
        }))
        .build()
        .map_err(|e| StoreError::Database(Cause::with_source("building the pool", e)))
}

/// Makes sure the server's incarnation row (`schema/0006`) exists, in a
/// transaction of its own, before the connection serves anything.
///
/// The row is gone after every restart, crash recovery and failover (the
/// table is unlogged), and whichever transaction writes it first holds its
/// key until it ends. Written by the first *command* transaction, a COMMIT
/// that never arrives would hold every other command, and the outcome check
/// of the stuck one, behind that key for as long as the connection stalls.
/// Written here it commits at once; every connection after a restart is a
/// new one, so it passes here first. Before the schema has the function (a
/// pool used to migrate a new database) there is nothing to record, nor on a
/// standby, which cannot write (a read pool), nor for a login that may not
/// (a key administrator's).
async fn record_incarnation(client: &tokio_postgres::Client) -> Result<(), StoreError> {
    let exists = client
        .query_one(
            "SELECT to_regprocedure('stockledger_incarnation()') IS NOT NULL
                    AND NOT pg_is_in_recovery()
                    AND has_table_privilege('server_incarnation', 'INSERT')",
            &[],
        )
        .await?;
    if exists.get::<_, bool>(0) {
        client
            .execute("SELECT stockledger_incarnation()", &[])
            .await?;
    }
    Ok(())
}

pub async fn get(pool: &Pool) -> Result<Object, StoreError> {
    pool.get().await.map_err(|e| match e {
        PoolError::Timeout(_) => StoreError::Unavailable(
            "no database connection became free (or could be opened) in time".into(),
        ),
        PoolError::Backend(e) => StoreError::from(e),
        other => StoreError::Unavailable(Cause::with_source("taking a pooled connection", other)),
    })
}

/// Runs `read` on a connection from `pool`; see `read_on`.
pub async fn reading<T>(
    pool: &Pool,
    read: impl AsyncFnOnce(&Object) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    read_on(get(pool).await?, read).await
}

/// Runs `read` on `client`. If the caller stops waiting first (a request
/// timed out and its future was dropped), the statement the read may still
/// be running is cancelled on the server, and the connection is closed
/// rather than handed to the next caller in the middle of that statement.
pub async fn read_on<T>(
    client: Object,
    read: impl AsyncFnOnce(&Object) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut lent = Lent(Some(client));
    let result = read(lent.0.as_ref().expect("lent until the read ends")).await;
    // Ended: back to the pool as usual.
    lent.0.take();
    result
}

/// A connection lent to one read, until the read ends.
struct Lent(Option<Object>);

impl Drop for Lent {
    fn drop(&mut self) {
        let Some(client) = self.0.take() else { return };
        let cancel = client.cancel_token();
        let client = Object::take(client);
        // Without a runtime (the process is ending) there is nothing to
        // cancel for: the connection closes with it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = cancel.cancel_query(NoTls).await {
                    tracing::debug!(error = %e, "could not cancel an abandoned read");
                }
                drop(client);
            });
        }
    }
}
