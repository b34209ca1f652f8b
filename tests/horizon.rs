//! The safe horizon is per database: a transaction open in another database
//! of the same server holds nothing back here, while an open writer of this
//! database still holds readers and projections back (the gap guarantee).

mod common;

use common::*;
use stockledger::store::Cursor;

async fn open_writer(db: &TestDb) -> (tokio_postgres::Client, i64) {
    let client = db.client().await;
    client.batch_execute("BEGIN").await.unwrap();
    // Taking a transaction id is what makes a transaction a writer.
    let xid: i64 = client
        .query_one("SELECT pg_current_xact_id()::text::bigint", &[])
        .await
        .unwrap()
        .get(0);
    (client, xid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_open_in_another_database_stalls_nothing_here() {
    let here = TestDb::new().await;
    let elsewhere = TestDb::new().await;
    let (other, _) = open_writer(&elsewhere).await;
    here.receive("in-1", "apple", 5).await;
    let page = here.store.events(Cursor::START, 100, None).await.unwrap();
    assert_eq!(page.events.len(), 1, "the event is readable at once");
    let applied = stockledger::projection::worker::catch_up(here.store.pool())
        .await
        .unwrap();
    assert!(applied >= 1, "projections apply it at once");
    other.batch_execute("ROLLBACK").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_writer_of_this_database_holds_readers_back() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 5).await;
    let (writer, _) = open_writer(&db).await;
    db.receive("in-2", "apple", 5).await;
    let page = db.store.events(Cursor::START, 100, None).await.unwrap();
    assert_eq!(page.events.len(), 1, "nothing at or past the open writer");
    stockledger::projection::worker::catch_up(db.store.pool())
        .await
        .unwrap();
    writer.batch_execute("COMMIT").await.unwrap();
    let page = db.store.events(Cursor::START, 100, None).await.unwrap();
    assert_eq!(page.events.len(), 2, "everything once it ends");
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// The horizon is never above an open writer of this database, and moves
/// past a writer as soon as it ends. (Running ids may lie above the
/// snapshot's `xmax`, one past the latest *completed* id; their 64-bit value
/// must still come out right, or the horizon would stall.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_horizon_follows_the_oldest_open_writer() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 5).await;
    let (a, xa) = open_writer(&db).await;
    let (b, xb) = open_writer(&db).await;
    let client = db.store.pool().get().await.unwrap();
    let horizon = || async {
        stockledger::store::horizon::safe_horizon(&client)
            .await
            .unwrap()
    };
    let h = horizon().await;
    assert!(h <= xa, "not past the oldest open writer: {h} vs {xa}");
    a.batch_execute("COMMIT").await.unwrap();
    let h = horizon().await;
    assert!(
        h > xa && h <= xb,
        "past the ended writer, not past the open one: {xa} < {h} <= {xb}"
    );
    b.batch_execute("COMMIT").await.unwrap();
    assert!(horizon().await > xb);
}
