//! The projection runtime: never skips an in-flight transaction, never
//! applies an event twice or misses one (across crashes and concurrent
//! writers), and equals a from-scratch replay of the log (the audit).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use stockledger::projection::worker::{self, WorkerConfig};
use tokio_util::sync::CancellationToken;

fn start_workers(
    db: &TestDb,
    batch_events: i64,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let config = WorkerConfig {
        batch_events,
        poll_interval: Duration::from_millis(50),
        ..WorkerConfig::default()
    };
    let task = tokio::spawn(worker::run_all(
        db.store.pool().clone(),
        Default::default(),
        cancel.clone(),
        config,
    ));
    (cancel, task)
}

async fn live_position(db: &TestDb, name: &str) -> i64 {
    db.client()
        .await
        .query_one(
            "SELECT position FROM projection_checkpoints WHERE name = $1 AND slot = 'live'",
            &[&name],
        )
        .await
        .unwrap()
        .get(0)
}

/// A transaction writes an event with an early position and stays open while
/// 20 later events commit: the worker never passes it, projects it once it
/// commits, and nothing is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_open_transaction_is_never_passed() {
    let db = TestDb::new().await;
    let (cancel, task) = start_workers(&db, 1000);
    let mut held = db.client().await;
    let tx = held.transaction().await.unwrap();
    let early = raw_receipt(&tx, "held", "slow", 5).await;
    for i in 0..20 {
        db.receive(&format!("later-{i}"), "fast", 1).await;
    }
    // The workers are woken by every one of those commits; give them time.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for p in ["stock_levels", "order_view", "reservation_expiry"] {
        assert_eq!(
            live_position(&db, p).await,
            0,
            "{p} passed an open transaction"
        );
    }
    tx.commit().await.unwrap();
    db.wait_caught_up().await;
    assert!(live_position(&db, "stock_levels").await > early);
    let client = db.client().await;
    let levels: Vec<(String, i64)> = client
        .query("SELECT sku, on_hand FROM stock_levels ORDER BY sku", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        levels,
        vec![("fast".to_owned(), 20), ("slow".to_owned(), 5)]
    );
    let report = db.assert_audit_clean().await;
    assert_eq!(report.events, 21);
    cancel.cancel();
    task.await.unwrap();
}

/// Writes one random command through the store (or a slow raw receipt).
async fn random_write(db: &TestDb, writer: usize, n: usize) {
    let id = format!("w{writer}-{n}");
    match random_below(6) {
        0 => {
            // A receipt whose transaction commits after a random delay, so
            // commit order differs from position order.
            let mut c = db.client().await;
            let tx = c.transaction().await.unwrap();
            raw_receipt(
                &tx,
                &id,
                &format!("sku-{}", random_below(5)),
                1 + random_below(5) as u32,
            )
            .await;
            tokio::time::sleep(Duration::from_millis(random_below(40))).await;
            tx.commit().await.unwrap();
        }
        1 => {
            db.receive(
                &id,
                &format!("sku-{}", random_below(5)),
                1 + random_below(10) as i64,
            )
            .await
        }
        _ => {
            let sku = format!("sku-{}", random_below(5));
            if db
                .run(reserve(
                    &id,
                    &format!("o-{id}"),
                    &[(&sku, 1 + random_below(3) as i64)],
                    None,
                ))
                .await
                .is_ok()
            {
                // Settle most, some in parts; leave the rest open. Any answer
                // is fine here (a partial step may ask for more than is held).
                match random_below(6) {
                    0 => drop(db.run(confirm(&id)).await),
                    1 => drop(db.run(release(&id)).await),
                    2 => {
                        drop(db.run(confirm_lines(&id, "c1", &[(&sku, 1)])).await);
                        drop(db.run(extend(&id, "e1", 1_200)).await);
                    }
                    3 => {
                        drop(db.run(release_lines(&id, "x1", &[(&sku, 1)])).await);
                        drop(db.run(confirm(&id)).await);
                    }
                    _ => {}
                }
            }
        }
    }
}

fn start_writers(
    db: &Arc<TestDb>,
    writers: usize,
    stop: CancellationToken,
) -> Vec<tokio::task::JoinHandle<usize>> {
    (0..writers)
        .map(|w| {
            let (db, stop) = (db.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.is_cancelled() {
                    random_write(&db, w, n).await;
                    n += 1;
                }
                n
            })
        })
        .collect()
}

/// 16 writers with random commit delays while the workers run: at the end
/// every projection equals a from-scratch replay of the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_writers_and_a_running_worker_agree_with_a_replay() {
    let db = Arc::new(TestDb::with_pool_size(40).await);
    let (cancel, task) = start_workers(&db, 50);
    let stop = CancellationToken::new();
    let writers = start_writers(&db, 16, stop.clone());
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.cancel();
    let mut writes = 0;
    for w in writers {
        writes += w.await.unwrap();
    }
    assert!(writes > 100, "the writers wrote ({writes})");
    db.wait_caught_up().await;
    db.assert_audit_clean().await;
    cancel.cancel();
    task.await.unwrap();
}

