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
