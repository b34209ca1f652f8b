//! `stockledger-bench`: stockledger's benchmarks, printing the Markdown
//! tables (or, with `--json`, one JSON document) that go into
//! docs/benchmarks.md. Exit codes: 0 done, 1 anything went wrong (a database
//! error, an audit with differences after `projections`), 2 usage error.

#![warn(clippy::too_many_lines)]

mod archive;
mod commands;
mod database;
mod flash;
mod growth;
mod ha;
mod output;
mod projections;
mod relay;
mod seal;
mod serve;
mod storage;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use output::Printer;

#[derive(Parser, Debug)]
#[command(
    name = "stockledger-bench",
    version,
    about = "stockledger's benchmarks (see docs/benchmarks.md)"
)]
struct Args {
    /// Print one JSON document on stdout instead of Markdown.
    #[arg(long, global = true)]
    json: bool,

    /// The server the benchmarks make their own database on. Without it, the
    /// private PostgreSQL cluster is started on demand.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    database_url: Option<String>,

    /// Log format on stderr: text or json (levels from STOCKLEDGER_LOG).
    #[arg(long, env = "STOCKLEDGER_LOG_FORMAT", global = true, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,

    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Fill a database with a realistic log, then time a full rebuild of
    /// every projection and a full audit.
    Projections(projections::ProjectionsArgs),
    /// The flash-sale benchmark: scenarios × callers, library and HTTP, against
    /// the usual designs, with an oversell check and an audit.
    Commands(commands::CommandsArgs),
    /// The event relay: the whole benchmark log published to NATS JetStream,
    /// then the relay's lag under load.
    Relay(relay::RelayArgs),
    /// Tamper evidence on the benchmark log: sealing it from scratch,
    /// verifying it, and the sealer beside a flash sale.
    Seal(seal::SealArgs),
    /// stockledger on a Patroni cluster with synchronous replication: its
    /// throughput against a single node, and failovers under load.
    Ha(ha::HaArgs),
    /// Archive files on the benchmark log: archiving it whole, and verify and
    /// the audit across the archive beside the database alone.
    Archive(archive::ArchiveArgs),
    /// A long run with archiving on: rounds of the realistic workload, each
    /// sealed, archived and detached, and what the database keeps.
    Growth(growth::GrowthArgs),
    /// What the log costs on disk per event, column by column and index
    /// by index, as it is and in a candidate lean layout.
    Storage(storage::StorageArgs),
    /// The server `commands` measures over HTTP, in a process of its own.
    #[command(hide = true)]
    Serve(serve::ServeArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    init_logs(&args.log_format);
    let printer = Printer { json: args.json };
    let database_url = args.database_url.as_deref();
    let result = match args.command {
        Cmd::Projections(a) => projections::run(a, database_url, &printer).await,
        Cmd::Commands(a) => commands::run(a, database_url, &printer).await,
        Cmd::Relay(a) => relay::run(a, database_url, &printer).await,
        Cmd::Seal(a) => seal::run(a, database_url, &printer).await,
        Cmd::Ha(a) => ha::run(a, &printer).await,
        Cmd::Storage(a) => storage::run(a, database_url, &printer).await,
        Cmd::Archive(a) => archive::run(a, database_url, &printer).await,
        Cmd::Growth(a) => growth::run(a, database_url, &printer).await,
        Cmd::Serve(a) => serve::run(a, database_url).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            printer.error(&e);
            ExitCode::FAILURE
        }
    }
}

/// Warnings and up on stderr, or what `STOCKLEDGER_LOG` asks for (e.g.
/// `stockledger::store::execute=debug`).
fn init_logs(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STOCKLEDGER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if format == "json" {
        logs.json().init();
    } else {
        logs.init();
    }
}
