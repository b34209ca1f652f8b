//! Schema migrations: the numbered files of `schema/`, compiled into the
//! binary, applied in order, each in its own transaction, recorded with a
//! checksum. Re-running is a no-op; two processes starting at once wait for
//! each other on an advisory lock; an applied file that was since edited is
//! refused rather than silently ignored.

use futures_util::future::BoxFuture;
use tokio_postgres::{Client, Transaction};

use crate::domain::fingerprint::sha256_hex;
use crate::limits::{MIGRATION_LOCK_WAIT_MS, MIGRATION_STATEMENT_TIMEOUT_MS};
use crate::store::error::Cause;
use crate::store::StoreError;
use crate::store::{event_types, roles};

pub use crate::store::locks::MIGRATION_LOCK_KEY;

/// The last migration that shapes `event_types` (schema 14 creates it, 17
/// adds `low_stock`, 18 `incoming`, 19 `backordered`): from it on, the
/// table is kept equal to this binary's definitions, which need every
/// column.
const EVENT_TYPES_MIGRATION: i32 = 19;

pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    pub sql: &'static str,
}

pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "event_log",
        sql: include_str!("../../schema/0001_event_log.sql"),
    },
    Migration {
        version: 2,
        name: "item_balances",
        sql: include_str!("../../schema/0002_item_balances.sql"),
    },
    Migration {
        version: 3,
        name: "projection_runtime",
        sql: include_str!("../../schema/0003_projection_runtime.sql"),
    },
    Migration {
        version: 4,
        name: "api_keys",
        sql: include_str!("../../schema/0004_api_keys.sql"),
    },
    Migration {
        version: 5,
        name: "item_indexes",
        sql: include_str!("../../schema/0005_item_indexes.sql"),
    },
    Migration {
        version: 6,
        name: "server_incarnation",
        sql: include_str!("../../schema/0006_server_incarnation.sql"),
    },
    Migration {
        version: 7,
        name: "typed_log",
        sql: include_str!("../../schema/0007_typed_log.sql"),
    },
    Migration {
        version: 8,
        name: "relay",
        sql: include_str!("../../schema/0008_relay.sql"),
    },
    Migration {
        version: 9,
        name: "seals",
        sql: include_str!("../../schema/0009_seals.sql"),
    },
    Migration {
        version: 10,
        name: "roles",
        sql: include_str!("../../schema/0010_roles.sql"),
    },
    Migration {
        version: 11,
        name: "no_commit_notify",
        sql: include_str!("../../schema/0011_no_commit_notify.sql"),
    },
    Migration {
        version: 12,
        name: "recorded_by_the_database",
        sql: include_str!("../../schema/0012_recorded_by_the_database.sql"),
    },
    Migration {
        version: 13,
        name: "key_admin",
        sql: include_str!("../../schema/0013_key_admin.sql"),
    },
    Migration {
        version: 14,
        name: "event_types",
        sql: include_str!("../../schema/0014_event_types.sql"),
    },
    Migration {
        version: 15,
        name: "item_settings",
        sql: include_str!("../../schema/0015_item_settings.sql"),
    },
    Migration {
        version: 16,
        name: "reorder_points",
        sql: include_str!("../../schema/0016_reorder_points.sql"),
    },
    Migration {
        version: 17,
        name: "low_stock_types",
        sql: include_str!("../../schema/0017_low_stock_types.sql"),
    },
    Migration {
        version: 18,
        name: "incoming_types",
        sql: include_str!("../../schema/0018_incoming_types.sql"),
    },
    Migration {
        version: 19,
        name: "backorders",
        sql: include_str!("../../schema/0019_backorders.sql"),
    },
    Migration {
        version: 20,
        name: "event_versions",
        sql: include_str!("../../schema/0020_event_versions.sql"),
    },
    Migration {
        version: 21,
        name: "partitioned_log",
        sql: include_str!("../../schema/0021_partitioned_log.sql"),
    },
    Migration {
        version: 22,
        name: "detached_partitions",
        sql: include_str!("../../schema/0022_detached_partitions.sql"),
    },
    Migration {
        version: 23,
        name: "snapshot_slot",
        sql: include_str!("../../schema/0023_snapshot_slot.sql"),
    },
    Migration {
        version: 24,
        name: "snapshot_checkpoint_guard",
        sql: include_str!("../../schema/0024_snapshot_checkpoint_guard.sql"),
    },
];

/// The last schema this release knows.
pub fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text        NOT NULL,
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

