//! Group commit: many commands in one transaction give the answers they would
//! give one by one, and a failing command cannot spoil its neighbours.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use stockledger::domain::{Command, CommandContext, Outcome, Rejection};
use stockledger::store::group::{Gather, GroupConfig};

/// What matters of an answer, without times that differ between databases.
fn summary(a: &Result<Outcome, Rejection>) -> String {
    match a {
        Ok(o @ Outcome::Reservation { .. }) => format!(
            "{}{}",
            state_of(o),
            if o.replayed() { " replayed" } else { "" }
        ),
        Ok(o) => format!("ok{}", if o.replayed() { " replayed" } else { "" }),
        Err(r) => r.code().as_str().to_owned(),
    }
}

/// Runs `commands` as one batch and summarises each answer.
async fn run_batch(db: &TestDb, commands: Vec<Command>) -> Vec<String> {
    let batch: Vec<_> = commands
        .into_iter()
        .map(|c| (c, CommandContext::new("test")))
        .collect();
    db.store
        .execute_batch(&batch)
        .await
        .unwrap()
        .iter()
        .map(summary)
        .collect()
}

/// A script touching every row of the outcome table that needs no clock.
fn script() -> Vec<Command> {
    vec![
        receive("in-a", "a", 5),
        receive("in-b", "b", 3),
        reserve("r1", "o1", &[("a", 2), ("b", 1)], None),
        reserve("r1", "o1", &[("a", 2), ("b", 1)], None),
        reserve("r1", "o1", &[("a", 3)], None),
        reserve("r2", "o1", &[("a", 1)], None),
        reserve("r3", "o3", &[("a", 3), ("b", 3)], None),
        reserve("r4", "o4", &[("a", 3), ("b", 2)], None),
        confirm("r1"),
        confirm("r1"),
        release("r1"),
        release("r4"),
        release("r4"),
        confirm("r4"),
        release("r5"),
        reserve("r5", "o5", &[("a", 1)], None),
        confirm("r6"),
        adjust("adj-1", "a", -4),
        adjust("adj-2", "a", -3),
        receive("in-b", "b", 3),
        receive("in-b", "b", 4),
        reserve("r7", "o7", &[("b", 2)], None),
        expire("r7"),
    ]
}

#[tokio::test]
async fn one_batch_answers_as_one_by_one() {
    let one_by_one = TestDb::new().await;
    let mut expected = Vec::new();
    for cmd in script() {
        expected.push(summary(&one_by_one.run(cmd).await));
    }
    let batched = TestDb::new().await;
    let got = run_batch(&batched, script()).await;
    assert_eq!(got, expected);
    // The failures inside the batch (conflicts, shortfalls) did not stop the rest.
    assert!(
        expected.contains(&"INSUFFICIENT_STOCK".to_owned())
            && expected.contains(&"IDEMPOTENCY_CONFLICT".to_owned())
    );
    for sku in ["a", "b"] {
        assert_eq!(
            batched.figures(sku).await,
            one_by_one.figures(sku).await,
            "{sku}"
        );
    }
    assert_eq!(
        batched.count_events().await,
        one_by_one.count_events().await
    );
    batched.project_all().await;
    batched.assert_audit_clean().await;
}

/// Items shared between multi-item reservations and receipts of one batch:
/// each command sees exactly what the earlier ones left.
#[tokio::test]
async fn shared_items_inside_one_batch() {
    let db = TestDb::new().await;
    let got = run_batch(
        &db,
        vec![
            receive("in-a", "a", 2),
            reserve("r1", "o1", &[("a", 2), ("b", 1)], None), // b not received yet: refused
            receive("in-b", "b", 1),
            reserve("r2", "o2", &[("a", 2), ("b", 1)], None), // now both are there
            reserve("r3", "o3", &[("b", 1)], None),           // b is gone
            release("r2"),
            reserve("r4", "o4", &[("b", 1), ("a", 1)], None), // freed by the release
        ],
    )
    .await;
    assert_eq!(
        got,
        [
            "ok",
            "INSUFFICIENT_STOCK",
            "ok",
            "RESERVED",
            "INSUFFICIENT_STOCK",
            "RELEASED",
            "RESERVED"
        ]
    );
    assert_eq!(db.figures("a").await, (2, 1, 0));
    assert_eq!(db.figures("b").await, (1, 1, 0));
}

