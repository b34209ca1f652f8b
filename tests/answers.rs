//! Answers are built from the batch that decided them: each reservation
//! command's answer shows the reservation's events exactly as the log holds
//! them (positions, times, transaction, metadata), up to its own event and
//! no further, even when a later command of the same batch moved it on.

mod common;

use common::*;
use stockledger::domain::{CommandContext, RecordedEvent, ReservationId};
use stockledger::store::Answered;

async fn read_back(db: &TestDb, id: &str) -> Vec<RecordedEvent> {
    let id = ReservationId::parse("id", id).unwrap();
    db.store.reservation(&id).await.unwrap().unwrap().events
}

fn timeline_of(answer: &Answered) -> Vec<(u32, &'static str)> {
    answer
        .timeline
        .iter()
        .map(|e| (e.seq, e.event.type_name()))
        .collect()
}

#[tokio::test]
async fn each_answer_shows_its_reservation_as_its_own_command_left_it() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    let batch: Vec<_> = [
        reserve("r1", "o1", &[("apple", 2)], None),
        confirm("r1"),
        reserve("r2", "o2", &[("apple", 1)], None),
        reserve("r1", "o1", &[("apple", 2)], None),
        release("r3"),
        reserve("r4", "o4", &[("apple", 100)], None),
    ]
    .into_iter()
    .map(|c| (c, CommandContext::new("test")))
    .collect();
    let answers = db.store.execute_batch_answered(&batch).await.unwrap();

    let r1 = read_back(&db, "r1").await;
    let r2 = read_back(&db, "r2").await;
    let r3 = read_back(&db, "r3").await;
    // The reserve of r1 shows its creation only, though its confirmation
    // committed in the same transaction.
    assert_eq!(timeline_of(&answers[0]), [(1, "ReservationCreated")]);
    assert_eq!(answers[0].timeline, r1[..1]);
    assert_eq!(answers[1].timeline, r1);
    assert_eq!(answers[2].timeline, r2);
    // A replay shows the reservation as it stood when it was decided.
    assert!(answers[3].result.as_ref().unwrap().replayed());
    assert_eq!(answers[3].timeline, r1);
    // A tombstone is its own one-event timeline; a refusal has none.
    assert_eq!(answers[4].timeline, r3);
    assert!(answers[5].result.is_err());
    assert!(answers[5].timeline.is_empty());

    // In a later transaction, a replay shows what the log holds.
    let again = db
        .store
        .execute_answered(confirm("r1"), CommandContext::new("test"))
        .await
        .unwrap();
    assert!(again.result.unwrap().replayed());
    assert_eq!(again.timeline, r1);
}
