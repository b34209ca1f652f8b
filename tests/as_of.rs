//! Stock as of a past moment, by time and by position, replayed from the log.

mod common;

use common::*;
use stockledger::domain::{Balance, Item, Location, Sku};
use stockledger::store::history::AsOf;

#[tokio::test]
async fn figures_at_three_moments_of_a_scripted_history() {
    let db = TestDb::new().await;
    let client = db.client().await;
    let item = Item {
        sku: Sku::parse("sku", "apple").unwrap(),
        location: Location::parse_or_default("l", None).unwrap(),
    };
    let moment = || async {
        let row = client
            .query_one(
                "SELECT clock_timestamp(), coalesce(max(position), 0) FROM events",
                &[],
            )
            .await
            .unwrap();
        (
            row.get::<_, chrono::DateTime<chrono::Utc>>(0),
            row.get::<_, i64>(1),
        )
    };

    db.receive("in-1", "apple", 10).await;
    db.receive("in-other", "pear", 99).await;
    db.run(reserve("r1", "o1", &[("apple", 3), ("pear", 1)], None))
        .await
        .unwrap();
    let first = moment().await;
    db.run(confirm("r1")).await.unwrap();
    db.run(reserve("r2", "o2", &[("apple", 4)], None))
        .await
        .unwrap();
    let second = moment().await;
    db.run(release("r2")).await.unwrap();
    db.receive("in-2", "apple", 5).await;
    let third = moment().await;

    let expect = [
        (
            first,
            Balance {
                on_hand: 10,
                reserved: 3,
                confirmed: 0,
                backordered: 0,
            },
        ),
        (
            second,
            Balance {
                on_hand: 7,
                reserved: 4,
                confirmed: 3,
                backordered: 0,
            },
        ),
        (
            third,
            Balance {
                on_hand: 12,
                reserved: 0,
                confirmed: 3,
                backordered: 0,
            },
        ),
    ];
    for ((time, position), want) in expect {
        assert_eq!(
            db.store
                .stock_as_of(&item, AsOf::Time(time))
                .await
                .unwrap()
                .figures,
            want,
            "at {time}"
        );
        assert_eq!(
            db.store
                .stock_as_of(&item, AsOf::Position(position))
                .await
                .unwrap()
                .figures,
            want,
            "at {position}"
        );
    }
    // Before anything happened, and the present agrees with the balances.
    assert_eq!(
        db.store
            .stock_as_of(&item, AsOf::Position(0))
            .await
            .unwrap()
            .figures,
        Balance::default()
    );
    assert_eq!(db.store.balance(&item).await.unwrap().unwrap(), expect[2].1);
}

/// An answer about the past never changes afterwards: a future time, or a
/// time after a transaction of this database that is still open began, is
/// clamped to just before the stable point, and the answer says so; a
/// position past every committed event is clamped too.
#[tokio::test]
async fn as_of_answers_are_capped_where_the_log_is_stable() {
    let db = TestDb::new().await;
    let item = Item {
        sku: Sku::parse("sku", "apple").unwrap(),
        location: Location::parse_or_default("location", None).unwrap(),
    };
    db.receive("in-1", "apple", 10).await;
    let future = chrono::Utc::now() + chrono::Duration::days(1);
    let f = db
        .store
        .stock_as_of(&item, AsOf::Time(future))
        .await
        .unwrap();
    assert!(f.clamped, "a future time is clamped");
    assert!(matches!(f.answered, AsOf::Time(t) if t < future));
    assert_eq!(f.figures.on_hand, 10);

    // A writer of this database opens a transaction and appends an event
    // (recorded now, committed later): a time after its start is clamped to
    // before it, so the answer cannot change when it commits.
    let mut held = db.client().await;
    let tx = held.transaction().await.unwrap();
    let open_at: chrono::DateTime<chrono::Utc> =
        tx.query_one("SELECT now()", &[]).await.unwrap().get(0);
    let position = raw_receipt(&tx, "held", "apple", 5).await;
    let asked = chrono::Utc::now() + chrono::Duration::milliseconds(10);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let f = db
        .store
        .stock_as_of(&item, AsOf::Time(asked))
        .await
        .unwrap();
    assert!(f.clamped);
    assert!(matches!(f.answered, AsOf::Time(t) if t < open_at));
    assert_eq!(
        f.figures.on_hand, 10,
        "the open transaction's event is not counted"
    );
    let p = db
        .store
        .stock_as_of(&item, AsOf::Position(position))
        .await
        .unwrap();
    assert!(
        p.clamped,
        "a position held by an open transaction is past the frontier"
    );
    assert_eq!(p.figures.on_hand, 10);
    tx.commit().await.unwrap();
    let after = db
        .store
        .stock_as_of(&item, AsOf::Time(asked))
        .await
        .unwrap();
    assert_eq!(
        after.figures.on_hand, 15,
        "once committed, the time is stable"
    );
}
