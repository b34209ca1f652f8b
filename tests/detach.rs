//! Archived partitions leaving the database (`stockledger archive --detach`,
//! docs/archive.md decisions 3, 4 and 7): commands on streams whose events
//! left are refused or still folded whole, readers that would answer from
//! part of the log refuse, the files and what stays verify and audit as one
//! ledger, and nothing leaves that anything still needs.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use stockledger::domain::RejectionCode;
use stockledger::projection::rebuild::{self, RebuildError, RebuildReport};
use stockledger::projection::snapshot::Snapshots;
use stockledger::seal::archive::{self, detach::DetachReport, Archive};
use stockledger::seal::{self, Finding};
use stockledger::store::{Cursor, StoreError};

/// Partitions of 16 rows: a few dozen events span many.
const SMALL: i64 = 16;

async fn small_partitions() -> TestDb {
    let db = TestDb::new().await;
    cut_log_anew(&mut db.client().await, SMALL, 0).await;
    db
}

fn archive_dir(db: &TestDb) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{}-archive", db.name));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Seals and projects everything, archives it into `dir`, and detaches
/// what the archive holds, as the owner.
async fn archive_and_detach(db: &TestDb, dir: &Path) -> DetachReport {
    seal_all(db).await;
    db.project_all().await;
    archive::write::archive(db.store.pool(), dir, None)
        .await
        .unwrap();
    let files = Archive::open(dir).unwrap().whole().unwrap();
    archive::detach::detach(db.owner_store().pool(), &files, &Snapshots)
        .await
        .unwrap()
}

/// Asserts that a read was refused because what it asks for left the
/// database; returns the refusal.
fn refused(r: Result<impl std::fmt::Debug, StoreError>) -> String {
    match r {
        Err(e @ StoreError::Archived { .. }) => e.to_string(),
        other => panic!("expected HISTORY_ARCHIVED, got {other:?}"),
    }
}

/// The files and what stays in the database verify and audit as one
/// ledger; the plain checks refuse, naming the archive.
async fn whole_across(db: &TestDb, dir: &Path) {
    seal_all(db).await;
    db.project_all().await;
    let files = Archive::open(dir).unwrap().whole().unwrap();
    let d = digest(db).await;
    let across = seal::verify::verify_across(db.store.pool(), Some(&d), &files)
        .await
        .unwrap();
    assert!(across.clean(), "{:?}", across.findings);
    let audited = stockledger::audit::audit_from_archive(db.store.pool(), &files)
        .await
        .unwrap();
    assert!(audited.clean(), "{:#?}", audited.differences);
    refused(seal::verify::verify(db.store.pool(), Some(&d)).await);
    refused(stockledger::audit::audit(db.store.pool()).await);
}

