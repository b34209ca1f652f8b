//! What every run of the flash-sale benchmark shares: the benchmark's fresh
//! database, the store with group commit and the baselines' pool, each with
//! `--pool-size` connections. The HTTP server (a process of its own) is
//! started for each HTTP run, so that a server's workers never fold another
//! run's events, and stopped after it.

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

/// After a run with workers: how often, and how long at most, the read
/// models' lag is looked at until it is zero.
const CAUGHT_UP_POLL: Duration = Duration::from_millis(10);
const CAUGHT_UP_LIMIT: Duration = Duration::from_secs(30);

pub struct Rig {
    /// The library way in: `Store::execute` with group commit.
    pub store: Arc<Store>,
    /// The naive-sql baselines' connections, to the same database.
    pub baseline_pool: Pool,
    database_url: Option<String>,
    database: String,
    pool_size: usize,
}

/// The notifying trigger of schema 0003, which schema 0011 dropped.
const COMMIT_NOTIFY_SQL: &str = "
    CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('stockledger_events', '');
        RETURN NULL;
    END;
    $$;
    CREATE TRIGGER events_wake_readers AFTER INSERT ON events
        FOR EACH STATEMENT EXECUTE FUNCTION events_notify();";

impl Rig {
    /// Creates the database afresh, migrates it and starts everything.
    pub async fn start(args: &CommandsArgs, database_url: Option<&str>) -> anyhow::Result<Rig> {
        let config = bench_database(database_url, &args.database, true).await?;
        let plain = Store::new(pool::build(config.clone(), args.pool_size)?);
        plain.migrate().await?;
        if args.commit_notify {
            pool::get(plain.pool())
                .await?
                .batch_execute(COMMIT_NOTIFY_SQL)
                .await?;
        }
        let group = GroupConfig {
            window: Duration::from_micros(args.group_window_us),
            gather: match args.group_gather.as_str() {
                "yield" => Gather::Yield,
                "timer" => Gather::Timer,
                _ => Gather::Adaptive,
            },
            pipelines: args.group_pipelines,
            max_batch: args.group_max_batch,
            ..GroupConfig::default()
        };
        Ok(Rig {
            store: Arc::new(plain.grouped(group)),
            baseline_pool: pool::build(config, args.pool_size)?,
            database_url: database_url.map(str::to_owned),
            database: args.database.clone(),
            pool_size: args.pool_size,
        })
    }

    /// Starts the HTTP server, with its workers or without. With them, the
    /// read models and the seals are first brought up to date, so that the
    /// run's figures hold no catching up on earlier runs.
    pub async fn start_http(&self, workers: bool) -> anyhow::Result<HttpTarget> {
        if workers {
            self.catch_up().await?;
        }
        HttpTarget::start(
            self.database_url.as_deref(),
            &self.database,
            self.pool_size,
            stockledger::limits::DEFAULT_REQUEST_TIMEOUT_MS,
            workers,
        )
        .await
    }

    async fn catch_up(&self) -> anyhow::Result<()> {
        let pool = self.store.pool();
        stockledger::projection::worker::catch_up_fully(pool, CATCH_UP_LIMIT).await?;
        stockledger::seal::sealer::catch_up(pool).await?;
        Ok(())
    }

    /// Milliseconds until every read model has caught up with the log, from
    /// now (polled every `CAUGHT_UP_POLL`), or `None` if not within
    /// `CAUGHT_UP_LIMIT`.
    pub async fn time_to_caught_up(&self) -> anyhow::Result<Option<f64>> {
        let started = std::time::Instant::now();
        while started.elapsed() < CAUGHT_UP_LIMIT {
            let client = pool::get(self.store.pool()).await?;
            let statuses = stockledger::projection::status::status(&**client).await?;
            if statuses.iter().all(|s| s.live.lag_events == 0) {
                return Ok(Some(started.elapsed().as_secs_f64() * 1e3));
            }
            drop(client);
            tokio::time::sleep(CAUGHT_UP_POLL).await;
        }
        Ok(None)
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

    /// Catches the projections up and audits the ledger.
    pub async fn finish(self, printer: &Printer) -> anyhow::Result<AuditReport> {
        printer.note("catching up the projections and auditing...");
        stockledger::projection::worker::catch_up_fully(self.store.pool(), CATCH_UP_LIMIT).await?;
        Ok(stockledger::audit::audit(self.store.pool()).await?)
    }
}
