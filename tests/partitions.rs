//! The log and the chain, partitioned (schema/0021, docs/archive.md):
//! streams folded, sealed and audited across many partitions; an append
//! that finds no partition makes room and goes on; a step doubled
//! across partitions is named by the audit; the partitions are the owner's;
//! and a partition gone from the database is named by `verify`, while the
//! archive still proves and replays its events.

mod common;

use common::*;
use stockledger::seal::archive::{self, Archive};
use stockledger::seal::{self, Finding};

/// Partitions of 16 rows: a few dozen events span many.
const SMALL: i64 = 16;

/// No room ahead but the function's own half a partition: the store's
/// appends make the rest as they find none, as a server's do between the
/// sealer's passes. (Room made far ahead here would be hundreds of
/// partitions, each one more index for every probe to look in.)
const NO_ROOM_AHEAD: i64 = 0;

async fn small_partitions() -> TestDb {
    let db = TestDb::new().await;
    cut_log_anew(&mut db.client().await, SMALL, NO_ROOM_AHEAD).await;
    db
}

/// Seals everything, then `verify` against the digest and the audit are
/// both clean.
async fn sealed_verified_and_audited(db: &TestDb) {
    seal_all(db).await;
    let report = seal::verify::verify(db.store.pool(), Some(&digest(db).await))
        .await
        .unwrap();
    assert!(report.clean(), "{:?}", report.findings);
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// How many partitions hold rows of `parent`.
async fn partitions_holding_rows(db: &TestDb, parent: &str) -> i64 {
    db.client()
        .await
        .query_one(
            &format!("SELECT count(DISTINCT tableoid) FROM {parent}"),
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

/// A reservation whose stream starts in one partition and goes on in
/// others, among receipts: folded, answered, sealed, verified, projected
/// and audited as on one table.
#[tokio::test]
async fn streams_span_partitions_and_everything_reads_across_them() {
    let db = small_partitions().await;
    db.receive("in-0", "apple", 100).await;
    db.run(reserve("r1", "o1", &[("apple", 10)], None))
        .await
        .unwrap();
    write_mixed(&db, "a", 40).await;
    db.run(confirm_lines("r1", "c1", &[("apple", 4)]))
        .await
        .unwrap();
    write_mixed(&db, "b", 40).await;
    let done = db.run(confirm("r1")).await.unwrap();
    assert_eq!(state_of(&done), "CONFIRMED");
    // The stream's first and last events are in different partitions.
    let spread: i64 = db
        .client()
        .await
        .query_one(
            "SELECT count(DISTINCT tableoid) FROM events WHERE stream = $1",
            &[&res_stream("r1")],
        )
        .await
        .unwrap()
        .get(0);
    assert!(spread >= 2, "r1's events are in {spread} partition(s)");
    // A retry of the first step answers as it did, from the older partition.
    let again = db.run(confirm_lines("r1", "c1", &[("apple", 4)])).await;
    assert!(again.is_ok(), "{again:?}");
    assert!(partitions_holding_rows(&db, "events").await >= 5);
    sealed_verified_and_audited(&db).await;
    assert!(partitions_holding_rows(&db, "event_chain").await >= 5);
    assert_eq!(db.figures("apple").await.1, 0, "nothing is left reserved");
}

/// The partition for the next position is missing (the sealer has not
/// run, the positions jumped): the append fails inside the database, the
/// store makes room and tries again, and the command is answered. A batch
/// larger than a partition finds room for all of it.
#[tokio::test]
async fn an_append_that_finds_no_partition_makes_room_and_goes_on() {
    let db = small_partitions().await;
    db.receive("in-1", "apple", 5).await;
    let before = attached_partitions(&db, "events").await;
    // Positions jump past every partition made.
    db.client()
        .await
        .batch_execute(
            "SELECT setval('events_position',
                           (SELECT max(next) FROM log_partitions WHERE parent = 'events') + 100)",
        )
        .await
        .unwrap();
    db.receive("in-2", "apple", 5).await;
    assert!(attached_partitions(&db, "events").await > before);
    let batch: Vec<_> = (0..100)
        .map(|i| {
            (
                receive(&format!("bulk-{i}"), "pear", 1),
                stockledger::domain::CommandContext::new("test"),
            )
        })
        .collect();
    let answers = db.store.execute_batch(&batch).await.unwrap();
    assert_eq!(answers.len(), 100);
    assert_eq!(db.count_events().await, 102);
    sealed_verified_and_audited(&db).await;
}

/// A unique index holds within its partition only, and no probe looks in
/// the older ones (docs/archive.md, decision 2): steps and a reservation of
/// an order, copied into newer partitions behind the store's back, are
/// taken by the database, and the audit names each: a step of an open
/// reservation, of a closed one, of a one-event receipt, and an order
/// reserved by a second stream.
#[tokio::test]
async fn a_step_doubled_across_partitions_is_named_by_the_audit() {
    let db = small_partitions().await;
    db.receive("in-1", "apple", 50).await;
    for (id, order) in [("r1", "o1"), ("r2", "o2"), ("r3", "o3")] {
        db.run(reserve(id, order, &[("apple", 1)], None))
            .await
            .unwrap();
    }
    db.run(confirm("r3")).await.unwrap();
    write_mixed(&db, "later", 40).await;
    db.project_all().await;
    db.assert_audit_clean().await;
    let client = db.client().await;
    let receipt = "receipt:in-1".to_owned();
    for (from, seq, to, tag) in [
        (res_stream("r1"), 1, res_stream("r1"), "a"),
        (res_stream("r3"), 2, res_stream("r3"), "b"),
        (receipt.clone(), 1, receipt.clone(), "c"),
        (res_stream("r2"), 1, res_stream("r2-again"), "d"),
    ] {
        let (first, landed): (String, String) = {
            let r = client
                .query_one(
                    "WITH copy AS (
                         INSERT INTO events (stream, seq, type, data, metadata, order_id, skus,
                                             locations, quantities, version)
                         SELECT $3, seq, type, data, metadata, order_id, skus, locations,
                                quantities, version
                         FROM events WHERE stream = $1 AND seq = $2
                         RETURNING tableoid::regclass::text AS landed)
                     SELECT (SELECT tableoid::regclass::text FROM events
                             WHERE stream = $1 AND seq = $2), landed FROM copy",
                    &[&from, &seq, &to],
                )
                .await
                .unwrap();
            (r.get(0), r.get(1))
        };
        assert_ne!(landed, first, "the copy of {from} is in a newer partition");
        // The next copy lands beyond this one's partition too.
        write_mixed(&db, tag, 40).await;
    }
    let report = stockledger::audit::audit(db.store.pool()).await.unwrap();
    let found: Vec<String> = report.differences.iter().map(|d| d.to_string()).collect();
    for (stream, seq) in [(res_stream("r1"), 1), (res_stream("r3"), 2), (receipt, 1)] {
        let doubled = format!("events {stream} seq {seq} events: expected 1, found 2");
        assert!(found.contains(&doubled), "{doubled} is named: {found:#?}");
    }
    let second = format!(
        "events order o2 reservations: expected 1, found {} and {}",
        res_stream("r2"),
        res_stream("r2-again")
    );
    assert!(
        found.contains(&second),
        "the second reservation is named: {found:#?}"
    );
}

/// The service appends through the parent only: it may not write to a
/// partition, detach one or make one itself; even the owner cannot
/// truncate one.
#[tokio::test]
async fn partitions_are_the_owners_and_append_only() {
    let db = small_partitions().await;
    db.receive("in-1", "apple", 5).await;
    let service = db.store.pool().get().await.unwrap();
    let name: String = service
        .query_one(
            "SELECT name FROM log_partitions WHERE parent = 'events' ORDER BY first LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    for sql in [
        format!("SELECT * FROM {name}"),
        format!(
            "INSERT INTO {name} (position, stream, seq, type, data, metadata, skus, locations,
                                 quantities)
             VALUES (2, 'receipt:x', 1, 'StockReceived', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}')"
        ),
        format!("DELETE FROM {name}"),
        format!("TRUNCATE {name}"),
        "TRUNCATE events".to_owned(),
        format!("ALTER TABLE events DETACH PARTITION {name}"),
        "SELECT log_add_partition('events', 100000, 100016)".to_owned(),
    ] {
        let err = service.batch_execute(&sql).await.unwrap_err();
        let code = err.code().map(|c| c.code().to_owned());
        assert!(matches!(code.as_deref(), Some("42501")), "{sql}: {err:?}");
    }
    let owner = db.client().await;
    let err = owner
        .batch_execute(&format!("TRUNCATE {name}"))
        .await
        .unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("SL001"));
    assert_eq!(db.count_events().await, 1);
}

