//! The `event_types` table (schema 14): the SQL folds learn what each event
//! type does from it, so it must always hold this release's definitions,
//! keep a newer release's rows, and never let a fold skip an event silently.

mod common;

use std::time::Duration;

use common::*;
use stockledger::projection::worker::catch_up_fully;
use stockledger::store::StoreError;

/// An event whose type has no row fails the fold's batch, so its
/// checkpoint does not move past it; migrating (as the owner) puts the row
/// back and the fold then takes the event as if nothing had happened.
#[tokio::test]
async fn an_event_type_without_a_row_stops_the_fold_instead_of_being_skipped() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 5).await;
    db.client()
        .await
        .batch_execute("DELETE FROM event_types WHERE name = 'StockReceived'")
        .await
        .unwrap();
    db.receive("in-2", "apple", 7).await;
    let folded = catch_up_fully(db.store.pool(), Duration::from_secs(5)).await;
    let why = format!("{folded:?}");
    assert!(folded.is_err(), "the fold went on without the row: {why}");
    assert!(why.contains("StockReceived"), "{why}");
    db.owner_store().migrate().await.unwrap();
    db.project_all().await;
    let on_hand: Vec<i64> = db
        .column("SELECT on_hand FROM stock_levels WHERE sku = 'apple'")
        .await;
    assert_eq!(on_hand, vec![12]);
    db.assert_audit_clean().await;
}

/// A newer release's event type (a row this binary does not know) survives
/// this binary's migration; a row of its own that went missing comes back.
#[tokio::test]
async fn migrating_keeps_a_newer_releases_rows_and_restores_its_own() {
    let db = TestDb::new().await;
    db.client()
        .await
        .batch_execute(
            "INSERT INTO event_types VALUES ('StockFromTheFuture', 1, 0, 0, false, NULL, false);
             DELETE FROM event_types WHERE name = 'ReservationExpired'",
        )
        .await
        .unwrap();
    db.owner_store().migrate().await.unwrap();
    let names: Vec<String> = db
        .column(
            "SELECT name FROM event_types
             WHERE name IN ('StockFromTheFuture', 'ReservationExpired') ORDER BY name",
        )
        .await;
    assert_eq!(names, ["ReservationExpired", "StockFromTheFuture"]);
}

/// A login that may not write the table (the service) and finds it behind
/// this release is told what to do, instead of failing on a permission.
#[tokio::test]
async fn the_service_is_told_to_migrate_as_the_owner() {
    let db = TestDb::new().await;
    db.client()
        .await
        .batch_execute("DELETE FROM event_types WHERE name = 'StockCounted'")
        .await
        .unwrap();
    match db.store.migrate().await {
        Err(StoreError::Migration(why)) => {
            assert!(
                why.message().contains("as a member of the owner role"),
                "{why}"
            )
        }
        other => panic!("expected a migration error, got {other:?}"),
    }
    db.owner_store().migrate().await.unwrap();
    db.store.migrate().await.unwrap();
}