/// The same message delivered many times at once through group commit lands
/// in one batch and appends one event; exactly one caller gets the original.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn duplicates_inside_one_batch() {
    let db = TestDb::new().await;
    db.receive("in-1", "a", 10).await;
    let config = GroupConfig {
        window: Duration::from_millis(50),
        gather: Gather::Timer,
        ..GroupConfig::default()
    };
    let store = Arc::new(db.store.grouped(config));
    let cmd = reserve("r-dup", "o-dup", &[("a", 4)], None);
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let (store, cmd) = (store.clone(), cmd.clone());
            tokio::spawn(async move {
                store
                    .execute(cmd, CommandContext::new("test"))
                    .await
                    .unwrap()
                    .unwrap()
            })
        })
        .collect();
    let mut originals = 0;
    for t in tasks {
        originals += usize::from(!t.await.unwrap().replayed());
    }
    assert_eq!(originals, 1);
    assert_eq!(db.count_stream(&res_stream("r-dup")).await, 1);
    assert_eq!(db.figures("a").await, (10, 4, 0));
}

/// The timer-free gather (`Gather::Yield`) forms batches from whatever is
/// queued: a rush of buyers for 10 units gets exactly 10, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_yield_gather_sells_exactly_what_there_is() {
    let db = TestDb::new().await;
    db.receive("in-1", "a", 10).await;
    let config = GroupConfig {
        gather: Gather::Yield,
        ..GroupConfig::default()
    };
    let store = Arc::new(db.store.grouped(config));
    let tasks: Vec<_> = (0..60)
        .map(|i| {
            let store = store.clone();
            let cmd = reserve(&format!("r{i}"), &format!("o{i}"), &[("a", 1)], None);
            tokio::spawn(async move { store.execute(cmd, CommandContext::new("test")).await })
        })
        .collect();
    let mut sold = 0;
    for t in tasks {
        match t.await.unwrap().unwrap() {
            Ok(_) => sold += 1,
            Err(r) => assert_eq!(r.code().as_str(), "INSUFFICIENT_STOCK"),
        }
    }
    assert_eq!(sold, 10);
    assert_eq!(db.figures("a").await, (10, 10, 0));
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// A batch that fails at COMMIT: the poisoned command gets an error, its
/// neighbours are run again on their own and get their true answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_whose_commit_fails() {
    let db = TestDb::new().await;
    // A deferred constraint trigger refuses one stream, at COMMIT time.
    db.client()
        .await
        .batch_execute(
            "CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.stream = 'receipt:poison' THEN RAISE EXCEPTION 'poisoned' USING ERRCODE = 'P0001'; END IF;
                 RETURN NULL;
             END $$;
             CREATE CONSTRAINT TRIGGER poison AFTER INSERT ON events
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION poison();",
        )
        .await
        .unwrap();
    let config = GroupConfig {
        window: Duration::from_millis(100),
        gather: Gather::Timer,
        pipelines: 1,
        ..GroupConfig::default()
    };
    let store = Arc::new(db.store.grouped(config));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let id = if i == 7 {
            "poison".to_owned()
        } else {
            format!("in-{i}")
        };
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            (
                id.clone(),
                store
                    .execute(receive(&id, "a", 1), CommandContext::new("test"))
                    .await,
            )
        }));
    }
    let mut ok = 0;
    for t in tasks {
        let (id, answer) = t.await.unwrap();
        match answer {
            Ok(Ok(o)) => {
                assert!(!o.replayed(), "{id}");
                ok += 1;
            }
            Err(e) => {
                assert_eq!(id, "poison", "only the poisoned command fails: {e}");
                assert!(!e.is_retryable());
            }
            Ok(Err(r)) => panic!("{id}: {r}"),
        }
    }
    assert_eq!(ok, 19);
    assert_eq!(db.count_events().await, 19);
    assert_eq!(db.figures("a").await, (19, 0, 0));
}

