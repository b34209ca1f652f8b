//! The benchmark's own database: on the server `DATABASE_URL` names, or else
//! on the private cluster the product starts on demand.

use stockledger::db;
use stockledger::domain::ids::check_id;

/// Database `name` (fresh when `recreate`), not yet migrated; its settings.
pub async fn bench_database(
    database_url: Option<&str>,
    name: &str,
    recreate: bool,
) -> anyhow::Result<tokio_postgres::Config> {
    check_id("database", name)?;
    Ok(db::scratch_database(database_url, name, recreate).await?)
}

/// The tables that hold the rows of table `$1` (an oid): its leaf
/// partitions when it is partitioned (its own size is then 0: schema 0021
/// partitions the log and the chain), else itself (`pg_partition_tree` lists
/// nothing for a plain table).
pub const LEAVES: &str = "SELECT relid FROM pg_partition_tree($1::oid) WHERE isleaf
                          UNION ALL SELECT oid FROM pg_class WHERE oid = $1::oid AND relkind <> 'p'";

/// What `table` takes on disk with its TOAST and indexes, summed over the
/// tables that hold its rows (`LEAVES`).
pub async fn table_bytes(client: &tokio_postgres::Client, table: &str) -> anyhow::Result<i64> {
    let oid: u32 = client
        .query_one("SELECT $1::text::regclass::oid", &[&table])
        .await?
        .get(0);
    Ok(client
        .query_one(
            &format!(
                "SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::int8 FROM ({LEAVES}) l"
            ),
            &[&oid],
        )
        .await?
        .get(0))
}
