//! Faults between the service and PostgreSQL, through a TCP proxy that holds,
//! drops or cuts replies (`fault_proxy`), a lock held by an
//! abandoned transaction, and PostgreSQL restarted the hard way. After each:
//! every acknowledged command is in the log exactly once, nothing is
//! oversold, and callers got true answers.

mod common;

use std::time::Duration;
use stockledger::domain::event::{ReservationCreated, StockReceived};

use common::*;
use fault_proxy::{CommitFault, Proxy, Upstream};
use stockledger::domain::{CommandContext, Event, Outcome};
use stockledger::store::group::GroupConfig;
use stockledger::store::{pool, Store, StoreError};

async fn proxy_for(db: &TestDb) -> Proxy {
    Proxy::start(Upstream::of(&db.config)).await.unwrap()
}

/// A store whose connections all go through `proxy`.
fn store_through(proxy: &Proxy, db: &TestDb, grouped: bool) -> Store {
    let pool = pool::build(proxy.config(&db.config), 8).unwrap();
    if grouped {
        Store::with_group_commit(pool, GroupConfig::default())
    } else {
        Store::new(pool)
    }
}

/// Ten apples received, and a plain store whose connections pass a proxy.
async fn apples_behind_proxy() -> (TestDb, Proxy, Store) {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    let proxy = proxy_for(&db).await;
    let store = store_through(&proxy, &db, false);
    (db, proxy, store)
}

