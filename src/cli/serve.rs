//! `stockledger serve` and `stockledger keys ...`.

use std::time::Duration;

use clap::{Args as ClapArgs, Subcommand};
use serde_json::json;
use stockledger::limits::{
    DEFAULT_EXPIRY_INTERVAL_MS, DEFAULT_HEADER_READ_TIMEOUT_MS, DEFAULT_IDLE_CONNECTION_TIMEOUT_MS,
    DEFAULT_KEY_CACHE_SECONDS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    DEFAULT_POOL_SIZE, DEFAULT_RATE_LIMIT_BURST, DEFAULT_RATE_LIMIT_PER_SECOND,
    DEFAULT_REQUEST_TIMEOUT_MS, SHUTDOWN_GRACE_SECONDS,
};
use stockledger::server::listener::{self, ConnectionLimits};
use stockledger::server::ServerConfig;
use stockledger::store::keys::Role;
use stockledger::store::Store;
use tokio_util::sync::CancellationToken;

use super::output::Printer;
use super::read_models::cancel_on_signal;
use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "STOCKLEDGER_LISTEN", default_value = "127.0.0.1:8080")]
    listen: String,
    /// Development mode: no API keys are checked. Never in production.
    #[arg(long, env = "STOCKLEDGER_DEV")]
    dev: bool,
    /// GET /metrics answers only callers with an API key (any role). Without
    /// it, callers without a key get the operational figures, not the
    /// reservations and units by state.
    #[arg(long, env = "STOCKLEDGER_METRICS_KEY_REQUIRED")]
    metrics_key_required: bool,
    /// Do not run the projection workers here (run `stockledger project` elsewhere).
    #[arg(long, env = "STOCKLEDGER_NO_PROJECTIONS")]
    no_projections: bool,
    /// Do not run the expiry worker here, nor the backorder worker (which
    /// fills waiting orders as stock arrives, at the same interval).
    #[arg(long, env = "STOCKLEDGER_NO_EXPIRY")]
    no_expiry: bool,
    /// Do not run the sealer here (run `stockledger seal` elsewhere, or
    /// another server's sealer: one runs per database).
    #[arg(long, env = "STOCKLEDGER_NO_SEALER")]
    no_sealer: bool,
    /// Run the event relay here too (one runs per stream and database,
    /// whichever process holds its lock), publishing to --nats-url.
    #[arg(long, env = "STOCKLEDGER_RELAY")]
    relay: bool,
    /// Subscribers of GET /v1/events/stream at once.
    #[arg(long, env = "STOCKLEDGER_MAX_STREAM_SUBSCRIBERS", default_value_t = stockledger::limits::MAX_EVENT_STREAM_SUBSCRIBERS)]
    max_stream_subscribers: usize,
    /// Seconds after which an event stream ends, however busy (the client
    /// resumes with Last-Event-ID and loses nothing).
    #[arg(long, env = "STOCKLEDGER_STREAM_LIFETIME_SECONDS", default_value_t = stockledger::limits::EVENT_STREAM_MAX_SECONDS)]
    stream_lifetime_seconds: u64,
    #[command(flatten)]
    broker: crate::cli::relay::BrokerArgs,
    /// A hot standby to read pages of the log from (GET /v1/events, the event
    /// stream, the relay), e.g. with target_session_attrs=read-only; all else
    /// stays on DATABASE_URL.
    #[arg(long, env = "STOCKLEDGER_READ_DATABASE_URL", hide_env_values = true)]
    read_database_url: Option<String>,
    /// Database connections in the pool.
    #[arg(long, env = "STOCKLEDGER_POOL_SIZE", default_value_t = DEFAULT_POOL_SIZE)]
    pool_size: usize,
    /// A request taking longer is answered UNAVAILABLE.
    #[arg(long, env = "STOCKLEDGER_REQUEST_TIMEOUT_MS", default_value_t = DEFAULT_REQUEST_TIMEOUT_MS)]
    request_timeout_ms: u64,
    /// Sustained requests per second per key.
    #[arg(long, env = "STOCKLEDGER_RATE_LIMIT_PER_SECOND", default_value_t = DEFAULT_RATE_LIMIT_PER_SECOND)]
    rate_limit_per_second: u32,
    /// Requests a key may send at once before the rate limit applies.
    #[arg(long, env = "STOCKLEDGER_RATE_LIMIT_BURST", default_value_t = DEFAULT_RATE_LIMIT_BURST)]
    rate_limit_burst: u32,
    /// How long a key is trusted before it is looked up again (revocations take this long).
    #[arg(long, env = "STOCKLEDGER_KEY_CACHE_SECONDS", default_value_t = DEFAULT_KEY_CACHE_SECONDS)]
    key_cache_seconds: u64,
    /// How often the expiry worker looks for due reservations.
    #[arg(long, env = "STOCKLEDGER_EXPIRY_INTERVAL_MS", default_value_t = DEFAULT_EXPIRY_INTERVAL_MS)]
    expiry_interval_ms: u64,
    /// Most reservations one expiry pass handles.
    #[arg(long, env = "STOCKLEDGER_EXPIRY_BATCH", default_value_t = stockledger::limits::MAX_EXPIRIES_PER_PASS)]
    expiry_batch: i64,
    /// HTTP connections open at once, at most (lowered to fit the open-files limit).
    #[arg(long, env = "STOCKLEDGER_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// HTTP connections open at once from one client address.
    #[arg(long, env = "STOCKLEDGER_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = DEFAULT_MAX_CONNECTIONS_PER_ADDRESS)]
    max_connections_per_address: usize,
    /// A client must send a request's headers within this time.
    #[arg(long, env = "STOCKLEDGER_HEADER_READ_TIMEOUT_MS", default_value_t = DEFAULT_HEADER_READ_TIMEOUT_MS)]
    header_read_timeout_ms: u64,
    /// A connection with no request in flight for this long is closed.
    #[arg(long, env = "STOCKLEDGER_IDLE_TIMEOUT_MS", default_value_t = DEFAULT_IDLE_CONNECTION_TIMEOUT_MS)]
    idle_timeout_ms: u64,
}

