//! The relay on a three-server JetStream cluster (issue 46, case 14): a
//! stream of three replicas, 64 writers appending all along, and the
//! stream's leader killed, then one of its followers. Every committed event
//! lands in the stream exactly once, in commit order, and the relay's
//! checkpoint never says more was published than the cluster holds.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::nats::{assert_exact_at, try_stream_ids_at, NatsCluster};
use common::needs::{self, NATS_SERVER};
use common::TestDb;
use stockledger::domain::CommandContext;
use stockledger::relay::{self, RelayConfig};
use tokio_util::sync::CancellationToken;

const STREAM: &str = "LEDGER";
const WRITERS: usize = 64;
/// Receipts acknowledged between two steps of the test.
const STEP: usize = 300;

/// 64 writers receiving stock, each command retried with its own ids until
/// answered; counts what was acknowledged.
fn start_writers(
    db: &TestDb,
    stop: &CancellationToken,
    acked: &Arc<AtomicUsize>,
) -> tokio::task::JoinSet<()> {
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..WRITERS {
        let (store, stop, acked) = (db.store.clone(), stop.clone(), acked.clone());
        writers.spawn(async move {
            let mut i = 0;
            while !stop.is_cancelled() {
                let cmd = common::receive(&format!("w{w}-{i}"), &format!("sku-{}", w % 8), 1);
                match store.execute(cmd, CommandContext::new("writer")).await {
                    Ok(answer) => {
                        answer.expect("a receipt is accepted");
                        acked.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                    // Retried with the same ids: always safe.
                    Err(e) => assert!(e.is_retryable(), "{e}"),
                }
            }
        });
    }
    writers
}

/// Waits until `more` receipts past `from` were acknowledged.
async fn acknowledged(acked: &AtomicUsize, from: usize, more: usize) -> usize {
    common::eventually("the writers go on", || async {
        acked.load(Ordering::Relaxed) >= from + more
    })
    .await;
    acked.load(Ordering::Relaxed)
}

/// The stream's state as the cluster reports it now: (leader's name, its
/// followers' names, messages, every replica current).
async fn stream_state(cluster: &NatsCluster) -> Option<(String, Vec<String>, u64, bool)> {
    let js = cluster.client().await;
    let mut s = js.get_stream(STREAM).await.ok()?;
    let info = s.info().await.ok()?;
    let c = info.cluster.clone()?;
    let followers: Vec<String> = c.replicas.iter().map(|r| r.name.clone()).collect();
    let current = c.replicas.iter().all(|r| r.current);
    Some((c.leader?, followers, info.state.messages, current))
}

/// `stream_state` once the cluster answers with a leader and two followers;
/// between two reads a leader may be elected again, which is "not yet".
async fn settled_state(cluster: &NatsCluster) -> (String, Vec<String>, u64, bool) {
    let found = std::sync::Mutex::new(None);
    common::eventually("the stream has a leader and two followers", || async {
        let state = stream_state(cluster)
            .await
            .filter(|(_, f, _, _)| f.len() == 2);
        let settled = state.is_some();
        *found.lock().unwrap() = state;
        settled
    })
    .await;
    let state = found.lock().unwrap().take();
    state.expect("eventually returned once the state was found")
}

/// The relay's checkpoint is never ahead of the cluster: what it says it
/// published is in the stream, its last message included.
async fn checkpoint_not_ahead(db: &TestDb, cluster: &NatsCluster) {
    let Some(at) = relay::status(&db.store)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.stream == STREAM)
    else {
        return; // Nothing acknowledged yet.
    };
    common::eventually("the stream reads (a leader is elected)", || async {
        let Ok(ids) = try_stream_ids_at(&cluster.url(), STREAM).await else {
            return false; // A leader is being elected.
        };
        if ids.is_empty() {
            return false;
        }
        assert!(
            ids.len() as i64 >= at.published,
            "the checkpoint says {} published, the cluster holds {}",
            at.published,
            ids.len()
        );
        let last = format!("{}@{}", at.last_msg_id, at.cursor);
        assert!(
            ids.contains(&last),
            "the checkpoint's last message {last} is not in the stream"
        );
        true
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_once_in_order_while_the_leader_then_a_follower_is_killed() {
    if !needs::programs(&[NATS_SERVER]) {
        return;
    }
    let db = TestDb::new().await;
    let mut cluster = NatsCluster::start().await;
    let config = RelayConfig {
        stream: STREAM.to_owned(),
        subject_prefix: "ledger".to_owned(),
        replicas: 3,
        ..RelayConfig::default()
    };
    let cancel = CancellationToken::new();
    let client = relay::connect(&cluster.url()).await.unwrap();
    let relay_task = tokio::spawn(relay::run(
        db.store.clone(),
        relay::context(client),
        config,
        cancel.clone(),
    ));
    let (stop, acked) = (CancellationToken::new(), Arc::new(AtomicUsize::new(0)));
    let mut writers = start_writers(&db, &stop, &acked);
    let mut seen = acknowledged(&acked, 0, STEP).await;
    common::eventually("the stream has three current replicas", || async {
        matches!(stream_state(&cluster).await, Some((_, f, n, true)) if f.len() == 2 && n > 0)
    })
    .await;

    for victim_is_leader in [true, false] {
        let (leader, followers, before, _) = settled_state(&cluster).await;
        let victim = if victim_is_leader {
            leader
        } else {
            followers[0].clone()
        };
        let n = (0..3).find(|&n| NatsCluster::name(n) == victim).unwrap();
        checkpoint_not_ahead(&db, &cluster).await;
        cluster.kill(n);
        // The writers go on, and so does the relay, on the two left.
        seen = acknowledged(&acked, seen, STEP).await;
        common::eventually("the relay publishes on two servers", || async {
            matches!(stream_state(&cluster).await, Some((_, _, m, _)) if m > before)
        })
        .await;
        checkpoint_not_ahead(&db, &cluster).await;
        cluster.resume(n).await;
        common::eventually("the killed server catches up", || async {
            matches!(stream_state(&cluster).await, Some((_, f, _, true)) if f.len() == 2)
        })
        .await;
        seen = acknowledged(&acked, seen, STEP).await;
    }
    stop.cancel();
    while let Some(w) = writers.join_next().await {
        w.unwrap();
    }
    assert_exact_at(&db.store, &cluster.url(), STREAM).await;
    checkpoint_not_ahead(&db, &cluster).await;
    cancel.cancel();
    relay_task.await.unwrap().unwrap();
}
