//! The log and the balances defend themselves: the database refuses changes to
//! the log and balances that break the invariants, whatever the code above it
//! does; migrations are repeatable; the safe reader never skips a transaction
//! that was still open.

mod common;

use common::*;
use stockledger::domain::event::StockReceived;
use stockledger::domain::{Event, EventMetadata, Location, Sku};
use stockledger::store::Cursor;

fn sqlstate(e: &tokio_postgres::Error) -> &str {
    e.code().map(|c| c.code()).unwrap_or("none")
}

#[tokio::test]
async fn the_log_refuses_update_delete_and_truncate() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 5).await;
    let client = db.client().await;
    for sql in [
        "UPDATE events SET data = '{}'",
        "DELETE FROM events",
        "TRUNCATE events",
        "TRUNCATE events CASCADE",
    ] {
        let err = client.batch_execute(sql).await.expect_err(sql);
        assert_eq!(sqlstate(&err), "SL001", "{sql}: {err}");
    }
    assert_eq!(db.count_events().await, 1);
}

#[tokio::test]
async fn balances_refuse_oversell_and_changes_without_events() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 5).await;
    let mut client = db.client().await;
    // A balance change with no event in the same transaction.
    let err = client
        .batch_execute("UPDATE item_balances SET on_hand = on_hand + 1")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "SL002", "{err}");
    // Even with an event, the CHECK constraint refuses reserved > on_hand.
    let tx = client.transaction().await.unwrap();
    tx.batch_execute(
        "INSERT INTO events (stream, seq, type, data, metadata, skus, locations, quantities)
         VALUES ('test:x', 1, 'StockAdjusted', '{}', '{}', '{}', '{}', '{}');
         UPDATE item_balances SET reserved = on_hand + 1",
    )
    .await
    .map(|_| panic!("oversell accepted"))
    .unwrap_or_else(|e| assert_eq!(sqlstate(&e), "23514", "{e}"));
    drop(tx);
    assert_eq!(db.figures("apple").await, (5, 0, 0));
}

#[tokio::test]
async fn migrations_are_repeatable_and_safe_to_race() {
    let db = TestDb::new().await;
    let again = db.store.migrate().await.unwrap();
    assert!(again.is_empty(), "a second run applies nothing");
    let (a, b) = tokio::join!(db.store.migrate(), db.store.migrate());
    assert!(a.unwrap().is_empty() && b.unwrap().is_empty());
    let versions: Vec<i32> = db
        .column("SELECT version FROM schema_migrations ORDER BY version")
        .await;
    let known: Vec<i32> = stockledger::store::migrate::MIGRATIONS
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(versions, known);
}

/// A transaction takes an earlier position and stays open while later ones
/// commit: the reader waits for it instead of skipping it, then reads it first.
#[tokio::test]
async fn the_safe_reader_never_skips_a_held_open_transaction() {
    let db = TestDb::new().await;
    let mut held = db.client().await;
    let tx = held.transaction().await.unwrap();
    let early = Event::StockReceived(StockReceived {
        sku: Sku::parse("sku", "slow").unwrap(),
        location: Location::parse_or_default("location", None).unwrap(),
        quantity: 1,
    });
    let meta = serde_json::to_value(EventMetadata {
        actor: "test".into(),
        ..Default::default()
    })
    .unwrap();
    let early_position = common::insert_event(&tx, "receipt:held", 1, &early, &meta).await;

    for i in 0..20 {
        db.receive(&format!("later-{i}"), "fast", 1).await;
    }
    let page = db.store.events(Cursor::START, 1000, None).await.unwrap();
    assert!(
        page.events.is_empty(),
        "nothing may be read past an open earlier transaction"
    );
    assert_eq!(page.next, Cursor::START);

    tx.commit().await.unwrap();
    let page = db.store.events(Cursor::START, 1000, None).await.unwrap();
    let positions: Vec<i64> = page.events.iter().map(|e| e.position).collect();
    assert_eq!(positions.len(), 21);
    assert_eq!(
        positions[0], early_position,
        "the held transaction comes first"
    );
    assert!(positions[1..].iter().all(|p| *p > early_position));
    // Reading on from the cursor finds nothing more, and nothing was skipped.
    let rest = db.store.events(page.next, 1000, None).await.unwrap();
    assert!(rest.events.is_empty());

    // Pages: a small limit walks the same sequence.
    let mut cursor = Cursor::START;
    let mut walked = Vec::new();
    loop {
        let p = db
            .store
            .events(
                cursor,
                4,
                Some(stockledger::domain::StreamKind::Receipt.prefix()),
            )
            .await
            .unwrap();
        if p.events.is_empty() {
            break;
        }
        walked.extend(p.events.iter().map(|e| e.position));
        cursor = p.next;
    }
    assert_eq!(walked, positions);
}