/// A partition of sealed events dropped from the database: plain `verify`
/// names every event it held as missing, and the plain audit's replay
/// differs; the archive, written before, still holds them: `verify
/// --archive` and `audit --from-archive` are clean.
#[tokio::test]
async fn a_missing_partition_is_named_and_the_archive_still_holds_its_events() {
    let db = small_partitions().await;
    write_mixed(&db, "a", 30).await;
    seal_all(&db).await;
    write_mixed(&db, "b", 10).await;
    seal_all(&db).await;
    db.project_all().await;
    let dir = std::env::temp_dir().join(format!("{}-archive", db.name));
    let _ = std::fs::remove_dir_all(&dir);
    archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    let client = db.client().await;
    let (name, held): (String, i64) = {
        let r = client
            .query_one(
                "SELECT p.name, (SELECT count(*) FROM events e WHERE e.position >= p.first
                                   AND e.position < p.next)
                 FROM log_partitions p WHERE parent = 'events' ORDER BY first LIMIT 1",
                &[],
            )
            .await
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert!(held > 0);
    client
        .batch_execute(&format!(
            "ALTER TABLE events DETACH PARTITION {name}; DROP TABLE {name}"
        ))
        .await
        .unwrap();
    let d = digest(&db).await;
    let plain = seal::verify::verify(db.store.pool(), Some(&d))
        .await
        .unwrap();
    let missing = plain
        .findings
        .iter()
        .filter(|f| matches!(f, Finding::EventMissing { .. }))
        .count();
    assert_eq!(missing as i64, held, "{:?}", plain.findings);
    let files = Archive::open(&dir).unwrap();
    let across = seal::verify::verify_across(db.store.pool(), Some(&d), &files)
        .await
        .unwrap();
    assert!(across.clean(), "{:?}", across.findings);
    let replayed = stockledger::audit::audit(db.store.pool()).await.unwrap();
    assert!(
        !replayed.clean(),
        "the plain audit misses the dropped events"
    );
    let from_files = stockledger::audit::audit_from_archive(db.store.pool(), &files)
        .await
        .unwrap();
    assert!(from_files.clean(), "{from_files:?}");
}

