//! A consumer of the relay's feed that keeps its own stock table, applied
//! idempotently: each message is applied in one database transaction
//! together with its message id, and acknowledged only after that commits.
//!
//! - A crash before the commit: nothing was applied, the message is
//!   redelivered and applied then.
//! - A crash after the commit but before the ack: the message is
//!   redelivered, its id is already recorded, and it is acknowledged
//!   without being applied twice.
//!
//! So the table ends up exactly as the ledger's balances, whatever the
//! crashes, with a durable JetStream consumer and explicit acks.

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy};
use futures_util::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The consumer's own tables.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS example_stock (
    sku      text   NOT NULL,
    location text   NOT NULL,
    on_hand  bigint NOT NULL DEFAULT 0,
    reserved bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (sku, location)
);
CREATE TABLE IF NOT EXISTS example_applied (
    msg_id text PRIMARY KEY
);";

/// Most messages asked for at once, and how long an unacknowledged message
/// waits before it is delivered again.
const FETCH_BATCH: usize = 100;
const ACK_WAIT: Duration = Duration::from_secs(2);

/// (sku, location, on-hand change, reserved change) for each line an event moves.
fn effects(event: &Value) -> Vec<(String, String, i64, i64)> {
    let data = &event["data"];
    let line = |l: &Value| {
        (
            l["sku"].as_str().unwrap_or_default().to_owned(),
            l["location"].as_str().unwrap_or_default().to_owned(),
            l["quantity"].as_i64().unwrap_or(0),
        )
    };
    let lines = || data["lines"].as_array().into_iter().flatten().map(line);
    match event["type"].as_str().unwrap_or_default() {
        "StockReceived" => {
            let (s, l, q) = line(data);
            vec![(s, l, q, 0)]
        }
        "StockAdjusted" => {
            let (s, l, _) = line(data);
            vec![(s, l, data["delta"].as_i64().unwrap_or(0), 0)]
        }
        "StockTransferred" => {
            let (sku, q) = (
                data["sku"].as_str().unwrap_or_default(),
                data["quantity"].as_i64(),
            );
            let at = |key: &str| data[key].as_str().unwrap_or_default().to_owned();
            let q = q.unwrap_or(0);
            vec![
                (sku.to_owned(), at("from_location"), -q, 0),
                (sku.to_owned(), at("to_location"), q, 0),
            ]
        }
        // The change from the books: on hand becomes what was counted.
        "StockCounted" => {
            let (s, l, _) = line(data);
            let change =
                data["counted"].as_i64().unwrap_or(0) - data["books"].as_i64().unwrap_or(0);
            vec![(s, l, change, 0)]
        }
        "ReservationCreated" => lines().map(|(s, l, q)| (s, l, 0, q)).collect(),
        // Whole or in part, a confirm ships its lines; a settling event
        // carries what was still open, a partial one what it moved.
        "ReservationConfirmed" | "ReservationLinesConfirmed" => {
            lines().map(|(s, l, q)| (s, l, -q, -q)).collect()
        }
        "ReservationReleased" | "ReservationExpired" | "ReservationLinesReleased" => {
            lines().map(|(s, l, q)| (s, l, 0, -q)).collect()
        }
        // An extension moves no stock; so does any type this example does not know.
        _ => Vec::new(),
    }
}

/// Applies one message unless it was applied before; true when it was new.
pub async fn apply(
    db: &mut tokio_postgres::Client,
    msg_id: &str,
    event: &Value,
) -> Result<bool, tokio_postgres::Error> {
    let tx = db.transaction().await?;
    let new = tx
        .execute(
            "INSERT INTO example_applied (msg_id) VALUES ($1) ON CONFLICT DO NOTHING",
            &[&msg_id],
        )
        .await?
        == 1;
    if new {
        for (sku, location, on_hand, reserved) in effects(event) {
            tx.execute(
                "INSERT INTO example_stock (sku, location, on_hand, reserved) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (sku, location) DO UPDATE
                   SET on_hand = example_stock.on_hand + EXCLUDED.on_hand,
                       reserved = example_stock.reserved + EXCLUDED.reserved",
                &[&sku, &location, &on_hand, &reserved],
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(new)
}

/// Consumes `stream` with the durable consumer `durable` until `cancel`
/// fires; returns how many messages it applied (not counting redeliveries).
pub async fn run(
    db: &mut tokio_postgres::Client,
    js: &jetstream::Context,
    stream: &str,
    durable: &str,
    cancel: CancellationToken,
) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let consumer: jetstream::consumer::Consumer<pull::Config> = js
        .get_stream(stream)
        .await?
        .get_or_create_consumer(
            durable,
            pull::Config {
                durable_name: Some(durable.to_owned()),
                ack_policy: AckPolicy::Explicit,
                ack_wait: ACK_WAIT,
                ..Default::default()
            },
        )
        .await?;
    let mut applied = 0;
    while !cancel.is_cancelled() {
        let mut batch = consumer
            .fetch()
            .max_messages(FETCH_BATCH)
            .expires(Duration::from_millis(500))
            .messages()
            .await?;
        while let Some(message) = batch.next().await {
            let message = message?;
            let msg_id = message
                .headers
                .as_ref()
                .and_then(|h| h.get(async_nats::header::NATS_MESSAGE_ID))
                .map(|v| v.as_str().to_owned())
                .ok_or("a message without Nats-Msg-Id")?;
            let event: Value = serde_json::from_slice(&message.payload)?;
            if apply(db, &msg_id, &event).await? {
                applied += 1;
            }
            message.ack().await?;
        }
    }
    Ok(applied)
}
