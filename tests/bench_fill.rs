//! The benchmark's log generator makes only histories the product could have
//! made: a small fill, projected, audits clean, and its expiries happened.

mod common;

use common::*;
use stockledger::bench::fill::{fill, FillConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_log_audits_clean() {
    let db = TestDb::new().await;
    let cfg = FillConfig {
        events: 3_000,
        items: 40,
        batch: 200,
        seed: 7,
        prefix: "t".into(),
    };
    let report = fill(&db.store, &cfg, |_| {}).await.unwrap();
    assert!(report.events >= 3_000);
    assert_eq!(
        report.events as i64,
        db.count_events().await,
        "every counted event is in the log"
    );
    db.project_all().await;
    let audit = db.assert_audit_clean().await;
    assert_eq!(audit.events, report.events);
    let client = db.client().await;
    let kinds: Vec<(String, i64)> = client
        .query(
            "SELECT type, count(*) FROM events GROUP BY type ORDER BY type",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for kind in [
        "ReservationConfirmed",
        "ReservationCreated",
        "ReservationExpired",
        "ReservationReleased",
        "StockReceived",
    ] {
        assert!(
            kinds.iter().any(|(k, n)| k == kind && *n > 0),
            "{kind} in {kinds:?}"
        );
    }
}
