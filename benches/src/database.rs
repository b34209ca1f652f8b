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

/// What `table` takes on disk with its TOAST and indexes, summed over its
/// partitions: a partitioned table's own size is 0 (schema 0021 partitions
/// the log and the chain), and a plain table is its own only leaf.
pub async fn table_bytes(client: &tokio_postgres::Client, table: &str) -> anyhow::Result<i64> {
    Ok(client
        .query_one(
            "SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::int8
             FROM pg_partition_tree($1::text::regclass) WHERE isleaf",
            &[&table],
        )
        .await?
        .get(0))
}