/// Two processes (two stores with their own pools and group commits) batch
/// against the same items at once: exactly the stock is sold.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_batching_the_same_items() {
    let db = TestDb::new().await;
    db.receive("in-1", "hot", 150).await;
    let other_pool = stockledger::store::pool::build(db.config.clone(), 8).unwrap();
    let stores = [
        Arc::new(db.store.grouped(GroupConfig::default())),
        Arc::new(stockledger::store::Store::with_group_commit(
            other_pool,
            GroupConfig::default(),
        )),
    ];
    let mut tasks = Vec::new();
    for i in 0..400 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            let lines: &[(&str, i64)] = if i % 5 == 0 {
                &[("hot", 1), ("cold", 1)]
            } else {
                &[("hot", 1)]
            };
            store
                .execute(
                    reserve(&format!("r-{i}"), &format!("o-{i}"), lines, None),
                    CommandContext::new("test"),
                )
                .await
                .unwrap()
        }));
        if i == 200 {
            // Cold stock arrives half-way through.
            db.receive("in-cold", "cold", 30).await;
        }
    }
    let mut reserved = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => reserved += 1,
            Err(Rejection::InsufficientStock { .. }) => {}
            Err(other) => panic!("{other:?}"),
        }
    }
    let (on_hand, hot_reserved, _) = db.figures("hot").await;
    assert_eq!(
        (on_hand, hot_reserved),
        (150, 150),
        "exactly the stock is sold"
    );
    assert_eq!(reserved, 150);
    let cold = db.figures("cold").await;
    assert!(cold.1 <= cold.0, "cold never oversold: {cold:?}");
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// Adaptive gathering (the default) waits for a committing batch only a
/// bounded while: with one batch stuck behind a row lock held elsewhere,
/// receipts for another item are gathered, committed and answered one after
/// another while the stuck batch still waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stuck_batch_does_not_hold_the_next_one() {
    let db = TestDb::new().await;
    db.receive("in-a", "a", 10).await;
    assert_eq!(GroupConfig::default().gather, Gather::Adaptive);
    let store = Arc::new(db.store.grouped(GroupConfig::default()));
    let mut holder = db.client().await;
    let lock = holder.transaction().await.unwrap();
    lock.execute(
        "SELECT 1 FROM item_balances WHERE sku = 'a' FOR UPDATE",
        &[],
    )
    .await
    .unwrap();
    let stuck = {
        let store = store.clone();
        tokio::spawn(async move {
            let cmd = reserve("r-stuck", "o-stuck", &[("a", 1)], None);
            store.execute(cmd, CommandContext::new("test")).await
        })
    };
    // The reservation's batch is committing (waiting for the lock) by now.
    eventually("the reservation waits for the row lock", || async {
        let waiting: Vec<i64> = db
            .column(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE wait_event_type = 'Lock' AND datname = current_database()",
            )
            .await;
        waiting[0] > 0
    })
    .await;
    for i in 0..5 {
        let cmd = receive(&format!("in-b{i}"), "b", 1);
        let answer = store.execute(cmd, CommandContext::new("test")).await;
        assert!(matches!(answer, Ok(Ok(_))), "{answer:?}");
    }
    assert!(
        !stuck.is_finished(),
        "the receipts waited for the stuck batch to end"
    );
    assert_eq!(db.figures("b").await, (5, 0, 0));
    lock.rollback().await.unwrap();
    // Its answer depends on whether the lock wait ran out first; either way
    // it is answered.
    stuck.await.unwrap().ok();
}

/// Commands queued behind a stall (here: the store's only connection held
/// elsewhere, so both pipelines wait) whose callers give up before their
/// turn are never started: none of them is in the log afterwards, while the
/// commands whose callers still wait all are.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commands_whose_callers_gave_up_are_not_started() {
    use stockledger::store::{pool, Store};
    let db = TestDb::new().await;
    db.receive("in-1", "hot", 1_000).await;
    let store = Store::with_group_commit(
        pool::build(db.config.clone(), 1).unwrap(),
        GroupConfig::default(),
    );
    let held = pool::get(store.pool()).await.unwrap();
    // Two callers that wait: one per pipeline, each stuck waiting for the
    // connection, so whatever comes next stays queued.
    let mut waiting = Vec::new();
    for i in 0..2 {
        let s = store.clone();
        waiting.push(tokio::spawn(async move {
            s.execute(
                receive(&format!("plug-{i}"), "plug", 1),
                CommandContext::new("test"),
            )
            .await
        }));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A hundred callers that give up after 200 ms, while queued.
    let mut impatient = Vec::new();
    for i in 0..100 {
        let s = store.clone();
        impatient.push(tokio::spawn(async move {
            tokio::time::timeout(
                Duration::from_millis(200),
                s.execute(
                    reserve(&format!("r{i}"), &format!("o{i}"), &[("hot", 1)], None),
                    CommandContext::new("test"),
                ),
            )
            .await
        }));
    }
    for i in impatient {
        assert!(i.await.unwrap().is_err(), "the caller gave up first");
    }
    drop(held);
    for w in waiting {
        w.await.unwrap().unwrap().unwrap();
    }
    // Queued after all of them: once it is answered, the queue before it has
    // been taken.
    store
        .execute(receive("last", "plug", 1), CommandContext::new("test"))
        .await
        .unwrap()
        .unwrap();
    let reservations: Vec<i64> = db
        .column("SELECT count(*) FROM events WHERE type = 'ReservationCreated'")
        .await;
    assert_eq!(reservations, vec![0], "no abandoned command was started");
    assert_eq!(db.figures("hot").await, (1_000, 0, 0));
    assert_eq!(db.figures("plug").await, (3, 0, 0));
}
