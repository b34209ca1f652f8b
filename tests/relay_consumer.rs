//! The example consumer (`examples/relay_consumer`) against a real broker:
//! its table equals the ledger's balances after it crashed mid-stream, and
//! after a crash between applying a message and acknowledging it.

mod common;

#[path = "../examples/relay_consumer/consumer.rs"]
mod consumer;

use std::time::Duration;

use common::nats::NatsServer;
use common::needs::{self, NATS_SERVER};
use common::{confirm_lines, extend, release_lines, reserve, transfer, TestDb};
use stockledger::relay::RelayConfig;
use tokio_util::sync::CancellationToken;

const STREAM: &str = "FEED";

async fn connect(db: &TestDb) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&db.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

async fn count(db: &TestDb, sql: &str) -> i64 {
    db.column::<i64>(sql).await[0]
}

/// (sku, location, on_hand, reserved) of every item, sorted.
async fn figures(db: &TestDb, table: &str) -> Vec<(String, String, i64, i64)> {
    let client = db.client().await;
    client
        .query(
            &format!("SELECT sku, location, on_hand, reserved FROM {table} ORDER BY 1, 2"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

/// One of every other movement, so the consumer's folds are held to them:
/// a transfer, a count, a partial confirm and release, an extension.
async fn write_movements(db: &TestDb) {
    db.run(transfer("k-t-1", "k-sku-0", "default", "backroom", 2))
        .await
        .unwrap();
    db.run(common::count("k-c-1", "k-sku-1", 50)).await.unwrap();
    db.run(reserve("k-parts", "k-o-parts", &[("k-sku-2", 3)], None))
        .await
        .unwrap();
    for step in [
        confirm_lines("k-parts", "ship-1", &[("k-sku-2", 1)]),
        release_lines("k-parts", "drop-1", &[("k-sku-2", 1)]),
        extend("k-parts", "more", 3_600),
    ] {
        db.run(step).await.unwrap();
    }
}

/// The relay's settings for the feed the consumer reads.
fn feed() -> RelayConfig {
    RelayConfig {
        stream: STREAM.to_owned(),
        subject_prefix: "feed".to_owned(),
        ..RelayConfig::default()
    }
}

/// The example consumer, running as a task of its own.
fn spawn_consumer(
    mut pg: tokio_postgres::Client,
    js: &async_nats::jetstream::Context,
) -> (CancellationToken, tokio::task::JoinHandle<u64>) {
    let (js, cancel) = (js.clone(), CancellationToken::new());
    let stop = cancel.clone();
    let task = tokio::spawn(async move {
        consumer::run(&mut pg, &js, STREAM, "stock", stop)
            .await
            .unwrap()
    });
    (cancel, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_matches_the_ledger_after_crashes() {
    if !needs::programs(&[NATS_SERVER]) {
        return;
    }
    let db = TestDb::new().await;
    let nats = NatsServer::start().await;
    common::write_mixed(&db, "k", 600).await;
    write_movements(&db).await;
    let total = db.count_events().await;
    let config = feed();
    let (stop_relay, relay_task) = common::nats::start_relay(&db, &nats, config).await;
    let js = nats.client().await;

    let mut pg = connect(&db).await;
    pg.batch_execute(consumer::SCHEMA).await.unwrap();
    // A crash after commit, before ack: the first messages are in the
    // consumer's table already, but the broker will deliver them again.
    let s = loop {
        if let Ok(mut s) = js.get_stream(STREAM).await {
            if s.info().await.unwrap().state.messages > 10 {
                break s;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for seq in 1..=10 {
        let m = s.get_raw_message(seq).await.unwrap();
        let id = m.headers.get(async_nats::header::NATS_MESSAGE_ID).unwrap();
        let event = serde_json::from_slice(&m.payload).unwrap();
        assert!(consumer::apply(&mut pg, id.as_str(), &event).await.unwrap());
    }

    // A crash mid-stream: the consumer's task is dropped while it works.
    let (_, first) = spawn_consumer(pg, &js);
    let (db, running) = (&db, &first);
    common::eventually("the consumer applies a third of the log", || async move {
        assert!(!running.is_finished(), "the consumer stopped by itself");
        count(db, "SELECT count(*) FROM example_applied").await >= total / 3
    })
    .await;
    first.abort();
    let _ = first.await;
    let applied = count(db, "SELECT count(*) FROM example_applied").await;
    assert!(
        applied < total,
        "the crash came mid-stream ({applied} of {total})"
    );

    // Started again, it finishes, each event applied once.
    let (cancel, second) = spawn_consumer(connect(db).await, &js);
    let running = &second;
    common::eventually("the consumer applies the whole log", || async move {
        assert!(!running.is_finished(), "the consumer stopped by itself");
        count(db, "SELECT count(*) FROM example_applied").await >= total
    })
    .await;
    cancel.cancel();
    second.await.unwrap();
    assert_eq!(
        figures(db, "example_stock").await,
        figures(db, "item_balances").await,
        "the consumer's table equals the ledger's balances"
    );
    stop_relay.cancel();
    relay_task.await.unwrap().unwrap();
}

/// A message the consumer cannot handle (not JSON, not an event, without a
/// message id) is parked with its reason and acknowledged; the messages
/// after it are applied, and the table still equals the ledger's balances.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_it_cannot_handle_is_parked_and_the_rest_go_on() {
    if !needs::programs(&[NATS_SERVER]) {
        return;
    }
    let db = TestDb::new().await;
    let nats = NatsServer::start().await;
    common::write_mixed(&db, "p", 30).await;
    let total = db.count_events().await;
    let config = feed();
    let (stop_relay, relay_task) = common::nats::start_relay(&db, &nats, config).await;
    common::nats::assert_exact(&db.store, &nats, STREAM).await;
    stop_relay.cancel();
    relay_task.await.unwrap().unwrap();

    // Poison among the feed, then a message that is fine after it.
    let js = nats.client().await;
    let with_id = |id: &str| {
        let mut h = async_nats::HeaderMap::new();
        h.insert(async_nats::header::NATS_MESSAGE_ID, id);
        h
    };
    let sends: [(Option<&str>, &[u8]); 4] = [
        (Some("poison-not-json"), b"{not json"),
        (Some("poison-not-an-event"), b"{\"hello\": 1}"),
        (None, b"{\"type\": \"StockReceived\", \"data\": {}}"),
        (
            Some("fine-after-poison"),
            b"{\"type\": \"ReservationExtended\", \"data\": {\"reservation_id\": \"p-r-0\"}}",
        ),
    ];
    for (id, payload) in sends {
        let ack = match id {
            Some(id) => js
                .publish_with_headers("feed.Other.x", with_id(id), payload.to_vec().into())
                .await
                .unwrap(),
            None => js
                .publish("feed.Other.x", payload.to_vec().into())
                .await
                .unwrap(),
        };
        ack.await.unwrap();
    }

    let pg = connect(&db).await;
    pg.batch_execute(consumer::SCHEMA).await.unwrap();
    let (cancel, task) = spawn_consumer(pg, &js);
    let (db, running) = (&db, &task);
    common::eventually("the consumer parks the poison and goes on", || async move {
        assert!(
            !running.is_finished(),
            "the consumer stopped on a poison message"
        );
        count(db, "SELECT count(*) FROM example_applied").await == total + 1
            && count(db, "SELECT count(*) FROM example_parked").await == 3
    })
    .await;
    cancel.cancel();
    task.await.unwrap();
    let reasons: Vec<String> = db
        .column("SELECT coalesce(msg_id, '-') || ': ' || reason FROM example_parked ORDER BY stream_seq")
        .await;
    assert!(
        reasons[0].starts_with("poison-not-json: the payload is not JSON"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].starts_with("poison-not-an-event: the payload is not an event"),
        "{reasons:?}"
    );
    assert!(reasons[2].starts_with("-: no Nats-Msg-Id"), "{reasons:?}");
    assert_eq!(
        figures(db, "example_stock").await,
        figures(db, "item_balances").await,
        "the consumer's table equals the ledger's balances"
    );
}
