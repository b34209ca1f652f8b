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
            },
        ),
        (
            second,
            Balance {
                on_hand: 7,
                reserved: 4,
                confirmed: 3,
            },
        ),
        (
            third,
            Balance {
                on_hand: 12,
                reserved: 0,
                confirmed: 3,
            },
        ),
    ];
    for ((time, position), want) in expect {
        assert_eq!(
            db.store.stock_as_of(&item, AsOf::Time(time)).await.unwrap(),
            want,
            "at {time}"
        );
        assert_eq!(
            db.store
                .stock_as_of(&item, AsOf::Position(position))
                .await
                .unwrap(),
            want,
            "at {position}"
        );
    }
    // Before anything happened, and the present agrees with the balances.
    assert_eq!(
        db.store
            .stock_as_of(&item, AsOf::Position(0))
            .await
            .unwrap(),
        Balance::default()
    );
    assert_eq!(db.store.balance(&item).await.unwrap().unwrap(), expect[2].1);
}
