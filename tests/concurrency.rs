//! Concurrency: the guarantees that matter when many callers arrive at once.
//! Every task goes through the real store and a real database.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::*;
use stockledger::domain::{CommandContext, Outcome, Rejection};

type Answer = Result<Outcome, Rejection>;

/// 64 tasks, each trying three 1-unit reservations, on an item with 100 units:
/// exactly 100 succeed, the other 92 are refused, the balances are exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_oversell_with_64_concurrent_callers() {
    let db = Arc::new(TestDb::new().await);
    db.receive("in-1", "hot", 100).await;
    let mut tasks = Vec::new();
    for t in 0..64 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            for k in 0..3 {
                let id = format!("r-{t}-{k}");
                answers.push(
                    db.run(reserve(&id, &format!("o-{t}-{k}"), &[("hot", 1)], None))
                        .await,
                );
            }
            answers
        }));
    }
    let (mut reserved, mut refused) = (0, 0);
    for t in tasks {
        for answer in t.await.unwrap() {
            match answer {
                Ok(o) if state_of(&o) == "RESERVED" && !o.replayed() => reserved += 1,
                Err(Rejection::InsufficientStock { shortfalls }) => {
                    assert_eq!(shortfalls[0].requested, 1);
                    assert_eq!(shortfalls[0].available, 0);
                    refused += 1;
                }
                other => panic!("unexpected answer {other:?}"),
            }
        }
    }
    assert_eq!((reserved, refused), (100, 92));
    assert_eq!(db.figures("hot").await, (100, 100, 0));
    // One receipt plus exactly one event per successful reservation.
    assert_eq!(db.count_events().await, 101);
}

