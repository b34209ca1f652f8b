//! An example consumer of `stockledger relay`: keeps a stock table of its
//! own from the JetStream feed, idempotently (see `consumer.rs`).
//!
//! ```sh
//! stockledger relay &                                   # publishes to nats://127.0.0.1:4222
//! DATABASE_URL=postgres://... cargo run --example relay_consumer
//! ```
//!
//! Settings (environment): `NATS_URL` (default `nats://127.0.0.1:4222`),
//! `RELAY_STREAM` (default `STOCKLEDGER`), `CONSUMER_NAME` (the durable
//! consumer, default `example-stock`), `DATABASE_URL` (the consumer's own
//! database; required).

mod consumer;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_owned());
    let db_url =
        std::env::var("DATABASE_URL").context("DATABASE_URL names the consumer's database")?;
    let (mut db, connection) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    db.batch_execute(consumer::SCHEMA).await?;
    let nats = async_nats::connect(env("NATS_URL", "nats://127.0.0.1:4222")).await?;
    let js = async_nats::jetstream::new(nats);
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    let stream = env("RELAY_STREAM", "STOCKLEDGER");
    let durable = env("CONSUMER_NAME", "example-stock");
    eprintln!("consuming {stream} as {durable}; ctrl-c stops");
    let applied = consumer::run(&mut db, &js, &stream, &durable, cancel)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    eprintln!("applied {applied} events");
    Ok(())
}