/// Reservation r1 has `events` events, apple has `figures`, and the audit
/// (after the read models catch up) is clean.
async fn settled(db: &TestDb, events: i64, figures: (i64, i64, i64)) {
    assert_eq!(db.count_stream(&res_stream("r1")).await, events);
    assert_eq!(db.figures("apple").await, figures);
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// The bound the contract gives a caller: an answer within the HTTP request
/// timeout. Tests use it as a liveness bound (an answer at all, in time),
/// never as a measure of speed.
fn request_timeout() -> Duration {
    Duration::from_millis(stockledger::limits::DEFAULT_REQUEST_TIMEOUT_MS)
}

/// `n` receipts for items nothing else touches, sent at once: each is
/// answered, and taken, within the request timeout.
async fn receipts_for_other_items_go_through(store: &Store, n: usize) {
    let mut others = Vec::new();
    for i in 0..n {
        let s = store.clone();
        others.push(tokio::spawn(async move {
            tokio::time::timeout(
                request_timeout(),
                s.execute(
                    receive(&format!("other-{i}"), &format!("sku-{i}"), 1),
                    ctx(),
                ),
            )
            .await
        }));
    }
    for o in others {
        let answer = o
            .await
            .unwrap()
            .expect("answered within the request timeout");
        answer.expect("not held up by the stuck command").unwrap();
    }
}

fn ctx() -> CommandContext {
    CommandContext::new("test")
}

fn reserved_fresh(o: &Outcome) -> bool {
    matches!(o, Outcome::Reservation { view, replayed: false } if view.state.as_str() == "RESERVED")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_reply_is_cut_is_answered_as_committed() {
    let (db, proxy, store) = apples_behind_proxy().await;
    proxy.on_next_commits(&[CommitFault::CutAfter]);
    let o = store
        .execute(reserve("r1", "o1", &[("apple", 3)], None), ctx())
        .await
        .expect("the outcome is resolved, not unknown")
        .expect("reserved");
    assert!(reserved_fresh(&o), "{o:?}");
    settled(&db, 1, (10, 3, 0)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_cut_before_it_reaches_the_server_is_tried_again() {
    let (db, proxy, store) = apples_behind_proxy().await;
    proxy.on_next_commits(&[CommitFault::CutBefore]);
    let o = store
        .execute(reserve("r1", "o1", &[("apple", 3)], None), ctx())
        .await
        .unwrap()
        .unwrap();
    assert!(reserved_fresh(&o), "{o:?}");
    assert!(
        proxy.commits() >= 2,
        "the first COMMIT never arrived; a second did"
    );
    settled(&db, 1, (10, 3, 0)).await;
}

/// The probe's finding: a reserve committed, its COMMIT reply was held while
/// another instance released the reservation, then the connection broke. The
/// caller must hear what its own commit did (RESERVED, not a replay), never
/// RESERVATION_RELEASED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_commit_reply_is_answered_as_its_commit_whatever_happened_since() {
    let (db, proxy, store) = apples_behind_proxy().await;
    proxy.on_next_commits(&[CommitFault::HoldReply(Duration::from_secs(30))]);
    let pending = tokio::spawn(async move {
        store
            .execute(reserve("r1", "o1", &[("apple", 3)], None), ctx())
            .await
    });
    for _ in 0..250 {
        if db.count_stream(&res_stream("r1")).await == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        db.count_stream(&res_stream("r1")).await,
        1,
        "the reserve committed"
    );
    // Another instance (not through the proxy) releases it meanwhile.
    db.run(release("r1")).await.unwrap();
    proxy.cut_all();
    let o = pending.await.unwrap().unwrap().unwrap();
    assert!(reserved_fresh(&o), "its own commit's answer, got {o:?}");
    settled(&db, 2, (10, 0, 0)).await;
}

/// The COMMIT is swallowed on its way and the connection stays open: the
/// server holds the transaction open with its locks, waiting. The attempt's
/// COMMIT deadline passes, the resolution finds the transaction in progress
/// and idle, ends it (freeing its locks at once, not after the 60 s
/// idle-in-transaction timeout) and the batch runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swallowed_commit_is_ended_and_run_again() {
    let (db, proxy, store) = apples_behind_proxy().await;
    proxy.on_next_commits(&[CommitFault::Swallow]);
    let o = store
        .execute(reserve("r1", "o1", &[("apple", 3)], None), ctx())
        .await
        .expect("resolved: the swallowed transaction was ended, not waited for")
        .unwrap();
    assert!(reserved_fresh(&o), "{o:?}");
    // The abandoned transaction is gone (not left idle in transaction with
    // its locks until the server's 60 s timeout), so the item is free.
    let idle: Vec<i64> = db
        .column(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
        )
        .await;
    assert_eq!(idle, vec![0], "no transaction left holding locks");
    db.run(reserve("r2", "o2", &[("apple", 1)], None))
        .await
        .unwrap();
    settled(&db, 1, (10, 4, 0)).await;
}

/// A fresh database (nothing has run since PostgreSQL started, as after a
/// restart, a crash recovery or a failover): the very first command's COMMIT
/// is swallowed, leaving its transaction open. The server's incarnation row
/// must not be written inside that transaction, or every other command (and
/// the stuck command's own outcome check) waits on it: receipts for other
/// items still go through, and the stuck command is resolved and run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_first_command_after_a_restart_holds_no_lock_others_need() {
    let db = TestDb::new().await;
    let proxy = proxy_for(&db).await;
    let store = store_through(&proxy, &db, true);
    proxy.on_next_commits(&[CommitFault::Swallow]);
    let s = store.clone();
    let stuck = tokio::spawn(async move { s.execute(receive("first", "slow", 1), ctx()).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    receipts_for_other_items_go_through(&store, 5).await;
    stuck
        .await
        .unwrap()
        .expect("the stuck command is resolved and run again")
        .unwrap();
    assert_eq!(db.count_events().await, 6);
    assert_eq!(db.figures("slow").await, (1, 0, 0));
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// Two COMMIT replies black-holed for good (the connections stay open): the
/// two stuck commands are resolved after the attempt deadline, and writes for
/// other items keep succeeding well within the HTTP request timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn black_holed_commits_do_not_stop_unrelated_writes() {
    let db = TestDb::new().await;
    let proxy = proxy_for(&db).await;
    let store = store_through(&proxy, &db, true);
    proxy.on_next_commits(&[CommitFault::BlackHole, CommitFault::BlackHole]);
    let mut stuck = Vec::new();
    for i in 0..2 {
        let s = store.clone();
        stuck.push(tokio::spawn(async move {
            s.execute(receive(&format!("stuck-{i}"), "slow", 1), ctx())
                .await
        }));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    receipts_for_other_items_go_through(&store, 40).await;
    for s in stuck {
        // The COMMIT reached the server: resolved as committed.
        s.await.unwrap().unwrap().unwrap();
    }
    assert_eq!(db.count_events().await, 42);
    assert_eq!(db.figures("slow").await, (2, 0, 0));
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// An abandoned transaction holds the hot item's balance row: commands for
/// it are answered UNAVAILABLE after the lock timeout (nothing written), the
/// commands for other items in the same batches go through, and once the lock
/// is gone the hot item works again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lock_held_elsewhere_costs_only_the_commands_that_need_it() {
    let db = TestDb::new().await;
    db.receive("in-hot", "hot", 100).await;
    let store = db.store.grouped(GroupConfig::default());
    let mut holder = db.client().await;
    let tx = holder.transaction().await.unwrap();
    tx.execute(
        "SELECT 1 FROM item_balances WHERE sku = 'hot' FOR UPDATE",
        &[],
    )
    .await
    .unwrap();
    let mut tasks = Vec::new();
    for i in 0..60 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            let hot = i % 3 == 0;
            let cmd = if hot {
                reserve(&format!("r{i}"), &format!("o{i}"), &[("hot", 1)], None)
            } else {
                receive(&format!("in-{i}"), &format!("cold-{i}"), 1)
            };
            (
                hot,
                tokio::time::timeout(request_timeout(), s.execute(cmd, ctx())).await,
            )
        }));
        if i % 10 == 9 {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    let (mut cold_ok, mut hot_refused) = (0, 0);
    for t in tasks {
        let (hot, answer) = t.await.unwrap();
        let answer = answer.expect("answered within the HTTP request timeout");
        if hot {
            assert!(
                matches!(answer, Err(StoreError::LockTimeout)),
                "hot: {answer:?}"
            );
            hot_refused += 1;
        } else {
            answer.expect("cold items are not held up").unwrap();
            cold_ok += 1;
        }
    }
    assert_eq!((cold_ok, hot_refused), (40, 20));
    assert_eq!(
        db.figures("hot").await,
        (100, 0, 0),
        "nothing written for hot"
    );
    tx.rollback().await.unwrap();
    // The hot item is suspect for a moment; its commands run on their own and
    // go through now that the lock is gone.
    let o = store
        .execute(reserve("r-after", "o-after", &[("hot", 1)], None), ctx())
        .await
        .unwrap()
        .unwrap();
    assert!(reserved_fresh(&o));
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// 64 writers reserve, confirm and release while the proxy cuts every
/// connection at random moments. Callers retry with the same ids, as the
/// contract says. Afterwards every acknowledged command is in the log once,
/// the figures match, and the audit is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_cuts_under_64_writers_lose_nothing_acknowledged() {
    let db = TestDb::new().await;
    for sku in ["a", "b", "c"] {
        db.receive(&format!("in-{sku}"), sku, 100_000).await;
    }
    let proxy = proxy_for(&db).await;
    let store = store_through(&proxy, &db, true);
    let stop = tokio_util::sync::CancellationToken::new();
    let cutter = {
        let stop = stop.clone();
        let proxy_cut = std::sync::Arc::new(proxy);
        let p = proxy_cut.clone();
        let task = tokio::spawn(async move {
            // Cuts during the writers' four seconds; then the service must
            // recover by itself and answer everything still under way.
            let mut cuts = 0;
            let until = std::time::Instant::now() + Duration::from_secs(4);
            while !stop.is_cancelled() && std::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(150 + random_below(450))).await;
                p.cut_all();
                cuts += 1;
            }
            cuts
        });
        (task, proxy_cut)
    };
    let mut writers = Vec::new();
    for w in 0..64 {
        let s = store.clone();
        writers.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let until = std::time::Instant::now() + Duration::from_secs(4);
            for k in 0.. {
                if std::time::Instant::now() > until {
                    break;
                }
                let id = format!("r{w}-{k}");
                let sku = ["a", "b", "c"][random_below(3) as usize];
                let steps = [
                    reserve(
                        &id,
                        &format!("o{w}-{k}"),
                        &[(sku, 1 + random_below(3) as i64)],
                        None,
                    ),
                    if random_below(2) == 0 {
                        confirm(&id)
                    } else {
                        release(&id)
                    },
                ];
                for cmd in steps {
                    let mut answer = None;
                    let mut last = None;
                    let give_up = std::time::Instant::now() + Duration::from_secs(60);
                    while std::time::Instant::now() < give_up {
                        match s.execute(cmd.clone(), ctx()).await {
                            Ok(a) => {
                                answer = Some(a);
                                break;
                            }
                            Err(e) if e.is_retryable() => {
                                last = Some(e);
                                tokio::time::sleep(Duration::from_millis(50)).await
                            }
                            Err(e) => panic!("not retryable: {e}"),
                        }
                    }
                    let answer = answer.unwrap_or_else(|| panic!("never answered: {last:?}"));
                    let o = answer.expect("accepted");
                    acknowledged.push((id.clone(), state_of(&o)));
                }
            }
            acknowledged
        }));
    }
    let mut acknowledged = Vec::new();
    for w in writers {
        acknowledged.extend(w.await.unwrap());
    }
    stop.cancel();
    let cuts = cutter.0.await.unwrap();
    assert!(cuts >= 3, "the proxy cut connections {cuts} times");
    // Every acknowledged command is in the log, once.
    let counts: std::collections::HashMap<String, i64> = db
        .client()
        .await
        .query("SELECT stream, count(*) FROM events GROUP BY stream", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (id, state) in &acknowledged {
        let n = counts.get(&res_stream(id)).copied().unwrap_or(0);
        match *state {
            "RESERVED" => assert!(n >= 1, "{id} reserved but not in the log"),
            "CONFIRMED" | "RELEASED" => assert_eq!(n, 2, "{id} {state}"),
            other => panic!("{id}: {other}"),
        }
    }
    assert!(
        acknowledged.len() >= 64 * 2,
        "{} commands",
        acknowledged.len()
    );
    let duplicates: Vec<i64> = db
        .column("SELECT count(*) FROM events GROUP BY stream, seq HAVING count(*) > 1")
        .await;
    assert!(duplicates.is_empty());
    for sku in ["a", "b", "c"] {
        let (on_hand, reserved, _) = db.figures(sku).await;
        assert!(reserved >= 0 && reserved <= on_hand, "{sku}");
    }
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// One corrupt reservation stream must not keep every other due reservation
/// holding stock: the expiry pass falls back to one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_pass_survives_one_bad_reservation() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.run(reserve("good", "o-good", &[("apple", 2)], Some(1)))
        .await
        .unwrap();
    // A broken stream: a receipt at seq 2 of a reservation stream, which the
    // strict fold reports as corrupt.
    let client = db.client().await;
    let meta: serde_json::Value = client
        .query_one(
            "SELECT metadata FROM events WHERE stream = 'reservation:good'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let item = |sku: &str| stockledger::domain::Item {
        sku: stockledger::domain::Sku::parse("sku", sku).unwrap(),
        location: stockledger::domain::Location::parse_or_default("location", None).unwrap(),
    };
    let bad = Event::ReservationCreated(ReservationCreated {
        order_id: stockledger::domain::OrderId::parse("order_id", "o-bad").unwrap(),
        lines: vec![stockledger::domain::command::Line {
            item: item("apple"),
            quantity: 2,
        }],
        expires_at: chrono::Utc::now() + chrono::Duration::seconds(1),
        ttl_seconds: 1,
        request_hash: "bad".into(),
    });
    let pear = item("pear");
    let foreign = Event::StockReceived(StockReceived {
        sku: pear.sku,
        location: pear.location,
        quantity: 1,
    });
    for (seq, event) in [(1, &bad), (2, &foreign)] {
        common::insert_event(&client, "reservation:bad", seq, event, &meta).await;
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    db.project_all().await;
    let expired = db.store.expire_due("test", 100).await.unwrap();
    assert_eq!(
        expired, 1,
        "the good reservation expired despite the bad one"
    );
    assert_eq!(db.figures("apple").await, (10, 0, 0));
}

/// A lock held by an abandoned transaction on one item must not stop the
/// expiry of reservations on other items: the pass runs them one at a time,
/// expires what it can, and the held one expires once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_pass_expires_around_a_held_lock() {
    let db = TestDb::new().await;
    db.receive("in-held", "held", 10).await;
    db.receive("in-free", "free", 10).await;
    for (id, sku) in [("r-held", "held"), ("r-free", "free")] {
        db.run(reserve(id, &format!("o-{id}"), &[(sku, 2)], Some(1)))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    db.project_all().await;
    let mut holder = db.client().await;
    let tx = holder.transaction().await.unwrap();
    tx.execute(
        "SELECT 1 FROM item_balances WHERE sku = 'held' FOR UPDATE",
        &[],
    )
    .await
    .unwrap();
    let expired = tokio::time::timeout(request_timeout(), db.store.expire_due("test", 100))
        .await
        .expect("the pass ends while the lock is held")
        .expect("a pass that expired something succeeds");
    assert_eq!(expired, 1, "the free reservation expired");
    assert_eq!(db.figures("free").await, (10, 0, 0));
    assert_eq!(
        db.figures("held").await,
        (10, 2, 0),
        "held: nothing written"
    );
    tx.rollback().await.unwrap();
    db.project_all().await;
    let expired = db.store.expire_due("test", 100).await.unwrap();
    assert_eq!(expired, 1, "the held one expires once the lock is gone");
    assert_eq!(db.figures("held").await, (10, 0, 0));
    db.project_all().await;
    db.assert_audit_clean().await;
}
