//! A log with every event type in it, written through the command path, then
//! checked by everything that folds the log: every read model's SQL against
//! its replay (the audit), and the history query against the domain's own
//! stock effects. A new event type that some fold or query ignores fails here,
//! in `cargo test`, not in an audit in production.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use stockledger::domain::{EventType, Item, RecordedEvent, StreamKind};
use stockledger::read_model::ALL;
use stockledger::store::Cursor;

/// Writes a log that holds every event type, at two locations, with
/// reservations of several lines, a tombstone and an expiry.
async fn every_event_type(db: &TestDb) {
    db.receive("in-1", "apple", 10).await;
    db.receive("in-2", "pear", 5).await;
    db.run(adjust("adj-1", "apple", -2)).await.unwrap();
    db.run(transfer("t-1", "apple", "default", "north", 3))
        .await
        .unwrap();
    db.run(count("c-1", "pear", 6)).await.unwrap();
    // Limits: one that holds (apple), one set and lifted (pear), and one on
    // an item nothing was received of yet (plum), which makes its row.
    db.run(limit("lim-1", "apple", Some(5))).await.unwrap();
    db.run(limit("lim-2", "pear", Some(1))).await.unwrap();
    db.run(limit("lim-3", "pear", None)).await.unwrap();
    db.run(limit("lim-4", "plum", Some(2))).await.unwrap();
    // A reorder point on pear (6 on hand) that the reserves below take it
    // under, then a receipt brings it back: StockLow, then StockRecovered.
    db.run(reorder_point("pt-1", "pear", Some(5)))
        .await
        .unwrap();
    db.run(reserve(
        "r-confirm",
        "o1",
        &[("apple", 2), ("pear", 1)],
        None,
    ))
    .await
    .unwrap();
    db.run(confirm("r-confirm")).await.unwrap();
    db.run(reserve("r-release", "o2", &[("apple", 1)], None))
        .await
        .unwrap();
    db.run(release("r-release")).await.unwrap();
    db.run(release("r-tombstone")).await.unwrap();
    db.run(reserve("r-open", "o3", &[("pear", 2)], None))
        .await
        .unwrap();
    db.run(reserve(
        "r-expire",
        "o4",
        &[("apple", 1), ("pear", 1)],
        Some(1),
    ))
    .await
    .unwrap();
    // A partly shipped order: one apple shipped, a pear taken off, the hold
    // extended, then the rest shipped by a partial confirm that takes it all.
    db.receive("in-3", "apple", 10).await;
    db.receive("in-4", "pear", 10).await;
    db.run(reserve("r-parts", "o5", &[("apple", 3), ("pear", 2)], None))
        .await
        .unwrap();
    db.run(confirm_lines("r-parts", "ship-1", &[("apple", 1)]))
        .await
        .unwrap();
    db.run(release_lines("r-parts", "drop-1", &[("pear", 1)]))
        .await
        .unwrap();
    db.run(extend("r-parts", "more-time", 3_600)).await.unwrap();
    let done = db
        .run(confirm_lines(
            "r-parts",
            "ship-2",
            &[("apple", 2), ("pear", 1)],
        ))
        .await
        .unwrap();
    assert_eq!(state_of(&done), "CONFIRMED");
    // One left open after a partial confirm, and one whose rest is released.
    db.run(reserve("r-part-open", "o6", &[("apple", 2)], None))
        .await
        .unwrap();
    db.run(confirm_lines("r-part-open", "ship-1", &[("apple", 1)]))
        .await
        .unwrap();
    db.run(reserve("r-part-cancel", "o7", &[("apple", 2)], None))
        .await
        .unwrap();
    db.run(confirm_lines("r-part-cancel", "ship-1", &[("apple", 1)]))
        .await
        .unwrap();
    db.run(release("r-part-cancel")).await.unwrap();
    // Expected receipts: one delivered short and the rest cancelled after a
    // change, one delivered over, one still open, and one on an item
    // nothing was received of yet (fig), which makes its row.
    db.run(expect("po-1", "apple", 10, "2027-01-10"))
        .await
        .unwrap();
    db.run(receive_against("in-po-1", "apple", 4, "po-1"))
        .await
        .unwrap();
    db.run(change_expected("po-1", "chg-1", 8, "2027-01-12"))
        .await
        .unwrap();
    db.run(cancel_expected("po-1")).await.unwrap();
    db.run(expect("po-2", "pear", 3, "2027-01-05"))
        .await
        .unwrap();
    db.run(receive_against("in-po-2", "pear", 5, "po-2"))
        .await
        .unwrap();
    db.run(expect("po-3", "apple", 6, "2027-02-01"))
        .await
        .unwrap();
    db.run(expect("po-4", "fig", 2, "2026-01-01"))
        .await
        .unwrap();
    backorders(db).await;
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let expired = db.run(expire("r-expire")).await.unwrap();
    assert_eq!(state_of(&expired), "EXPIRED");
    // The pre-order that expires drops what waits first; the backorder
    // worker then finds r-pre's last unit unfillable (po-5 was cancelled).
    let expired = db.run(expire("r-pre-exp")).await.unwrap();
    assert_eq!(state_of(&expired), "EXPIRED");
    assert_eq!(db.store.fill_due("test").await.unwrap(), 1);
}

