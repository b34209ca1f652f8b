//! The `stockledger` command line. Parsing and printing live here; every
//! decision is the library's.

#![warn(clippy::too_many_lines)]

mod chaos_run;
mod cli;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let args = cli::Args::parse();
    // The server logs every request by default; other commands only warnings.
    let default_level = if args.is_serve() { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("STOCKLEDGER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if args.json_logs() {
        logs.json().init();
    } else {
        logs.init();
    }
    cli::run(args).await
}
