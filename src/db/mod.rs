//! Where the database is: `DATABASE_URL` when set, otherwise the private
//! cluster (started on demand). Everything that needs a database comes through
//! `open`, which also applies pending migrations.

pub mod cluster;

use std::str::FromStr;

use tokio_postgres::NoTls;

use crate::limits::DEFAULT_POOL_SIZE;
use crate::store::{pool, Store, StoreError};
use cluster::{ClusterError, PrivateCluster, Started};

/// The database the private cluster serves commands from.
pub const PRIVATE_DATABASE: &str = "stockledger";

/// The login the private cluster's commands and workers connect as: a
/// member of the service role, which may append to the log but not change
/// it. Migrations and rebuilds run as the cluster's superuser (`owner`).
pub const PRIVATE_SERVICE_LOGIN: &str = "stockledger_app";

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("DATABASE_URL is not a valid connection string")]
    BadUrl(#[source] tokio_postgres::Error),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DbError {
    /// The store's error inside, which carries the stable code and whether
    /// a retry may succeed (a lock wait that ran out, an unreachable server).
    pub fn store(&self) -> Option<&StoreError> {
        match self {
            DbError::Store(e) => Some(e),
            DbError::BadUrl(_) | DbError::Cluster(_) => None,
        }
    }
}

/// A server to talk to, and how we got it.
pub struct Server {
    /// Connection settings for the server's default database.
    pub config: tokio_postgres::Config,
    /// A one-line description for people: which server, and what we did.
    pub description: String,
    /// Set when we initialised or started the private cluster.
    pub started: Option<Started>,
}

/// Finds the server: `database_url` if given, else the private cluster.
pub async fn server(database_url: Option<&str>) -> Result<Server, DbError> {
    if let Some(url) = database_url.filter(|u| !u.is_empty()) {
        let config = tokio_postgres::Config::from_str(url).map_err(DbError::BadUrl)?;
        return Ok(Server {
            config,
            description: "the server named by DATABASE_URL".into(),
            started: None,
        });
    }
    let cluster = PrivateCluster::at(PrivateCluster::default_location());
    let c = cluster.clone();
    let started = tokio::task::spawn_blocking(move || c.ensure_running())
        .await
        .expect("the cluster task does not panic")?;
    ensure_database(&cluster.config("postgres"), PRIVATE_DATABASE).await?;
    Ok(Server {
        config: cluster.config(PRIVATE_DATABASE),
        description: format!(
            "the private PostgreSQL cluster in {}",
            cluster.data_dir.display()
        ),
        started: Some(started),
    })
}

/// Creates database `name` on the server of `admin` if it does not exist.
pub async fn ensure_database(admin: &tokio_postgres::Config, name: &str) -> Result<(), StoreError> {
    let (client, connection) = crate::store::pool::hardened(admin.clone())
        .connect(NoTls)
        .await?;
    let conn = tokio::spawn(connection);
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .await?
        .is_some();
    if !exists {
        // Identifiers cannot be bound parameters; quote it as one.
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        match client
            .batch_execute(&format!("CREATE DATABASE {quoted}"))
            .await
        {
            Ok(()) => {}
            // Another process created it first: that is what we wanted.
            Err(e) if crate::store::error::is_duplicate_database(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
    drop(client);
    let _ = conn.await;
    Ok(())
}

/// Drops database `name` on the server of `admin`, disconnecting its users.
pub async fn drop_database(admin: &tokio_postgres::Config, name: &str) -> Result<(), StoreError> {
    let (client, connection) = crate::store::pool::hardened(admin.clone())
        .connect(NoTls)
        .await?;
    let conn = tokio::spawn(connection);
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {quoted} WITH (FORCE)"))
        .await?;
    drop(client);
    let _ = conn.await;
    Ok(())
}

/// A scratch database `name` on the server (`database_url`, else the private
/// cluster), for runs that make their own data (chaos, the benchmarks): dropped
/// and created afresh when `recreate`, else created only if missing; migrating
/// it is the caller's. `name` is quoted as an identifier; callers check names
/// people give them (`domain::ids::check_id`). Returns its connection settings.
pub async fn scratch_database(
    database_url: Option<&str>,
    name: &str,
    recreate: bool,
) -> Result<tokio_postgres::Config, DbError> {
    let server = server(database_url).await?;
    if recreate {
        drop_database(&server.config, name).await?;
    }
    ensure_database(&server.config, name).await?;
    let mut config = server.config;
    config.dbname(name);
    Ok(config)
}

/// Opens a migrated store on `database_url` or the private cluster.
pub async fn open(database_url: Option<&str>) -> Result<(Store, Server), DbError> {
    open_with_pool(database_url, DEFAULT_POOL_SIZE).await
}

/// `open` with a pool of `pool_size` connections. On the private cluster
/// the store connects as `PRIVATE_SERVICE_LOGIN` once the migrations (as
/// the superuser) are done; on `DATABASE_URL` as the URL says.
pub async fn open_with_pool(
    database_url: Option<&str>,
    pool_size: usize,
) -> Result<(Store, Server), DbError> {
    let server = server(database_url).await?;
    let owner = Store::new(pool::build(server.config.clone(), 2)?);
    owner.migrate().await?;
    if server.started.is_none() {
        let store = Store::new(pool::build(server.config.clone(), pool_size)?);
        return Ok((store, server));
    }
    let admin = crate::store::pool::get(owner.pool()).await?;
    crate::store::roles::ensure_service_login(&**admin, PRIVATE_SERVICE_LOGIN).await?;
    let mut config = server.config.clone();
    config.user(PRIVATE_SERVICE_LOGIN);
    Ok((Store::new(pool::build(config, pool_size)?), server))
}

/// A migrated store that acts as the owner: the server's own connection
/// settings (`DATABASE_URL` must then name a member of the owner role), or
/// the private cluster's superuser. For rebuilds.
pub async fn open_owner(database_url: Option<&str>) -> Result<(Store, Server), DbError> {
    let server = server(database_url).await?;
    let store = Store::new(pool::build(server.config.clone(), DEFAULT_POOL_SIZE)?);
    store.migrate().await?;
    Ok((store, server))
}