/// Pre-orders of figs, which are only expected: one filled in part by a
/// delivery and left with a unit that will not come, one released while
/// it waits, one that expires while it waits (at the end of the log).
async fn backorders(db: &TestDb) {
    db.run(expect("po-5", "fig", 6, "2027-03-01"))
        .await
        .unwrap();
    db.run(backorder_of("r-pre", "o8", "fig", 3, None))
        .await
        .unwrap();
    db.run(backorder_of("r-pre2", "o9", "fig", 2, None))
        .await
        .unwrap();
    db.run(backorder_of("r-pre-exp", "o10", "fig", 1, Some(1)))
        .await
        .unwrap();
    db.run(receive_against("in-po-4", "fig", 2, "po-4"))
        .await
        .unwrap();
    assert_eq!(db.store.fill_due("test").await.unwrap(), 1);
    db.run(release("r-pre2")).await.unwrap();
    db.run(cancel_expected("po-5")).await.unwrap();
}

async fn whole_log(db: &TestDb) -> Vec<RecordedEvent> {
    let page = db.store.events(Cursor::START, 1000, None).await.unwrap();
    assert!(page.events.len() < 1000, "the test log fits one page");
    page.events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_model_folds_every_event_type_as_its_replay_does() {
    let db = TestDb::new().await;
    every_event_type(&db).await;
    let log = whole_log(&db).await;

    // The log really holds every event type, in every kind of stream.
    let types: BTreeSet<EventType> = log.iter().map(|e| e.event.event_type()).collect();
    let all: BTreeSet<EventType> = EventType::ALL.iter().copied().collect();
    assert_eq!(types, all, "the test log must hold every event type");
    let kinds: BTreeSet<StreamKind> = log.iter().map(|e| e.stream.kind()).collect();
    assert_eq!(kinds, StreamKind::ALL.iter().copied().collect());

    // Every read model, brought up to date by its SQL, matches its replay.
    db.project_all().await;
    let report = db.assert_audit_clean().await;
    let compared: BTreeSet<&str> = report.projections.iter().map(|(n, _)| n.as_str()).collect();
    let models: BTreeSet<&str> = ALL.iter().map(|m| m.name()).collect();
    assert_eq!(compared, models, "every read model is audited");
    assert_eq!(report.events, log.len() as u64);

    // The totals say what the log holds: reservations by state (the
    // tombstone is none), units by where they went. Confirmed: r-confirm's
    // 3, r-parts' 4, one each of r-part-open and r-part-cancel. Released:
    // r-release's 1, a pear of r-parts, the rest of r-part-cancel, and the
    // figs that waited and were dropped: r-pre's last, r-pre2's 2 (released
    // while they waited) and r-pre-exp's 1 (expired while it waited: never
    // held, so counted as released). Held: r-open's 2, r-part-open's 1 and
    // the 2 figs filled for r-pre.
    let totals = db.store.reservation_totals().await.unwrap();
    let want: Vec<(&str, (i64, i64))> = vec![
        ("CONFIRMED", (2, 9)),
        ("EXPIRED", (2, 2)),
        ("RELEASED", (3, 7)),
        ("RESERVED", (3, 5)),
    ];
    let got: Vec<(&str, (i64, i64))> = totals.iter().map(|(s, t)| (s.as_str(), *t)).collect();
    assert_eq!(got, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_of_an_item_holds_every_event_that_moved_it() {
    let db = TestDb::new().await;
    every_event_type(&db).await;
    let log = whole_log(&db).await;

    // What moved each item, by the domain's one definition of stock effects.
    let mut moved: BTreeMap<Item, Vec<i64>> = BTreeMap::new();
    for e in &log {
        e.event.for_each_effect(|item, _| {
            let positions = moved.entry(item.clone()).or_default();
            if positions.last() != Some(&e.position) {
                positions.push(e.position);
            }
        });
    }
    assert_eq!(
        moved.len(),
        5,
        "apple here and at north, pear, plum and fig"
    );
    let mut types = BTreeSet::new();
    for (item, want) in moved {
        let history = db.store.item_history(&item).await.unwrap();
        let got: Vec<i64> = history.iter().map(|e| e.position).collect();
        assert_eq!(got, want, "the history of {item}");
        types.extend(history.iter().map(|e| e.event.event_type()));
    }
    // Every event type that names an item is found by the query (a tombstone
    // moves nothing, but a release with lines does; an extension never does;
    // a limit names its item and moves nothing).
    let all: BTreeSet<EventType> = EventType::ALL
        .iter()
        .copied()
        .filter(|t| *t != EventType::ReservationExtended)
        .collect();
    assert_eq!(types, all);
}

/// Every read model's SQL gives the same rows for any split of the log into
/// batches: the log with every event type, folded one event at a time, two,
/// three and seven at a time, each audited against its replay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_split_of_the_log_into_batches_gives_the_same_read_models() {
    use std::time::Duration;
    use stockledger::projection::worker::{self, WorkerConfig};
    for batch_events in [1, 2, 3, 7] {
        let db = TestDb::new().await;
        every_event_type(&db).await;
        let cancel = tokio_util::sync::CancellationToken::new();
        let config = WorkerConfig {
            batch_events,
            poll_interval: Duration::from_millis(20),
            ..WorkerConfig::default()
        };
        let task = tokio::spawn(worker::run_all(
            db.store.pool().clone(),
            Default::default(),
            cancel.clone(),
            config,
        ));
        db.wait_caught_up().await;
        cancel.cancel();
        task.await.unwrap();
        db.assert_audit_clean().await;
    }
}
