//! `stockledger relay`: the event relay until ctrl-c, or its status.

use anyhow::Context;
use clap::Subcommand;
use serde_json::json;
use stockledger::relay::{self, RelayConfig};
use stockledger::store::Store;
use tokio_util::sync::CancellationToken;

use crate::cli::output::Printer;
use crate::cli::read_models::cancel_on_signal;
use crate::cli::Failure;

/// The relay settings from the command line.
pub fn config(broker: &BrokerArgs) -> RelayConfig {
    RelayConfig {
        stream: broker.stream.clone(),
        subject_prefix: broker.subject_prefix.clone(),
        replicas: broker.stream_replicas,
        ..RelayConfig::default()
    }
}

pub async fn relay(store: &Store, args: RelayArgs, printer: &Printer) -> Result<(), Failure> {
    if let Some(RelayCmd::Status) = args.command {
        return status(store, printer).await;
    }
    let client = relay::connect(&args.broker.nats_url)
        .await
        .context("connecting to NATS")?;
    let cancel = CancellationToken::new();
    cancel_on_signal(cancel.clone());
    printer.note(&format!(
        "relaying the log to JetStream stream {} at {}; ctrl-c finishes the current batch and stops",
        args.broker.stream,
        relay::url::redacted(&args.broker.nats_url)
    ));
    relay::run(
        store.clone(),
        relay::context(client),
        RelayConfig {
            republish: args.republish,
            batch_events: args.batch_events,
            ..config(&args.broker)
        },
        cancel,
    )
    .await
    .context("the relay stopped")?;
    printer.note("stopped");
    Ok(())
}

async fn status(store: &Store, printer: &Printer) -> Result<(), Failure> {
    let all = relay::status(store).await?;
    let mut text = format!(
        "{:<20} {:>16} {:>12} {:>11}  {:<25} last message",
        "stream", "cursor", "published", "lag events", "updated"
    );
    for s in &all {
        let lag = if s.lag_capped {
            format!(">={}", s.lag_events)
        } else {
            s.lag_events.to_string()
        };
        text.push_str(&format!(
            "\n{:<20} {:>16} {:>12} {:>11}  {:<25} {}",
            s.stream,
            s.cursor,
            s.published,
            lag,
            s.updated_at.format("%Y-%m-%d %H:%M:%S%.3f"),
            s.last_msg_id
        ));
    }
    if all.is_empty() {
        text.push_str("\n(no relay has published yet)");
    }
    printer.value(&json!({ "relays": all }), &text);
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct RelayArgs {
    #[command(subcommand)]
    pub command: Option<RelayCmd>,
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Publish the whole log again to a stream that was deleted or purged
    /// (without it, the relay stops with an error when that happened).
    #[arg(long)]
    pub republish: bool,
    /// A hot standby to read the log from (the relay's reads only); the
    /// checkpoint is written on DATABASE_URL.
    #[arg(long, env = "STOCKLEDGER_READ_DATABASE_URL", hide_env_values = true)]
    pub read_database_url: Option<String>,
    /// Most events per published batch (1 to 10000).
    #[arg(long, default_value_t = stockledger::limits::RELAY_BATCH_EVENTS)]
    pub batch_events: i64,
}

/// Where the relay publishes. Also read by `serve --relay`.
#[derive(clap::Args, Debug, Clone)]
pub struct BrokerArgs {
    /// The NATS server.
    #[arg(
        long,
        env = "STOCKLEDGER_NATS_URL",
        hide_env_values = true,
        default_value = "nats://127.0.0.1:4222"
    )]
    pub nats_url: String,
    /// The JetStream stream (created if absent).
    #[arg(long, env = "STOCKLEDGER_RELAY_STREAM", default_value = stockledger::limits::DEFAULT_RELAY_STREAM)]
    pub stream: String,
    /// Subjects are <prefix>.<event type>.<sku or reservation id>.
    #[arg(long, env = "STOCKLEDGER_RELAY_SUBJECT_PREFIX", default_value = stockledger::limits::DEFAULT_RELAY_SUBJECT_PREFIX)]
    pub subject_prefix: String,
    /// Copies of the stream a JetStream cluster keeps, when the relay creates
    /// it (3 on a three-server cluster: a message acknowledged survives the
    /// loss of any one server).
    #[arg(long, env = "STOCKLEDGER_RELAY_STREAM_REPLICAS", default_value_t = 1)]
    pub stream_replicas: usize,
}

#[derive(Subcommand, Debug)]
pub enum RelayCmd {
    /// Each relay's cursor, last message id, events published and lag.
    Status,
}
