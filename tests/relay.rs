//! The event relay against a real nats-server with JetStream (one private
//! server per test, `common::nats`): every committed event lands in the
//! broker stream exactly once, in commit order, with no gap, through each
//! fault of issue 12: the relay killed (SIGKILL) mid-batch, the broker
//! killed and restarted, the broker away for a while, two relays at once,
//! and the stream deleted by an operator.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::nats::{assert_exact, log, stream_ids, NatsServer};
use common::needs::{self, NATS_SERVER};
use common::TestDb;
use stockledger::relay::{self, RelayConfig, RelayError};

const STREAM: &str = "LEDGER";

fn config() -> RelayConfig {
    RelayConfig {
        stream: STREAM.to_owned(),
        subject_prefix: "ledger".to_owned(),
        ..RelayConfig::default()
    }
}

fn relay_process(db: &TestDb, nats: &NatsServer) -> Child {
    Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .args(["relay", "--nats-url", &nats.url(), "--stream", STREAM])
        .args(["--subject-prefix", "ledger", "--batch-events", "10"])
        .env("DATABASE_URL", db.url())
        .env("STOCKLEDGER_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_once_in_order_though_the_relay_is_killed_mid_batch() {
    if !needs::programs(&[NATS_SERVER]) {
        return;
    }
    let db = TestDb::new().await;
    let nats = NatsServer::start().await;
    common::write_mixed(&db, "a", 300).await;
    let writer = {
        let store = db.store.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                let cmd = common::receive(&format!("w-in-{i}"), "w-sku", 1);
                store
                    .execute(cmd, stockledger::domain::CommandContext::new("test"))
                    .await
                    .unwrap()
                    .unwrap();
            }
        })
    };
    // Kill -9 at varying moments, mid-stream, and start again: each time
    // the stream holds part of the log when the relay dies.
    let mut partial = 0;
    for pause in [150, 300, 200, 400, 250] {
        let mut relay = relay_process(&db, &nats);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        relay.kill().unwrap();
        relay.wait().unwrap();
        let published = stream_ids(&nats, STREAM).await.len();
        if published > 0 && published < log(&db.store).await.len() {
            partial += 1;
        }
    }
    assert!(partial > 0, "no kill landed while the relay was behind");
    writer.await.unwrap();
    let mut relay = relay_process(&db, &nats);
    assert_exact(&db.store, &nats, STREAM).await;
    // The checkpoint caught up too, and says so.
    common::eventually("the checkpoint shows no lag", || async {
        let s = relay::status(&db.store).await.unwrap();
        s.first().is_some_and(|s| s.lag_events == 0)
    })
    .await;
    let s = relay::status(&db.store).await.unwrap();
    assert_eq!(s[0].published as usize, log(&db.store).await.len());
    relay.kill().unwrap();
    relay.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_killed_and_away_for_a_while_then_caught_up() {
    if !needs::programs(&[NATS_SERVER]) {
        return;
    }
    let db = TestDb::new().await;
    let mut nats = NatsServer::start().await;
    let (cancel, task) = common::nats::start_relay(&db, &nats, config()).await;
    common::write_mixed(&db, "b", 100).await;
    assert_exact(&db.store, &nats, STREAM).await;

    // Killed while events keep coming; the backlog stays in the log and
    // the lag shows.
    nats.kill();
    common::write_mixed(&db, "c", 100).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s = relay::status(&db.store).await.unwrap();
    assert!(
        s[0].lag_events > 0,
        "the lag shows while the broker is away: {s:?}"
    );
    assert!(!task.is_finished(), "the relay waits for the broker");
    nats.resume().await;
    common::write_mixed(&db, "d", 20).await;
    assert_exact(&db.store, &nats, STREAM).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_at_once_publish_each_event_once() {
    if !needs::programs(&[NATS_SERVER]) {
        return;
    }
    let db = TestDb::new().await;
    let nats = NatsServer::start().await;
    // Without the runner lock, so only the chained message ids keep them
    // apart: both publish the same log into the same stream.
    let unlocked = RelayConfig {
        exclusive: false,
        batch_events: 50,
        ..config()
    };
    let (c1, t1) = common::nats::start_relay(&db, &nats, unlocked.clone()).await;
    let (c2, t2) = common::nats::start_relay(&db, &nats, unlocked).await;
    common::write_mixed(&db, "e", 200).await;
    assert_exact(&db.store, &nats, STREAM).await;
    // And two processes with the lock: one runs, the other waits.
    let mut p1 = relay_process(&db, &nats);
    let mut p2 = relay_process(&db, &nats);
    common::write_mixed(&db, "f", 50).await;
    assert_exact(&db.store, &nats, STREAM).await;
    for c in [c1, c2] {
        c.cancel();
    }
    t1.await.unwrap().unwrap();
    t2.await.unwrap().unwrap();
    for p in [&mut p1, &mut p2] {
        p.kill().unwrap();
        p.wait().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_stream_is_an_error_not_a_silent_republish() {
    if !needs::programs(&[NATS_SERVER]) {
        return;
    }
    let db = TestDb::new().await;
    let nats = NatsServer::start().await;
    common::write_mixed(&db, "g", 30).await;
    let (cancel, task) = common::nats::start_relay(&db, &nats, config()).await;
    assert_exact(&db.store, &nats, STREAM).await;
    cancel.cancel();
    task.await.unwrap().unwrap();

    nats.client().await.delete_stream(STREAM).await.unwrap();
    let (_, task) = common::nats::start_relay(&db, &nats, config()).await;
    let err = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the relay stops at once")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, RelayError::StreamLost { published, .. } if published > 0),
        "{err}"
    );
    assert!(err.to_string().contains("--republish"), "{err}");
    assert!(
        stream_ids(&nats, STREAM).await.is_empty(),
        "nothing republished"
    );

    // Asked to, it publishes the whole log again.
    let again = RelayConfig {
        republish: true,
        ..config()
    };
    let (cancel, task) = common::nats::start_relay(&db, &nats, again).await;
    assert_exact(&db.store, &nats, STREAM).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_runs_the_relay_when_asked_and_metrics_show_it() {
    if !needs::programs(&[NATS_SERVER]) {
        return;
    }
    let nats = NatsServer::start().await;
    let mut config = common::server::test_config();
    config.relay = Some((nats.url(), self::config()));
    let mut s = common::server::TestServer::start(config).await;
    common::write_mixed(&s.db, "s", 30).await;
    assert_exact(&s.db.store, &nats, STREAM).await;
    let published = format!(
        "stockledger_relay_published_events{{stream=\"{STREAM}\"}} {}",
        log(&s.db.store).await.len()
    );
    let lag = format!("stockledger_relay_lag_events{{stream=\"{STREAM}\"}} 0");
    let metrics = || async {
        let r = s.req(reqwest::Method::GET, "/metrics", None).send();
        r.await.unwrap().text().await.unwrap()
    };
    common::eventually("/metrics shows the relay caught up", || async {
        let text = metrics().await;
        text.contains(&published) && text.contains(&lag)
    })
    .await;
    s.stop().await;
}
