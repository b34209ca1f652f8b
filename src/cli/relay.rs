//! `stockledger relay`: the event relay until ctrl-c, or its status.

use anyhow::Context;
use serde_json::json;
use stockledger::relay::{self, RelayConfig};
use stockledger::store::Store;
use tokio_util::sync::CancellationToken;

use crate::cli::args::{BrokerArgs, RelayArgs, RelayCmd};
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