/// The same reserve delivered 50 times at once: one event, 50 identical
/// answers, of which exactly one is the original and 49 are replays.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_reserve_sent_50_times_at_once() {
    let db = Arc::new(TestDb::new().await);
    db.receive("in-1", "apple", 10).await;
    let cmd = reserve("r-dup", "o-dup", &[("apple", 3)], Some(600));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (db, cmd) = (db.clone(), cmd.clone());
            tokio::spawn(async move { db.run(cmd).await.expect("accepted") })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    assert_eq!(db.count_stream(&res_stream("r-dup")).await, 1);
    assert_eq!(answers.iter().filter(|o| !o.replayed()).count(), 1);
    assert_eq!(answers.iter().filter(|o| o.replayed()).count(), 49);
    // Identical apart from the replay flag, including the original expiry.
    let views: Vec<_> = answers
        .iter()
        .map(|o| match o {
            Outcome::Reservation { view, .. } => view.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(views.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(db.figures("apple").await, (10, 3, 0));
}

/// Confirm, release and expiry racing on the same reservation, 200 rounds:
/// exactly one seq-2 event per reservation, every answer consistent with it,
/// balances consistent with the events.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn confirm_release_and_expire_race_200_rounds() {
    let db = Arc::new(TestDb::new().await);
    db.receive("in-1", "race", 10_000).await;
    // Half the reservations are due when the race starts (expiry can win and
    // confirm must lose), half are not (expiry finds nothing to do).
    let rounds: Vec<(String, bool, i64)> = (0..200)
        .map(|i| (format!("race-{i}"), i % 2 == 0, 1 + i % 3))
        .collect();
    let setup: Vec<_> = rounds
        .iter()
        .map(|(id, due, q)| {
            let ttl = if *due { 1 } else { 3600 };
            (
                reserve(id, &format!("order-{id}"), &[("race", *q)], Some(ttl)),
                CommandContext::new("test"),
            )
        })
        .collect();
    for answer in db.store.execute_batch(&setup).await.unwrap() {
        assert_eq!(state_of(&answer.unwrap()), "RESERVED");
    }
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;

    let mut tasks = Vec::new();
    for (id, _, _) in &rounds {
        for (kind, cmd) in [
            ("confirm", confirm(id)),
            ("release", release(id)),
            ("expire", expire(id)),
        ] {
            let (db, id) = (db.clone(), id.clone());
            tasks.push(tokio::spawn(async move { (id, kind, db.run(cmd).await) }));
        }
    }
    let mut answers: HashMap<String, Vec<(&str, Answer)>> = HashMap::new();
    for t in tasks {
        let (id, kind, answer) = t.await.unwrap();
        answers.entry(id).or_default().push((kind, answer));
    }

    let client = db.client().await;
    let mut confirmed_units = 0;
    for (id, due, q) in &rounds {
        let rows = client
            .query(
                "SELECT seq, type FROM events WHERE stream = $1 ORDER BY seq",
                &[&res_stream(id)],
            )
            .await
            .unwrap();
        assert_eq!(rows.len(), 2, "{id}: exactly one seq-2 event");
        let winner: String = rows[1].get(1);
        let final_state = match winner.as_str() {
            "ReservationConfirmed" => "CONFIRMED",
            "ReservationReleased" => "RELEASED",
            "ReservationExpired" => "EXPIRED",
            other => panic!("{id}: unexpected {other}"),
        };
        if *due {
            assert_ne!(
                final_state, "CONFIRMED",
                "{id}: a confirm after expiry must lose"
            );
        } else {
            assert_ne!(final_state, "EXPIRED", "{id}: not due, cannot expire");
        }
        if final_state == "CONFIRMED" {
            confirmed_units += q;
        }
        let mut originals = 0;
        for (kind, answer) in &answers[id] {
            match (kind, answer) {
                (_, Ok(o @ Outcome::Reservation { .. })) => {
                    assert_eq!(state_of(o), final_state, "{id} {kind}");
                    originals += usize::from(!o.replayed());
                }
                (&"expire", Ok(Outcome::NotDue { .. })) => assert_ne!(final_state, "EXPIRED"),
                (&"confirm", Err(r)) => assert!(
                    matches!(
                        (r.code().as_str(), final_state),
                        ("RESERVATION_RELEASED", "RELEASED") | ("RESERVATION_EXPIRED", _)
                    ),
                    "{id}: confirm got {r:?} with {final_state}"
                ),
                (&"release", Err(r)) => {
                    assert_eq!(
                        (r.code().as_str(), final_state),
                        ("ALREADY_CONFIRMED", "CONFIRMED"),
                        "{id}"
                    )
                }
                (kind, other) => panic!("{id}: {kind} answered {other:?} with {final_state}"),
            }
        }
        assert_eq!(originals, 1, "{id}: exactly one command did the work");
    }
    assert_eq!(
        db.figures("race").await,
        (10_000 - confirmed_units, 0, confirmed_units)
    );
}

/// Two reservation ids for one order at the same time: one wins, the other
/// is told which reservation holds the order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_reservation_per_order_under_concurrency() {
    let db = Arc::new(TestDb::new().await);
    db.receive("in-1", "pear", 100).await;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let db = db.clone();
            tokio::spawn(async move {
                db.run(reserve(
                    &format!("r-{i}"),
                    "the-order",
                    &[("pear", 1)],
                    None,
                ))
                .await
            })
        })
        .collect();
    let mut won = Vec::new();
    let mut refused = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(Outcome::Reservation { view, .. }) => won.push(view.reservation_id.to_string()),
            Err(Rejection::OrderAlreadyReserved { order_id, .. }) => {
                assert_eq!(order_id, "the-order");
                refused += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((won.len(), refused), (1, 19));
    assert_eq!(db.figures("pear").await, (100, 1, 0));
}

/// An item's first balance row is created only under the item's own lock:
/// a receipt of a new item waits while another transaction holds it (as one
/// creating that row would), and commands on other items do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_items_first_row_is_created_under_its_lock() {
    let db = TestDb::new().await;
    db.receive("in-0", "apple", 5).await;
    let pear = stockledger::domain::Item {
        sku: stockledger::domain::Sku::parse("sku", "pear").unwrap(),
        location: stockledger::domain::Location::parse_or_default("location", None).unwrap(),
    };
    let mut holder = db.client().await;
    let tx = holder.transaction().await.unwrap();
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&stockledger::store::locks::Lock::Item(&pear).name()],
    )
    .await
    .unwrap();
    let store = db.store.clone();
    let first = tokio::spawn(async move {
        store
            .execute(receive("in-pear", "pear", 3), CommandContext::new("test"))
            .await
    });
    // The receipt comes to wait on the pear's lock (bounded, not timed).
    let waiting = || async {
        db.column::<i64>(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
        )
        .await[0]
    };
    let mut polls = 0;
    while waiting().await == 0 {
        polls += 1;
        assert!(polls < 500, "the receipt never waited on the item's lock");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // Another item is not held up by the pear's lock.
    db.run(reserve("r-apple", "o-apple", &[("apple", 1)], None))
        .await
        .unwrap();
    assert!(!first.is_finished(), "the pear's first receipt waits");
    tx.rollback().await.unwrap();
    first.await.unwrap().unwrap().unwrap();
    assert_eq!(db.figures("pear").await, (3, 0, 0));
    db.project_all().await;
    db.assert_audit_clean().await;
}
