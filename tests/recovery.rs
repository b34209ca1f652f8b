//! Failure between steps: a connection that dies mid-transaction, and a
//! command re-run after its commit acknowledgement was lost.

mod common;

use std::time::Duration;

use common::*;
use stockledger::domain::CommandContext;

/// The store's connection is killed while its transaction waits for a lock.
/// The store retries on a fresh connection and the caller gets the true answer,
/// with exactly one event written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_backend_is_retried_and_answered_truthfully() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    let blocker = db.client().await;
    // Hold the stream's lock from another session, so the command waits on it.
    blocker
        .execute(
            "SELECT pg_advisory_lock(hashtextextended('reservation:r-kill', 0))",
            &[],
        )
        .await
        .unwrap();
    let store = db.store.clone();
    let pending = tokio::spawn(async move {
        store
            .execute(
                reserve("r-kill", "o-kill", &[("apple", 4)], None),
                CommandContext::new("test"),
            )
            .await
    });

    let admin = db.client().await;
    let find_waiter = "SELECT pid FROM pg_stat_activity
                       WHERE datname = current_database() AND wait_event = 'advisory'
                         AND pid <> pg_backend_pid()";
    let mut killed = 0;
    for _ in 0..500 {
        let rows = admin.query(find_waiter, &[]).await.unwrap();
        if let Some(row) = rows.first() {
            let pid: i32 = row.get(0);
            admin
                .execute("SELECT pg_terminate_backend($1)", &[&pid])
                .await
                .unwrap();
            killed += 1;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(killed, 1, "the waiting backend was found and killed");
    // Let the retry reach the lock again, then let it through.
    tokio::time::sleep(Duration::from_millis(100)).await;
    blocker
        .execute(
            "SELECT pg_advisory_unlock(hashtextextended('reservation:r-kill', 0))",
            &[],
        )
        .await
        .unwrap();

    let answer = pending.await.unwrap().expect("retried").expect("accepted");
    assert_eq!(state_of(&answer), "RESERVED");
    assert!(!answer.replayed());
    assert_eq!(db.count_stream(&res_stream("r-kill")).await, 1);
    assert_eq!(db.figures("apple").await, (10, 4, 0));
}

/// When COMMIT's acknowledgement is lost, the store runs the command again
/// with the same command id. That re-run must find the command's own event
/// and answer as the first run would have (not "replayed"), appending nothing.
#[tokio::test]
async fn a_rerun_with_the_same_command_id_gets_the_original_answer() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    let ctx = CommandContext::new("test");
    let cmd = reserve("r1", "o1", &[("apple", 2)], None);
    let first = db
        .store
        .execute(cmd.clone(), ctx.clone())
        .await
        .unwrap()
        .unwrap();
    let rerun = db
        .store
        .execute(cmd.clone(), ctx.clone())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first, rerun);
    assert!(!rerun.replayed());
    let other_caller = db.run(cmd).await.unwrap();
    assert!(other_caller.replayed());
    assert_eq!(db.count_stream(&res_stream("r1")).await, 1);

    let confirm_ctx = CommandContext::new("test");
    let c1 = db
        .store
        .execute(confirm("r1"), confirm_ctx.clone())
        .await
        .unwrap()
        .unwrap();
    let c2 = db
        .store
        .execute(confirm("r1"), confirm_ctx)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c1, c2);
    assert_eq!(db.figures("apple").await, (8, 0, 2));
}