/// The workers are stopped at random points at least 20 times, by aborting
/// their tasks or by killing their database backends; every restart resumes
/// from the checkpoint; no event is applied twice or skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_survive_being_killed_at_random_points() {
    let db = Arc::new(TestDb::with_pool_size(40).await);
    let stop = CancellationToken::new();
    let writers = start_writers(&db, 4, stop.clone());
    let admin = db.client().await;
    let mut kills = 0;
    for round in 0..24 {
        let (cancel, task) = start_workers(&db, 7);
        tokio::time::sleep(Duration::from_millis(20 + random_below(60))).await;
        if round % 2 == 0 {
            task.abort();
            let _ = task.await;
        } else {
            // Kill every backend holding a runner lock: mid-batch, mid-commit, or
            // idle. On a slow machine the workers may not hold their locks yet,
            // so wait (boundedly) until one does.
            let mut killed = 0i64;
            for _ in 0..200 {
                killed = admin
                    .query_one(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_locks
                         WHERE locktype = 'advisory' AND pid <> pg_backend_pid()
                           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                        &[],
                    )
                    .await
                    .unwrap()
                    .get(0);
                if killed > 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert!(killed >= 1, "round {round}: runners were found");
            cancel.cancel();
            task.await.unwrap();
        }
        kills += 1;
    }
    assert!(kills >= 20);
    stop.cancel();
    for w in writers {
        w.await.unwrap();
    }
    let (cancel, task) = start_workers(&db, 1000);
    db.wait_caught_up().await;
    cancel.cancel();
    task.await.unwrap();
    let total = db.count_events().await;
    let applied: Vec<i64> = db
        .column("SELECT events_applied FROM projection_checkpoints WHERE slot = 'live'")
        .await;
    assert_eq!(
        applied,
        vec![total; stockledger::read_model::ALL.len()],
        "every event applied exactly once per projection"
    );
    db.assert_audit_clean().await;
}

/// A second instance's workers wait for the runner locks without churning
/// connections: the lock is tried on a pooled connection, which goes back to
/// the pool when the lock is taken elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_waiting_worker_opens_no_connections() {
    use fault_proxy::{Proxy, Upstream};
    let db = TestDb::new().await;
    let (cancel, task) = start_workers(&db, 1000);
    db.receive("in-1", "apple", 1).await;
    db.wait_caught_up().await; // the first instance runs every projection
    let proxy = Proxy::start(Upstream::of(&db.config)).await.unwrap();
    let second = stockledger::store::pool::build(proxy.config(&db.config), 4).unwrap();
    let cancel_second = CancellationToken::new();
    let second_task = tokio::spawn(worker::run_all(
        second,
        Default::default(),
        cancel_second.clone(),
        WorkerConfig {
            batch_events: 1000,
            poll_interval: Duration::from_millis(50),
            ..WorkerConfig::default()
        },
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = proxy.connections();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        proxy.connections(),
        settled,
        "about 40 tries of each runner lock opened no connection"
    );
    cancel_second.cancel();
    second_task.await.unwrap();
    cancel.cancel();
    task.await.unwrap();
}

/// A store made with a commit signal wakes the runner when its commands
/// commit, with no poll and no notification through the database: with the
/// poll an hour away, each receipt still reaches `stock_levels`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_runner_is_woken_by_its_own_process_commits() {
    let db = TestDb::new().await;
    let wake = Arc::new(tokio::sync::Notify::new());
    let store = db.store.clone().with_commit_signal(wake.clone());
    let cancel = CancellationToken::new();
    let config = WorkerConfig {
        poll_interval: Duration::from_secs(3600),
        ..WorkerConfig::default()
    };
    let task = tokio::spawn(worker::run_all(
        db.store.pool().clone(),
        wake,
        cancel.clone(),
        config,
    ));
    for (i, expected) in [(1, 5), (2, 10)] {
        let cmd = receive(&format!("in-{i}"), "woken", 5);
        store
            .execute(cmd, stockledger::domain::CommandContext::new("test"))
            .await
            .unwrap()
            .unwrap();
        eventually("the receipt reaches stock_levels", || async {
            let on_hand: Vec<i64> = db
                .column("SELECT on_hand FROM stock_levels WHERE sku = 'woken'")
                .await;
            on_hand == [expected]
        })
        .await;
    }
    cancel.cancel();
    task.await.unwrap();
    db.assert_audit_clean().await;
}

/// A read model far behind the others (new, or its checkpoint reset) gets
/// windows of its own: in the same batch the others still take what is new.
#[tokio::test]
async fn a_model_far_behind_does_not_hold_back_the_others() {
    let db = TestDb::new().await;
    for i in 0..20 {
        db.receive(&format!("in-{i}"), "early", 1).await;
    }
    db.project_all().await;
    db.client()
        .await
        .batch_execute(
            "DELETE FROM reservation_totals;
             UPDATE projection_checkpoints SET tx_id = '0', position = 0, events_applied = 0
             WHERE name = 'reservation_totals' AND slot = 'live'",
        )
        .await
        .unwrap();
    db.receive("in-late", "late", 7).await;
    let mut client = stockledger::store::pool::get(db.store.pool())
        .await
        .unwrap();
    stockledger::projection::apply_live(&mut client, stockledger::projection::ALL, 5)
        .await
        .unwrap();
    let late: Vec<i64> = db
        .column("SELECT on_hand FROM stock_levels WHERE sku = 'late'")
        .await;
    assert_eq!(late, [7], "stock_levels waited for reservation_totals");
    let behind: Vec<i64> = db
        .column(
            "SELECT events_applied FROM projection_checkpoints
             WHERE name = 'reservation_totals' AND slot = 'live'",
        )
        .await;
    assert_eq!(behind, [5]);
    db.project_all().await;
    db.assert_audit_clean().await;
}
