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
//!
//! A message it cannot handle (no message id, a payload that is not an
//! event, an event the database refuses, or one delivered
//! `MAX_DELIVERIES` times without being handled) is parked: kept in
//! `example_parked` with its reason and bytes, and acknowledged, so the
//! messages after it go on. An operator reads the parked ones, mends what
//! is wrong and applies them by hand; nothing is dropped silently. A failure
//! that waiting may mend (the database away) is not parking: the consumer
//! stops and the message is delivered again.

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
);
CREATE TABLE IF NOT EXISTS example_parked (
    stream_seq bigint PRIMARY KEY,
    msg_id     text,
    reason     text        NOT NULL,
    payload    bytea       NOT NULL,
    parked_at  timestamptz NOT NULL DEFAULT now()
);";

/// Deliveries of one message after which it is parked, whatever the reason
/// it was not handled (a message that makes the consumer crash each time).
const MAX_DELIVERIES: i64 = 5;

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

/// Why a message was not applied: one to park, or a failure to stop on.
enum NotApplied {
    Poison(String),
    Failed(tokio_postgres::Error),
}

/// Applies `message`; true when it was new.
async fn handle(
    db: &mut tokio_postgres::Client,
    msg_id: Option<&str>,
    payload: &[u8],
) -> Result<bool, NotApplied> {
    let msg_id = msg_id.ok_or_else(|| NotApplied::Poison("no Nats-Msg-Id header".into()))?;
    let event: Value = serde_json::from_slice(payload)
        .map_err(|e| NotApplied::Poison(format!("the payload is not JSON: {e}")))?;
    if !event["type"].is_string() || !event["data"].is_object() {
        return Err(NotApplied::Poison(
            "the payload is not an event (no type or data)".into(),
        ));
    }
    apply(db, msg_id, &event).await.map_err(|e| {
        // The database refusing the data itself (class 22, data exception;
        // 23, integrity) will refuse it on every delivery.
        let refused = e
            .code()
            .is_some_and(|c| c.code().starts_with("22") || c.code().starts_with("23"));
        if refused {
            NotApplied::Poison(format!("the database refuses it: {e}"))
        } else {
            NotApplied::Failed(e)
        }
    })
}

/// Keeps a message the consumer cannot handle, with why (once: a parked
/// message delivered again is not parked twice).
async fn park(
    db: &tokio_postgres::Client,
    stream_seq: u64,
    msg_id: Option<&str>,
    why: &str,
    payload: &[u8],
) -> Result<(), tokio_postgres::Error> {
    eprintln!("parked message {stream_seq} ({msg_id:?}): {why}");
    db.execute(
        "INSERT INTO example_parked (stream_seq, msg_id, reason, payload) VALUES ($1, $2, $3, $4)
         ON CONFLICT (stream_seq) DO NOTHING",
        &[&(stream_seq as i64), &msg_id, &why, &payload],
    )
    .await?;
    Ok(())
}

/// Consumes `stream` with the durable consumer `durable` until `cancel`
/// fires; returns how many messages it applied (not counting redeliveries
/// or parked messages).
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
            let (seq, delivered) = {
                let info = message.info()?;
                (info.stream_sequence, info.delivered)
            };
            let msg_id = message
                .headers
                .as_ref()
                .and_then(|h| h.get(async_nats::header::NATS_MESSAGE_ID))
                .map(|v| v.as_str().to_owned());
            let outcome = if delivered > MAX_DELIVERIES {
                Err(NotApplied::Poison(format!(
                    "delivered {delivered} times without being handled"
                )))
            } else {
                handle(db, msg_id.as_deref(), &message.payload).await
            };
            match outcome {
                Ok(true) => applied += 1,
                Ok(false) => {}
                Err(NotApplied::Poison(why)) => {
                    park(db, seq, msg_id.as_deref(), &why, &message.payload).await?
                }
                Err(NotApplied::Failed(e)) => return Err(e.into()),
            }
            message.ack().await?;
        }
    }
    Ok(applied)
}
