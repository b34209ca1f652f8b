//! The benchmark's log generator makes only histories the product could have
//! made: a small fill, projected, audits clean, and its expiries happened.
//!
//! It runs on a fresh database of its own, on the server `DATABASE_URL`
//! names (else the private cluster the product starts), dropped afterwards
//! even when the test fails.

use std::time::Duration;

use stockledger::db;
use stockledger::store::{pool, Store};
use stockledger_bench::fill::{fill, FillConfig};
use tokio_postgres::NoTls;

/// How long the projections may take to catch up with the small fill.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(30);

/// A fresh, migrated database, dropped when this goes out of scope.
struct ScratchDb {
    store: Store,
    config: tokio_postgres::Config,
    /// The server's own database, to drop this one from.
    admin: tokio_postgres::Config,
    name: String,
}

impl ScratchDb {
    async fn new() -> ScratchDb {
        let url = std::env::var("DATABASE_URL").ok();
        let name = format!(
            "slbench_{}_{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple().to_string().get(..8).unwrap()
        );
        let admin = db::server(url.as_deref())
            .await
            .expect("a PostgreSQL server (DATABASE_URL or the private cluster)")
            .config;
        db::ensure_database(&admin, &name)
            .await
            .expect("create the test database");
        let mut config = admin.clone();
        config.dbname(&name);
        let store = Store::new(pool::build(config.clone(), 8).expect("pool"));
        store.migrate().await.expect("migrate");
        ScratchDb {
            store,
            config,
            admin,
            name,
        }
    }

    async fn client(&self) -> tokio_postgres::Client {
        let (client, conn) = self.config.connect(NoTls).await.expect("connect");
        tokio::spawn(conn);
        client
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        // Drop cannot await: the clean-up gets a thread and a runtime of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let _ = db::drop_database(&admin, &name).await;
            });
        })
        .join();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_log_audits_clean() {
    let db = ScratchDb::new().await;
    let cfg = FillConfig {
        events: 3_000,
        items: 40,
        batch: 200,
        seed: 7,
        prefix: "t".into(),
    };
    let report = fill(&db.store, &cfg, |_| {}).await.unwrap();
    assert!(report.events >= 3_000);
    let client = db.client().await;
    let logged: i64 = client
        .query_one("SELECT count(*) FROM events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        report.events as i64, logged,
        "every counted event is in the log"
    );
    let current = stockledger::projection::worker::catch_up_fully(db.store.pool(), CATCH_UP_LIMIT)
        .await
        .unwrap();
    assert!(current, "projections did not catch up");
    let audit = stockledger::audit::audit(db.store.pool()).await.unwrap();
    assert!(audit.clean(), "audit differences: {:#?}", audit.differences);
    assert_eq!(audit.events, report.events);
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
    // Every event type the generator makes (it makes no adjustments).
    for kind in [
        "ReservationConfirmed",
        "ReservationCreated",
        "ReservationExpired",
        "ReservationReleased",
        "ReservationLinesConfirmed",
        "ReservationLinesReleased",
        "ReservationExtended",
        "StockReceived",
        "StockTransferred",
        "StockCounted",
        "OrderLimitSet",
        "ReorderPointSet",
        "StockLow",
        "StockRecovered",
        "ReceiptExpected",
        "ExpectedReceiptDelivered",
        "ExpectedReceiptCancelled",
        "BackorderPlaced",
        "BackorderFilled",
        "BackorderDropped",
    ] {
        assert!(
            kinds.iter().any(|(k, n)| k == kind && *n > 0),
            "{kind} in {kinds:?}"
        );
    }
    archived_whole_it_verifies_and_audits_from_the_files(&db, report.events).await;
}

/// The generated log, every event type of it, sealed and archived whole:
/// read back from the files it verifies against its digest and audits as
/// the database does, so every type survives the trip through its served form.
async fn archived_whole_it_verifies_and_audits_from_the_files(db: &ScratchDb, events: u64) {
    use stockledger::seal::{self, archive::Archive};
    seal::sealer::catch_up(db.store.pool()).await.unwrap();
    let digest = db.store.digest().await.unwrap().expect("a sealed log");
    let dir = std::env::temp_dir().join(format!("{}-archive", db.name));
    let _ = std::fs::remove_dir_all(&dir);
    let written = seal::archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    assert_eq!(written.iter().map(|m| m.events).sum::<u64>(), events);
    let archive = Archive::open(&dir).unwrap().whole().unwrap();
    let report = seal::verify::verify_across(db.store.pool(), Some(&digest), &archive)
        .await
        .unwrap();
    assert!(report.clean(), "{:?}", report.findings);
    let audit = stockledger::audit::audit_from_archive(db.store.pool(), &archive)
        .await
        .unwrap();
    assert!(audit.clean(), "{:#?}", audit.differences);
    assert_eq!(audit.events, events);
    let _ = std::fs::remove_dir_all(&dir);
}
