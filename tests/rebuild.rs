//! Rebuilding read models while writes go on, and surviving an interrupted
//! rebuild.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use stockledger::projection::{rebuild, status, worker, ALL};
use tokio_util::sync::CancellationToken;

async fn some_history(db: &TestDb, prefix: &str, n: usize) {
    for i in 0..n {
        let sku = format!("sku-{}", i % 7);
        db.receive(&format!("{prefix}-in-{i}"), &sku, 5).await;
        let id = format!("{prefix}-r-{i}");
        db.run(reserve(&id, &format!("{prefix}-o-{i}"), &[(&sku, 2)], None))
            .await
            .unwrap();
        match i % 3 {
            0 => drop(db.run(confirm(&id)).await.unwrap()),
            1 => drop(db.run(release(&id)).await.unwrap()),
            _ => {}
        }
    }
}

/// A rebuild of every projection while writers and the live workers run:
/// the swapped-in copies agree with the log, and the workers carry on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rebuild_while_writes_go_on() {
    let db = Arc::new(TestDb::new().await);
    some_history(&db, "before", 60).await;
    let cancel = CancellationToken::new();
    let workers = tokio::spawn(worker::run_all(
        db.store.pool().clone(),
        Default::default(),
        cancel.clone(),
        worker::WorkerConfig {
            batch_events: 25,
            poll_interval: Duration::from_millis(20),
            ..worker::WorkerConfig::default()
        },
    ));
    let stop = CancellationToken::new();
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.is_cancelled() {
                some_history(&db, &format!("during-{n}"), 1).await;
                n += 1;
            }
            n
        })
    };
    for &p in ALL {
        let mut batches = 0;
        let report = rebuild::rebuild(
            db.owner_store().pool(),
            p,
            10,
            &stockledger::audit::ReplayVerifier,
            |_| batches += 1,
        )
        .await
        .unwrap();
        assert!(batches > 3, "{}: filled in several batches", p.name());
        assert!(report.events > 0);
    }
    stop.cancel();
    assert!(
        writer.await.unwrap() > 0,
        "writes happened during the rebuild"
    );
    db.wait_caught_up().await;
    db.assert_audit_clean().await;
    let client = db.store.pool().get().await.unwrap();
    for s in status::status(&**client).await.unwrap() {
        assert_eq!(s.state, "live", "{}", s.name);
        assert!(s.rebuild.is_none() && s.definition_current, "{}", s.name);
        assert_eq!(
            s.live.events_applied,
            db.count_events().await,
            "{}: every event once",
            s.name
        );
    }
    cancel.cancel();
    workers.await.unwrap();
}

/// A rebuild interrupted half-way leaves the live copy serving and correct;
/// the next rebuild starts over and completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_interrupted_rebuild_leaves_the_live_copy_untouched() {
    let db = Arc::new(TestDb::new().await);
    some_history(&db, "h", 40).await;
    db.project_all().await;
    let p = stockledger::projection::by_name("order_view").unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let pool = db.owner_store().pool().clone();
    let running = tokio::spawn(async move {
        rebuild::rebuild(
            &pool,
            p,
            5,
            &stockledger::audit::ReplayVerifier,
            move |progress| {
                let _ = tx.send(progress.events);
            },
        )
        .await
    });
    // Interrupt once a few batches are in, well before the end.
    while let Some(events) = rx.recv().await {
        if events >= 15 {
            break;
        }
    }
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());

    let client = db.store.pool().get().await.unwrap();
    let s = status::status_of(&**client, p).await.unwrap();
    assert_eq!(s.state, "rebuilding", "the abandoned copy is visible");
    assert_eq!(s.live.lag_events, 0, "the live copy kept its place");
    db.assert_audit_clean().await;
    // More writes reach the live copy while the abandoned copy sits there.
    some_history(&db, "after", 5).await;
    db.project_all().await;
    db.assert_audit_clean().await;

    rebuild::rebuild(
        db.owner_store().pool(),
        p,
        5,
        &stockledger::audit::ReplayVerifier,
        |_| {},
    )
    .await
    .unwrap();
    let s = status::status_of(&**client, p).await.unwrap();
    assert_eq!(s.state, "live");
    db.assert_audit_clean().await;
}

/// Two rebuilds of one projection cannot run at once.
#[tokio::test]
async fn one_rebuild_per_projection_at_a_time() {
    let db = TestDb::new().await;
    let p = stockledger::projection::by_name("stock_levels").unwrap();
    let blocker = db.client().await;
    blocker
        .execute(
            "SELECT pg_advisory_lock(hashtextextended('rebuild:' || $1, 0))",
            &[&p.name()],
        )
        .await
        .unwrap();
    let err = rebuild::rebuild(
        db.owner_store().pool(),
        p,
        10,
        &stockledger::audit::ReplayVerifier,
        |_| {},
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, rebuild::RebuildError::AlreadyRunning("stock_levels")),
        "{err}"
    );
}