#[tokio::test]
async fn cursors_print_and_parse() {
    let c: Cursor = "12:34".parse().unwrap();
    assert_eq!(
        c,
        Cursor {
            tx_id: 12,
            position: 34
        }
    );
    assert_eq!(c.to_string(), "12:34");
    for bad in ["", "12", "a:b", "-1:2", "1:2:3"] {
        let err = bad.parse::<Cursor>().unwrap_err();
        assert_eq!(err.code().as_str(), "INVALID_ARGUMENT", "{bad}");
    }
}

/// 5,000 receipts in the log, analysed, and a connection on which the
/// planner may not sort: a plan that needs a sort shows as one (costed
/// prohibitively), so the plan says whether an index gives the order.
async fn log_of_5000_receipts_without_sorts() -> (TestDb, tokio_postgres::Client) {
    let db = TestDb::new().await;
    let mut batch = Vec::new();
    for i in 0..5_000 {
        batch.push((
            receive(&format!("in-{i}"), &format!("sku-{}", i % 50), 1),
            stockledger::domain::CommandContext::new("test"),
        ));
    }
    db.store.execute_batch(&batch).await.unwrap();
    let client = db.client().await;
    client
        .batch_execute("ANALYZE events; SET enable_sort = off")
        .await
        .unwrap();
    (db, client)
}

/// A page of the log can be read along the commit-order index: with sorts
/// disabled the planner still finds a plan without one. (The `ORDER BY` once
/// named the select list's `tx_id::text::bigint` by mistake, an order no
/// index gives, so every page sorted the whole rest of the log: a second
/// per relay batch on a million events.)
#[tokio::test]
async fn a_page_of_the_log_is_read_in_index_order_without_a_sort() {
    let (_db, client) = log_of_5000_receipts_without_sorts().await;
    for limit in [100_i64, 10_000] {
        let plan = explain(
            &client,
            &stockledger::store::read::events_page_sql(),
            &[&"0", &0_i64, &limit, &None::<String>, &"999999999999"],
        )
        .await;
        // 5,000 events span many partitions: each is read along its own
        // commit-order index, and the pages merged in order.
        assert!(plan.contains("_commit_order"), "{limit}: {plan}");
        assert!(plan.contains("Merge Append"), "{limit}: {plan}");
        // A sort node, not the merge's "Sort Key".
        assert!(!plan.contains("Sort  ("), "{limit}: {plan}");
    }
}

/// The expiry worker's look-up of due reservations is bounded by the index:
/// with many open reservations and none due, it reads none of them (its
/// bound was once `clock_timestamp()`, which the planner cannot use as an
/// index condition, so every pass walked the whole index).
#[tokio::test]
async fn the_due_lookup_is_an_index_range() {
    let db = TestDb::new().await;
    let client = db.client().await;
    client
        .batch_execute(
            "INSERT INTO reservation_expiry (reservation_id, order_id, expires_at)
             SELECT 'r' || g, 'o' || g, now() + interval '1 hour'
             FROM generate_series(1, 5000) AS g;
             ANALYZE reservation_expiry",
        )
        .await
        .unwrap();
    let sql = stockledger::read_model::reservation_expiry::DUE_SQL;
    let plan = explain(&client, sql, &[&500_i64]).await;
    assert!(
        plan.contains("Index Cond: (expires_at <="),
        "the bound is not an index condition: {plan}"
    );
}

/// The bound of a page filtered by stream (`SCAN_BOUND_SQL`) walks the
/// commit-order index and stops there: no sort of the rest of the log.
#[tokio::test]
async fn a_filtered_pages_bound_is_an_index_walk_without_a_sort() {
    let (_db, client) = log_of_5000_receipts_without_sorts().await;
    let plan = explain(
        &client,
        stockledger::store::read::SCAN_BOUND_SQL,
        &[&"0", &0_i64, &"999999999999", &1_999_i64],
    )
    .await;
    assert!(plan.contains("_commit_order"), "{plan}");
    assert!(!plan.contains("Sort  ("), "{plan}");
}
