//! `stockledger chaos`: mixed load with faults injected between the command
//! path and PostgreSQL, then the verdict (see `src/chaos_run.rs`).

use crate::chaos_run::{self as run, ChaosConfig};
use clap::Args as ClapArgs;
use stockledger::db;
use stockledger::limits::{CHAOS_DEFAULT_SECONDS, CHAOS_DEFAULT_WRITERS, CHAOS_MIN_POOL_SIZE};
use tokio_util::sync::CancellationToken;

use super::output::Printer;
use super::read_models::cancel_on_signal;
use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct ChaosArgs {
    /// How long the load and the faults run.
    #[arg(long, default_value_t = CHAOS_DEFAULT_SECONDS)]
    seconds: u64,
    /// Concurrent writers (order services), each retrying with the same ids.
    #[arg(long, default_value_t = CHAOS_DEFAULT_WRITERS)]
    writers: usize,
    /// Connections of the command path's pool.
    #[arg(long, default_value_t = stockledger::limits::DEFAULT_POOL_SIZE)]
    pool_size: usize,
    /// The scratch database the run creates afresh (and drops unless --keep).
    #[arg(long, default_value = "stockledger_chaos")]
    database: String,
    /// Keep the database afterwards, to look at.
    #[arg(long)]
    keep: bool,
    /// Inject no faults: the same load through the same proxy, as a baseline.
    #[arg(long)]
    no_faults: bool,
}

pub async fn run(
    args: ChaosArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    stockledger::domain::ids::check_id("database", &args.database)?;
    let config = db::scratch_database(database_url, &args.database, true)
        .await
        .map_err(anyhow::Error::from)?;
    let cancel = CancellationToken::new();
    cancel_on_signal(cancel.clone());
    printer.note(&format!(
        "chaos: {} writers for {} s, faults through a proxy (cuts, held and lost COMMIT replies, killed backends)",
        args.writers, args.seconds
    ));
    let report = run::run(
        config.clone(),
        ChaosConfig {
            seconds: args.seconds.max(1),
            writers: args.writers.max(1),
            pool_size: args.pool_size.max(CHAOS_MIN_POOL_SIZE),
            faults: !args.no_faults,
        },
        cancel,
    )
    .await?;
    if !args.keep {
        let server = db::server(database_url)
            .await
            .map_err(anyhow::Error::from)?;
        db::drop_database(&server.config, &args.database).await?;
    }
    let faults: Vec<String> = report
        .faults
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    printer.value(
        &serde_json::to_value(&report).expect("reports serialise"),
        &format!(
            "{} s, {} writers\nfaults injected: {}\nacknowledged {}  retried {}  abandoned {}  lost {}  duplicated {}  oversold {}  failed {}\naudit: {}",
            report.seconds,
            report.writers,
            if faults.is_empty() { "none".to_owned() } else { faults.join(", ") },
            report.acknowledged,
            report.retried,
            report.abandoned,
            report.lost,
            report.duplicated,
            report.oversold,
            report.failed,
            if report.audit_clean {
                "clean".to_owned()
            } else {
                format!("{} differences", report.audit_differences)
            }
        ),
    );
    if report.passed() {
        Ok(())
    } else {
        Err(Failure::AuditDifferences)
    }
}