#[tokio::test]
async fn archived_streams_are_refused_open_ones_carried_and_everything_verifies_across() {
    let db = small_partitions().await;
    db.receive("in-0", "apple", 100).await;
    // Open across the cut: a reservation partly confirmed, and one untouched.
    db.run(reserve("r-span", "o-span", &[("apple", 10)], Some(3600)))
        .await
        .unwrap();
    db.run(reserve("r-open", "o-open", &[("apple", 5)], Some(3600)))
        .await
        .unwrap();
    // Expected receipts: one open for months, one cancelled.
    db.run(expect("e-open", "apple", 20, "2031-01-01"))
        .await
        .unwrap();
    db.run(expect("e-gone", "apple", 20, "2031-01-01"))
        .await
        .unwrap();
    db.run(cancel_expected("e-gone")).await.unwrap();
    write_mixed(&db, "a", 30).await;
    db.run(confirm_lines("r-span", "c1", &[("apple", 4)]))
        .await
        .unwrap();
    let dir = archive_dir(&db);
    let (events_before, balance_before) = (db.count_events().await, db.figures("a-sku-0").await);
    let left = position_of(&db, &receipt_stream("a-in-0"), 1).await;

    let report = archive_and_detach(&db, &dir).await;
    let gone = report
        .detached
        .iter()
        .filter(|d| d.parent == "events")
        .count();
    assert!(gone >= 2, "{report:?}");
    for d in &report.detached {
        let table: Option<String> = db
            .client()
            .await
            .query_one("SELECT to_regclass($1)::text", &[&d.partition])
            .await
            .unwrap()
            .get(0);
        assert_eq!(table, None, "{} is dropped", d.partition);
    }
    assert!(db.count_events().await < events_before);

    // A retried receipt whose stream left is refused, not received again.
    let again = db.run(receive("a-in-0", "a-sku-0", 3)).await.unwrap_err();
    assert_eq!(again.code(), RejectionCode::Archived, "{again}");
    assert_eq!(db.figures("a-sku-0").await, balance_before);
    // A settled reservation that left takes no step: no tombstone.
    let release = db.run(release("a-r-3")).await.unwrap_err();
    assert_eq!(release.code(), RejectionCode::Archived);
    // Its order stays reserved.
    let other = db
        .run(reserve("a-r-new", "a-o-0", &[("a-sku-0", 1)], None))
        .await
        .unwrap_err();
    assert_eq!(other.code(), RejectionCode::OrderAlreadyReserved, "{other}");
    // Open streams were carried: retried, answered and settled as ever.
    let carried: Vec<String> = db
        .column("SELECT DISTINCT stream FROM carried_events ORDER BY 1")
        .await;
    for open in [
        res_stream("r-open"),
        res_stream("r-span"),
        "expected:e-open".into(),
    ] {
        assert!(carried.contains(&open), "{open} is carried: {carried:?}");
    }
    let changed = db
        .run(change_expected("e-open", "ch-1", 30, "2031-02-01"))
        .await;
    assert!(changed.is_ok(), "{changed:?}");
    let cancelled = db.run(cancel_expected("e-gone")).await.unwrap_err();
    assert_eq!(cancelled.code(), RejectionCode::Archived);
    let e_gone = stockledger::domain::ExpectedId::parse("e", "e-gone").unwrap();
    refused(db.store.expected_receipt(&e_gone).await);
    let retried = db
        .run(reserve("r-open", "o-open", &[("apple", 5)], Some(3600)))
        .await
        .unwrap();
    assert!(retried.replayed(), "{retried:?}");
    let settled = db.run(confirm("r-span")).await.unwrap();
    assert_eq!(state_of(&settled), "CONFIRMED");
    let open_id = stockledger::domain::ReservationId::parse("r", "r-open").unwrap();
    let shown = db.store.reservation(&open_id).await.unwrap().unwrap();
    assert_eq!(shown.events.len(), 1);
    let gone_id = stockledger::domain::ReservationId::parse("r", "a-r-3").unwrap();
    refused(db.store.reservation(&gone_id).await);

    // Readers that would answer from part of the log refuse.
    refused(db.store.events(Cursor::START, 10, None).await);
    let sku = stockledger::domain::Item {
        sku: stockledger::domain::Sku::parse("sku", "apple").unwrap(),
        location: stockledger::domain::Location::parse_or_default("location", None).unwrap(),
    };
    refused(
        db.store
            .stock_as_of(&sku, stockledger::domain::AsOf::Position(3))
            .await,
    );
    refused(db.store.item_history(&sku).await);
    let floor: i64 = db
        .client()
        .await
        .query_one("SELECT floor FROM log_cut", &[])
        .await
        .unwrap()
        .get(0);
    refused(
        seal::proof::prove(db.store.pool(), 1, None)
            .await
            .map_err(|e| match e {
                seal::proof::ProveError::Store(s) => s,
                other => panic!("{other}"),
            }),
    );
    let files = Archive::open(&dir).unwrap().whole().unwrap();
    assert!(left < floor);
    let proof = archive::prove::prove(db.store.pool(), &files, left, None)
        .await
        .unwrap()
        .expect("the archive proves an event that left");
    assert_eq!(proof.event["position"], left);
    // An event still here whose block the cut runs through: its block's
    // leaves are partly in the archive, so the plain proof sends there.
    let kept: i64 = db
        .client()
        .await
        .query_one("SELECT min(position) FROM events", &[])
        .await
        .unwrap()
        .get(0);
    refused(
        seal::proof::prove(db.store.pool(), kept, None)
            .await
            .map_err(|e| match e {
                seal::proof::ProveError::Store(s) => s,
                other => panic!("{other}"),
            }),
    );
    let proof = archive::prove::prove(db.store.pool(), &files, kept, None)
        .await
        .unwrap()
        .expect("the archive and the database prove it together");
    assert_eq!(proof.event["position"], kept);
    let rebuild = stockledger::projection::rebuild::rebuild(
        db.owner_store().pool(),
        &stockledger::read_model::STOCK_LEVELS,
        stockledger::limits::REBUILD_BATCH_EVENTS,
        &stockledger::audit::ReplayVerifier,
        |_| {},
    )
    .await;
    assert!(
        matches!(
            rebuild,
            Err(stockledger::projection::rebuild::RebuildError::Store(
                StoreError::Archived { .. }
            ))
        ),
        "{rebuild:?}"
    );
    whole_across(&db, &dir).await;

    // The carried stream that settled since leaves for the directory with
    // the next detach; its carried rows go.
    write_mixed(&db, "b", 30).await;
    let next = archive_and_detach(&db, &dir).await;
    assert!(!next.detached.is_empty(), "{next:?}");
    let chain = report.detached.iter().chain(&next.detached);
    assert!(
        chain.filter(|d| d.parent == "event_chain").count() >= 1,
        "the chain's partitions leave too: {report:?} {next:?}"
    );
    let carried: i64 = db
        .client()
        .await
        .query_one(
            "SELECT count(*) FROM carried_events WHERE stream = $1",
            &[&res_stream("r-span")],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(carried, 0);
    let span = db.run(confirm("r-span")).await.unwrap_err();
    assert_eq!(span.code(), RejectionCode::Archived);
    let open = db.run(confirm("r-open")).await.unwrap();
    assert_eq!(state_of(&open), "CONFIRMED");
    whole_across(&db, &dir).await;

    // The operator's retention: a forgotten stream's id may be used again.
    let forgotten =
        stockledger::store::detach::forget_archived_below(db.owner_store().pool(), i64::MAX)
            .await
            .unwrap();
    assert!(forgotten > 0);
    db.run(receive("a-in-0", "a-sku-0", 3)).await.unwrap();
}

#[tokio::test]
async fn nothing_leaves_that_is_not_archived_applied_and_unaltered() {
    let db = small_partitions().await;
    write_mixed(&db, "a", 30).await;
    seal_all(&db).await;
    let dir = archive_dir(&db);
    archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    let files = Archive::open(&dir).unwrap().whole().unwrap();
    let before = attached_partitions(&db, "events").await;

    // The read models have not applied the events yet.
    let behind = archive::detach::detach(db.owner_store().pool(), &files, &Snapshots)
        .await
        .unwrap();
    assert!(
        behind.detached.iter().all(|d| d.parent != "events"),
        "{behind:?}"
    );
    assert!(
        behind.kept.iter().any(|k| k.contains("read model")),
        "{behind:?}"
    );
    db.project_all().await;

    // The service may not.
    let service = archive::detach::detach(db.store.pool(), &files, &Snapshots).await;
    let why = format!("{:?}", service.unwrap_err());
    assert!(why.contains("permission denied"), "{why}");
    assert_eq!(attached_partitions(&db, "events").await, before);

    // A segment changed since it was written: nothing of what it holds leaves.
    let segment = &files.segments[0];
    let mut bytes = std::fs::read(&segment.rows_path).unwrap();
    let last = bytes.len() - 9;
    bytes[last] ^= 0x01;
    std::fs::write(&segment.rows_path, &bytes).unwrap();
    let altered = archive::detach::detach(db.owner_store().pool(), &files, &Snapshots).await;
    assert!(altered.is_err(), "{altered:?}");
    assert_eq!(attached_partitions(&db, "events").await, before);
    let cut: i64 = db
        .client()
        .await
        .query_one("SELECT count(*) FROM log_cut", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(cut, 0, "no cut without a detach");

    // Written again, the archive lets the archived partitions go; what was
    // written after it stays.
    std::fs::remove_dir_all(&dir).unwrap();
    write_mixed(&db, "b", 3).await;
    let report = archive_and_detach(&db, &dir).await;
    assert!(!report.detached.is_empty(), "{report:?}");
    write_mixed(&db, "c", 10).await;
    let files = Archive::open(&dir).unwrap().whole().unwrap();
    let unarchived = archive::detach::detach(db.owner_store().pool(), &files, &Snapshots)
        .await
        .unwrap();
    assert!(
        unarchived.kept.iter().any(|k| k.contains("not archived")),
        "{unarchived:?}"
    );
    whole_across(&db, &dir).await;
    let findings = seal::verify::verify_across(db.store.pool(), None, &files)
        .await
        .unwrap()
        .findings;
    assert!(
        !findings
            .iter()
            .any(|f| matches!(f, Finding::EventMissing { .. })),
        "{findings:?}"
    );
}

/// The command line, as an operator runs it: `archive --detach`, then the
/// refusals name the archive.
#[tokio::test]
async fn archive_detach_from_the_command_line() {
    let db = small_partitions().await;
    write_mixed(&db, "a", 20).await;
    seal_all(&db).await;
    db.project_all().await;
    let dir = archive_dir(&db);
    let dir_arg = dir.to_str().unwrap();
    let (code, out) = cli_json(&db.url(), &["archive", "--dir", dir_arg, "--detach"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        !out["detach"]["detached"].as_array().unwrap().is_empty(),
        "{out}"
    );
    let (code, out) = cli_json(&db.url(), &["events"]);
    assert_ne!(code, Some(0), "{out}");
    assert_eq!(out["code"], "HISTORY_ARCHIVED", "{out}");
    let (code, out) = cli_json(&db.url(), &["audit", "--from-archive", dir_arg]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = cli_json(&db.url(), &["projections", "rebuild", "--all"]);
    assert_ne!(code, Some(0), "{out}");
    assert_eq!(out["code"], "HISTORY_ARCHIVED", "{out}");
    let rebuild = ["projections", "rebuild", "--all", "--archive", dir_arg];
    let (code, out) = cli_json(&db.url(), &rebuild);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        out["rebuilt"].as_array().unwrap().len(),
        stockledger::read_model::ALL.len(),
        "{out}"
    );
}

/// Rebuilds every read model with `verifier`.
async fn rebuild_all(
    db: &TestDb,
    verifier: &dyn stockledger::projection::rebuild::VerifyCopies,
) -> Result<Vec<RebuildReport>, RebuildError> {
    rebuild::rebuild_many(
        db.owner_store().pool(),
        stockledger::read_model::ALL,
        stockledger::limits::REBUILD_BATCH_EVENTS,
        verifier,
        |_| {},
    )
    .await
}

/// Decision 5: every read model's snapshot is brought to the cut before
/// events leave; a rebuild after the cut starts from it, replays what
/// stayed, and is checked against the files and the log. A snapshot that
/// was altered fails that check, and `audit --from-archive` names it.
/// The service (the store's login) may neither write a snapshot's tables
/// nor move, add or remove a snapshot's checkpoint row: only the owner's
/// detach does.
async fn the_service_cannot_move_a_snapshot(db: &TestDb) {
    let service = db.store.pool().get().await.unwrap();
    let attempts = [
        "DELETE FROM stockledger_snapshot.stock_levels",
        "UPDATE projection_checkpoints SET position = 0 WHERE slot = 'snapshot'",
        "DELETE FROM projection_checkpoints WHERE slot = 'snapshot'",
        "INSERT INTO projection_checkpoints (name, slot, definition_checksum)
         VALUES ('made_up', 'snapshot', 'x')",
        "UPDATE projection_checkpoints SET slot = 'snapshot' WHERE slot = 'live'",
    ];
    for sql in attempts {
        let why = service.batch_execute(sql).await.unwrap_err();
        assert_eq!(
            why.code(),
            Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{sql}: {why:?}"
        );
    }
    // Its own rows it still moves.
    service
        .batch_execute("UPDATE projection_checkpoints SET updated_at = now() WHERE slot = 'live'")
        .await
        .unwrap();
}

#[tokio::test]
async fn a_rebuild_after_the_cut_starts_from_the_snapshot_checked_against_the_files() {
    let db = small_partitions().await;
    db.receive("in-0", "apple", 100).await;
    db.run(reserve("r-open", "o-open", &[("apple", 5)], Some(3600)))
        .await
        .unwrap();
    write_mixed(&db, "a", 30).await;
    let dir = archive_dir(&db);
    let report = archive_and_detach(&db, &dir).await;
    assert!(report.detached.iter().any(|d| d.parent == "events"));
    let at_the_cut: i64 = db
        .client()
        .await
        .query_one(
            "SELECT count(*) FROM projection_checkpoints AS s, log_cut AS c
             WHERE s.slot = 'snapshot' AND (s.tx_id, s.position) >= (c.tx_id, c.position)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(at_the_cut as usize, stockledger::read_model::ALL.len());
    the_service_cannot_move_a_snapshot(&db).await;
    write_mixed(&db, "b", 10).await;
    db.run(confirm("r-open")).await.unwrap();
    db.project_all().await;

    // Without the files nothing can check the copy: refused before filling.
    match rebuild_all(&db, &stockledger::audit::ReplayVerifier).await {
        Err(RebuildError::Store(StoreError::Archived { .. })) => {}
        other => panic!("expected HISTORY_ARCHIVED, got {other:?}"),
    }
    let files = Archive::open(&dir).unwrap().whole().unwrap();
    let verifier = stockledger::audit::ArchiveReplayVerifier(&files);
    let rebuilt = rebuild_all(&db, &verifier).await.unwrap();
    let remaining = db.count_events().await;
    for r in &rebuilt {
        assert!(r.events <= remaining, "only what stayed is replayed: {r:?}");
    }
    whole_across(&db, &dir).await;

    // An altered snapshot: the rebuild's check refuses the copy, the live
    // one stays, and the audit from the archive names the snapshot.
    let live = "SELECT on_hand FROM stock_levels WHERE sku = 'apple'";
    let live_before: Vec<i64> = db.column(live).await;
    db.client()
        .await
        .execute(
            "UPDATE stockledger_snapshot.stock_levels SET on_hand = on_hand + 1 WHERE sku = 'apple'",
            &[],
        )
        .await
        .unwrap();
    let altered = rebuild::rebuild(
        db.owner_store().pool(),
        &stockledger::read_model::STOCK_LEVELS,
        stockledger::limits::REBUILD_BATCH_EVENTS,
        &verifier,
        |_| {},
    )
    .await;
    assert!(
        matches!(altered, Err(RebuildError::VerificationFailed { .. })),
        "{altered:?}"
    );
    assert_eq!(db.column::<i64>(live).await, live_before);
    let audited = stockledger::audit::audit_from_archive(db.store.pool(), &files)
        .await
        .unwrap();
    assert!(
        audited
            .differences
            .iter()
            .any(|d| d.table == "stockledger_snapshot.stock_levels"),
        "{:#?}",
        audited.differences
    );

    // A snapshot by an earlier definition (a release changed the model):
    // the next detach drops it and goes on; that model's rebuild is refused.
    db.client()
        .await
        .execute(
            "UPDATE projection_checkpoints SET definition_checksum = 'earlier'
             WHERE name = 'stock_levels' AND slot = 'snapshot'",
            &[],
        )
        .await
        .unwrap();
    write_mixed(&db, "c", 30).await;
    let later = archive_and_detach(&db, &dir).await;
    assert!(
        later.detached.iter().any(|d| d.parent == "events"),
        "{later:?}"
    );
    let snapshots: Vec<String> = db
        .column("SELECT name FROM projection_checkpoints WHERE slot = 'snapshot'")
        .await;
    assert!(
        !snapshots.contains(&"stock_levels".to_owned()),
        "{snapshots:?}"
    );
    assert_eq!(snapshots.len(), stockledger::read_model::ALL.len() - 1);
    let files = Archive::open(&dir).unwrap().whole().unwrap();
    let refused_rebuild = rebuild::rebuild(
        db.owner_store().pool(),
        &stockledger::read_model::STOCK_LEVELS,
        stockledger::limits::REBUILD_BATCH_EVENTS,
        &stockledger::audit::ArchiveReplayVerifier(&files),
        |_| {},
    )
    .await;
    assert!(
        matches!(
            refused_rebuild,
            Err(RebuildError::Store(StoreError::Archived { .. }))
        ),
        "{refused_rebuild:?}"
    );
}

/// Over HTTP, as callers meet it: a command on a stream that left is a 409
/// `ARCHIVED`; a read that would start before the cut is a 410
/// `HISTORY_ARCHIVED` naming where the log is whole, and reads from there on
/// go on.
#[tokio::test]
async fn over_http_archived_is_409_and_archived_history_410() {
    let db = small_partitions().await;
    write_mixed(&db, "a", 30).await;
    let dir = archive_dir(&db);
    let report = archive_and_detach(&db, &dir).await;
    assert!(!report.detached.is_empty(), "{report:?}");
    let store = db.store.clone();
    let mut s =
        common::server::TestServer::start_on(db, store, common::server::quiet_config()).await;

    let (status, body) = s
        .post(
            "/v1/stock/receipts",
            serde_json::json!({"receipt_id": "a-in-0", "sku": "a-sku-0", "quantity": 3}),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("ARCHIVED")),
        "{body}"
    );
    assert_eq!(body["details"]["stream"], "receipt:a-in-0", "{body}");
    let (status, body) = s.get("/v1/events", "auditor").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (410, Some("HISTORY_ARCHIVED")),
        "{body}"
    );
    let whole_after = body["details"]["whole_after"].as_str().unwrap().to_owned();
    let (status, page) = s
        .get(&format!("/v1/events?after={whole_after}"), "auditor")
        .await;
    assert_eq!(status, 200, "{page}");
    let stream = s
        .req(reqwest::Method::GET, "/v1/events/stream", Some("auditor"))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 410);
    let (status, body) = s.get("/v1/reservations/a-r-0", "reader").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (410, Some("HISTORY_ARCHIVED")),
        "{body}"
    );
    let (status, body) = s.get("/v1/stock/a-sku-0?as_of_position=1", "reader").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (410, Some("HISTORY_ARCHIVED")),
        "{body}"
    );
    let (status, _) = s.get("/v1/stock/a-sku-0", "reader").await;
    assert_eq!(status, 200, "current figures are the read model's");
    s.stop().await;
}
