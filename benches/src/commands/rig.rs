//! What every run of the flash-sale benchmark shares: the benchmark's fresh
//! database, the store with group commit, the HTTP server (a process of
//! its own) and the baselines' pool, each with `--pool-size` connections.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use stockledger::audit::AuditReport;
use stockledger::domain::{Command, CommandContext};
use stockledger::store::group::{Gather, GroupConfig};
use stockledger::store::{pool, Store};

use super::http::HttpTarget;
use super::CommandsArgs;
use crate::database::bench_database;
use crate::output::Printer;

/// How long the projections may take to catch up after all runs.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(600);

pub struct Rig {
    /// The library way in: `Store::execute` with group commit.
    pub store: Arc<Store>,
    pub http: HttpTarget,
    /// The naive-sql baselines' connections, to the same database.
    pub baseline_pool: Pool,
}

impl Rig {
    /// Creates the database afresh, migrates it and starts everything.
    pub async fn start(args: &CommandsArgs, database_url: Option<&str>) -> anyhow::Result<Rig> {
        let config = bench_database(database_url, &args.database, true).await?;
        let plain = Store::new(pool::build(config.clone(), args.pool_size)?);
        plain.migrate().await?;
        let group = GroupConfig {
            window: Duration::from_micros(args.group_window_us),
            gather: match args.group_gather.as_str() {
                "yield" => Gather::Yield,
                _ => Gather::Timer,
            },
            pipelines: args.group_pipelines,
            max_batch: args.group_max_batch,
            ..GroupConfig::default()
        };
        Ok(Rig {
            store: Arc::new(plain.grouped(group)),
            http: HttpTarget::start(
                database_url,
                &args.database,
                args.pool_size,
                stockledger::limits::DEFAULT_REQUEST_TIMEOUT_MS,
            )
            .await?,
            baseline_pool: pool::build(config, args.pool_size)?,
        })
    }

    /// Sends `receipts` in one transaction; a refusal is an error.
    pub async fn receive(&self, receipts: Vec<Command>) -> anyhow::Result<()> {
        if receipts.is_empty() {
            return Ok(());
        }
        let batch: Vec<_> = receipts
            .into_iter()
            .map(|c| (c, CommandContext::new("bench")))
            .collect();
        for result in self.store.execute_batch(&batch).await? {
            result?;
        }
        Ok(())
    }

    /// Stops the server, catches the projections up and audits the ledger.
    pub async fn finish(self, printer: &Printer) -> anyhow::Result<AuditReport> {
        self.http.stop().await;
        printer.note("catching up the projections and auditing...");
        stockledger::projection::worker::catch_up_fully(self.store.pool(), CATCH_UP_LIMIT).await?;
        Ok(stockledger::audit::audit(self.store.pool()).await?)
    }
}