/// What else belongs to the schema: installed after the migrations, under
/// the same lock, in a transaction of its own, as the owner (so that the
/// service may use what it creates). The read models' live tables are
/// (`app::migrate`); the store does not know them.
pub type Installer = for<'a, 'b> fn(&'a Transaction<'b>) -> BoxFuture<'a, Result<(), StoreError>>;

/// Applies the pending migrations up to and including version `last`, then
/// `also`; returns the versions applied.
pub async fn migrate_through(
    client: &mut Client,
    last: i32,
    also: Installer,
) -> Result<Vec<i32>, StoreError> {
    // Every command of the CLI migrates first, so processes started together
    // queue here: each waits its turn (up to `MIGRATION_LOCK_WAIT_MS`), not
    // the command path's one-second lock timeout, which under load ran out
    // and failed commands that only had to wait.
    // The longer waits are `SET LOCAL`, so they end with this transaction
    // whatever happens to the caller; the lock is the session's and outlives it.
    let tx = client.transaction().await?;
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = {MIGRATION_LOCK_WAIT_MS}; \
         SET LOCAL statement_timeout = {MIGRATION_LOCK_WAIT_MS}"
    ))
    .await?;
    tx.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK_KEY])
        .await?;
    tx.commit().await?;
    let result = migrate_locked(client, last, also).await;
    // Unlock even on failure; a lost connection releases the lock anyway.
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK_KEY])
        .await;
    result
}

async fn migrate_locked(
    client: &mut Client,
    last: i32,
    also: Installer,
) -> Result<Vec<i32>, StoreError> {
    // Only when missing: the service role may not create tables, and a
    // current schema must not need it to.
    let exists: bool = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        client.batch_execute(CREATE_TABLE).await?;
    }
    let applied: Vec<(i32, String)> = client
        .query("SELECT version, checksum FROM schema_migrations", &[])
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut done = Vec::new();
    for m in MIGRATIONS.iter().filter(|m| m.version <= last) {
        let checksum = sha256_hex(m.sql.as_bytes());
        if let Some((_, stored)) = applied.iter().find(|(v, _)| *v == m.version) {
            if *stored != checksum {
                return Err(StoreError::Migration(format!(
                    "migration {} ({}) was edited after it was applied; add a new migration instead",
                    m.version, m.name
                ).into()));
            }
            continue;
        }
        let tx = client.transaction().await?;
        tx.batch_execute(&format!(
            "SET LOCAL statement_timeout = {MIGRATION_STATEMENT_TIMEOUT_MS}"
        ))
        .await?;
        if m.version >= roles::FIRST_OWNED_MIGRATION {
            roles::act_as_owner(&tx).await?;
        }
        tx.batch_execute(m.sql).await.map_err(|e| {
            StoreError::Migration(Cause::with_source(format!("{} ({})", m.version, m.name), e))
        })?;
        if m.version == EVENT_TYPES_MIGRATION {
            // Filled in the transaction that gives it its last column: the
            // table is never empty once its shape is complete. (Between 14
            // and 17 in one run it is, and no fold runs before `migrate`
            // has finished.)
            event_types::sync(&tx, true).await?;
        }
        tx.execute(
            "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
            &[&m.version, &m.name, &checksum],
        )
        .await?;
        tx.commit().await?;
        done.push(m.version);
    }
    let tx = client.transaction().await?;
    let owner = roles::act_as_owner(&tx).await?;
    if last >= EVENT_TYPES_MIGRATION {
        event_types::sync(&tx, owner).await?;
    }
    also(&tx).await?;
    tx.commit().await?;
    Ok(done)
}

/// Migrations this binary knows that the database has not applied.
pub async fn pending(client: &Client) -> Result<Vec<i32>, StoreError> {
    let exists: bool = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        return Ok(MIGRATIONS.iter().map(|m| m.version).collect());
    }
    let applied: Vec<i32> = client
        .query("SELECT version FROM schema_migrations", &[])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok(MIGRATIONS
        .iter()
        .map(|m| m.version)
        .filter(|v| !applied.contains(v))
        .collect())
}

#[cfg(test)]
mod tests {
    /// Every file in `schema/` is a registered migration, in order: a new
    /// file that is not listed would silently never be applied.
    #[test]
    fn every_schema_file_is_a_migration() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/schema");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .expect("schema/ is readable")
            .map(|e| {
                e.expect("a directory entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        let listed: Vec<String> = super::MIGRATIONS
            .iter()
            .map(|m| format!("{:04}_{}.sql", m.version, m.name))
            .collect();
        assert_eq!(files, listed);
    }
}