pub async fn serve(
    args: ServeArgs,
    database_url: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    // Bound first, so that a refused address (--dev on a public one) is
    // refused before any database work.
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let bound = listener.local_addr().map_err(anyhow::Error::from)?;
    let config = ServerConfig {
        dev: args.dev,
        request_timeout: Duration::from_millis(args.request_timeout_ms),
        rate_limit_per_second: args.rate_limit_per_second,
        rate_limit_burst: args.rate_limit_burst,
        key_cache: Duration::from_secs(args.key_cache_seconds),
        run_projections: !args.no_projections,
        run_expiry: !args.no_expiry,
        run_sealer: !args.no_sealer,
        expiry_interval: Duration::from_millis(args.expiry_interval_ms),
        expiry_batch: args.expiry_batch,
        relay: args.relay.then(|| {
            (
                args.broker.nats_url.clone(),
                crate::cli::relay::config(&args.broker),
            )
        }),
        stream_subscribers: args.max_stream_subscribers.max(1),
        stream_heartbeat: ServerConfig::default().stream_heartbeat,
        stream_lifetime: Duration::from_secs(args.stream_lifetime_seconds.max(1)),
        connections: ConnectionLimits {
            max_connections: listener::fit_to_open_files_limit(args.max_connections.max(1))
                .map_err(|e| anyhow::anyhow!("{e}"))?,
            max_per_address: args.max_connections_per_address.max(1),
            header_read_timeout: Duration::from_millis(args.header_read_timeout_ms.max(1)),
            idle_timeout: Duration::from_millis(args.idle_timeout_ms.max(1)),
        },
        metrics_key_required: args.metrics_key_required,
        ..ServerConfig::default()
    };
    config
        .check_listen_address(bound)
        .map_err(anyhow::Error::from)?;
    let (store, server) = super::open_with_pool(database_url, args.pool_size, printer).await?;
    let store = super::with_reads(store, args.read_database_url.as_deref(), args.pool_size)?;
    if store.connected_as_superuser().await? {
        tracing::warn!(
            "connected as a superuser: a bug or a stolen connection string could rewrite the log; \
             connect as a login in stockledger_service (docs/auditing.md, \"Roles\")"
        );
    }
    printer.note(&format!("serving http://{bound} on {}", server.description));
    let shutdown = CancellationToken::new();
    cancel_on_signal(shutdown.clone());
    let grace = {
        let shutdown = shutdown.clone();
        async move {
            shutdown.cancelled().await;
            tokio::time::sleep(Duration::from_secs(SHUTDOWN_GRACE_SECONDS)).await;
        }
    };
    tokio::select! {
        served = stockledger::server::serve(listener, store, config, shutdown) => {
            served.map_err(anyhow::Error::from)?;
        }
        _ = grace => printer.note(&format!("shutdown took longer than {SHUTDOWN_GRACE_SECONDS} s; stopping anyway")),
    }
    printer.note("stopped");
    Ok(())
}

#[derive(Subcommand, Debug)]
pub enum KeysCmd {
    /// Create a key; it is printed once and only its hash is stored.
    Create {
        /// writer, reader, auditor or admin.
        #[arg(long, value_parser = super::commands::parse_role)]
        role: Role,
        #[arg(long)]
        name: Option<String>,
    },
    /// List keys (never their secrets).
    List,
    /// Revoke a key by name or id.
    Revoke { key: String },
}

pub async fn keys(cmd: KeysCmd, store: &Store, printer: &Printer) -> Result<(), Failure> {
    match cmd {
        KeysCmd::Create { role, name } => {
            let (key, secret) = store.create_key(name.as_deref(), role).await??;
            printer.value(
                &json!({"id": key.id, "name": key.name, "role": key.role, "key": secret}),
                &format!(
                    "created {} key {}:\n\n  {secret}\n\nStore it now: it is not shown again.",
                    key.role.as_str(),
                    key.name
                ),
            );
        }
        KeysCmd::List => {
            let all = store.list_keys().await?;
            let mut text = format!(
                "{:<36}  {:<24} {:<8} {:<25} revoked",
                "id", "name", "role", "created"
            );
            for k in &all {
                text.push_str(&format!(
                    "\n{}  {:<24} {:<8} {:<25} {}",
                    k.id,
                    k.name,
                    k.role.as_str(),
                    k.created_at.format("%Y-%m-%d %H:%M:%S"),
                    k.revoked_at.map_or("-".to_owned(), |t| t
                        .format("%Y-%m-%d %H:%M:%S")
                        .to_string())
                ));
            }
            printer.value(&json!({ "keys": all }), &text);
        }
        KeysCmd::Revoke { key } => match store.revoke_key(&key).await? {
            Some(k) => printer.value(
                &json!({ "revoked": k }),
                &format!("revoked key {} ({})", k.name, k.id),
            ),
            None => {
                return Err(stockledger::domain::Rejection::NotFound { what: "key", key }.into())
            }
        },
    }
    Ok(())
}
