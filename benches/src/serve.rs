//! `stockledger-bench serve` (hidden): the HTTP server the `commands`
//! benchmark measures, in a process of its own, so the load generator does
//! not share the server's runtime and the server's CPU time can be read
//! apart from the client's (`/proc/PID/stat`).
//!
//! It runs its workers as `stockledger serve` does unless told not to
//! (`--no-workers`). It serves the benchmark's database, already created and migrated by the
//! parent, prints `listening http://ADDR` on stdout once it accepts
//! connections, and shuts down gracefully when its stdin closes: the parent
//! holds the other end, so the server cannot outlive the benchmark.

use clap::Args as ClapArgs;
use stockledger::server::{serve, ServerConfig};
use stockledger::store::{pool, Store};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::database::bench_database;

#[derive(ClapArgs, Debug)]
pub struct ServeArgs {
    /// The benchmark's database (created by the parent).
    #[arg(long)]
    database: String,
    /// Database connections of the server's pool.
    #[arg(long)]
    pool_size: usize,
    /// The server's request timeout; its commands' deadline follows from it.
    #[arg(long, default_value_t = stockledger::limits::DEFAULT_REQUEST_TIMEOUT_MS)]
    request_timeout_ms: u64,
    /// Without the projection runner, the expiry worker and the sealer
    /// (`serve --no-projections --no-expiry --no-sealer`). By default the
    /// server runs them, as the README runs it.
    #[arg(long)]
    no_workers: bool,
}

pub async fn run(args: ServeArgs, database_url: Option<&str>) -> anyhow::Result<()> {
    let config = bench_database(database_url, &args.database, false).await?;
    let store = Store::new(pool::build(config.clone(), args.pool_size)?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let shutdown = CancellationToken::new();
    let server_config = ServerConfig {
        dev: true,
        request_timeout: std::time::Duration::from_millis(args.request_timeout_ms),
        run_projections: !args.no_workers,
        run_expiry: !args.no_workers,
        run_sealer: !args.no_workers,
        // No rate limit: the benchmark is the only caller.
        rate_limit_per_second: u32::MAX / 2,
        rate_limit_burst: u32::MAX / 2,
        ..Default::default()
    };
    println!("listening http://{}", listener.local_addr()?);
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut sink = [0u8; 64];
        let mut stdin = tokio::io::stdin();
        while matches!(stdin.read(&mut sink).await, Ok(n) if n > 0) {}
        stop.cancel();
    });
    serve(listener, store, server_config, shutdown).await?;
    Ok(())
}