/// The files of `table`'s indexes, by index name: a rebuilt index has a
/// new one.
async fn index_files(db: &TestDb, table: &str) -> Vec<(String, u32)> {
    db.client()
        .await
        .query(
            "SELECT c.relname::text, c.relfilenode::int8 FROM pg_index i
             JOIN pg_class c ON c.oid = i.indexrelid
             WHERE i.indrelid = $1::text::regclass ORDER BY 1",
            &[&table],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get::<_, i64>(1) as u32))
        .collect()
}

/// `pack` rebuilds the indexes of the full, sealed partitions of the log,
/// only theirs, once; the service may not; a half-built index an earlier
/// run left is dropped; and the ledger goes on as before.
#[tokio::test]
async fn pack_rebuilds_full_sealed_partitions_once_and_only_as_the_owner() {
    let db = small_partitions().await;
    write_mixed(&db, "a", 30).await;
    seal_all(&db).await;
    write_mixed(&db, "b", 10).await;
    let client = db.client().await;
    let due: Vec<String> = client
        .query(
            "SELECT name FROM log_partitions WHERE parent = 'events'
               AND next - 1 <= (SELECT max(last_position) FROM seals) ORDER BY first",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let open: String = client
        .query_one(
            "SELECT tableoid::regclass::text FROM events ORDER BY position DESC LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(due.len() >= 3 && !due.contains(&open), "{due:?}, {open}");
    // An interrupted run's leftover: a concurrent build that failed.
    let leftover = client
        .batch_execute(&format!(
            "CREATE UNIQUE INDEX CONCURRENTLY leftover ON {} (type)",
            due[0]
        ))
        .await;
    assert!(leftover.is_err(), "types repeat, so the build fails");
    let (before_due, before_open) = (
        index_files(&db, &due[1]).await,
        index_files(&db, &open).await,
    );

    let refused = stockledger::store::pack::pack_sealed(db.store.pool()).await;
    assert!(
        refused.is_err(),
        "the service may not rebuild a partition's indexes"
    );
    let packed = stockledger::store::pack::pack_sealed(db.owner_store().pool())
        .await
        .unwrap();
    let names: Vec<&str> = packed.iter().map(|p| p.partition.as_str()).collect();
    assert_eq!(names, due.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(packed[0].leftovers_dropped, 1);
    assert!(index_files(&db, &due[0])
        .await
        .iter()
        .all(|(n, _)| n != "leftover"));
    let after_due = index_files(&db, &due[1]).await;
    assert_eq!(after_due.len(), before_due.len());
    for ((name, old), (_, new)) in before_due.iter().zip(&after_due) {
        assert_ne!(old, new, "{name} was rebuilt");
    }
    assert_eq!(
        index_files(&db, &open).await,
        before_open,
        "the open partition is left"
    );
    let marked: i64 = client
        .query_one(
            "SELECT count(*) FROM log_partitions WHERE packed_at IS NOT NULL",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(marked, due.len() as i64);
    let again = stockledger::store::pack::pack_sealed(db.owner_store().pool())
        .await
        .unwrap();
    assert!(again.is_empty(), "packed once: {again:?}");

    write_mixed(&db, "c", 10).await;
    sealed_verified_and_audited(&db).await;
}
