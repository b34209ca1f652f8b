//! Tamper evidence: edits made as the database superuser with the triggers
//! switched off, each found by `verify`; proofs that hold offline and fail
//! for an altered event. docs/auditing.md.

mod common;

use std::process::Command;
use stockledger::domain::event::ReservationCreated;

use common::*;
use stockledger::seal::{self, Digest, Finding, ProofError};

/// A small ledger, sealed in two blocks: receipts and a reservation in the
/// first, a confirmation and more in the second.
async fn sealed_ledger() -> TestDb {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.receive("in-2", "pear", 4).await;
    db.run(reserve("r1", "o1", &[("apple", 3), ("pear", 1)], None))
        .await
        .unwrap();
    seal_all(&db).await;
    db.run(confirm("r1")).await.unwrap();
    db.run(reserve("r2", "o2", &[("apple", 2)], None))
        .await
        .unwrap();
    db.receive("in-3", "fig", 7).await;
    seal_all(&db).await;
    db.project_all().await;
    db
}

async fn verify(db: &TestDb, d: Option<&Digest>) -> seal::Report {
    seal::verify::verify(db.store.pool(), d).await.unwrap()
}

/// `stockledger verify --digest FILE --json`: its exit code and report.
fn verify_cli(db: &TestDb, digest: &Digest) -> (i32, serde_json::Value) {
    let file = std::env::temp_dir().join(format!("{}-digest.json", db.name));
    std::fs::write(&file, serde_json::to_string(digest).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .args(["verify", "--json", "--digest"])
        .arg(&file)
        .env("DATABASE_URL", db.url())
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), doc)
}

#[tokio::test]
async fn an_untouched_log_verifies_against_its_digest() {
    let db = sealed_ledger().await;
    let d = digest(&db).await;
    assert_eq!(d.block, 2);
    assert_eq!(d.last_seq, db.count_events().await);
    let report = verify(&db, Some(&d)).await;
    assert!(report.clean(), "{:?}", report.findings);
    assert_eq!(report.digest_matches, Some(true));
    assert_eq!(
        (report.events, report.blocks, report.unsealed),
        (d.last_seq as u64, 2, 0)
    );
    let (code, doc) = verify_cli(&db, &d);
    assert_eq!((code, doc["clean"].clone()), (0, serde_json::json!(true)));
}

/// A reservation's row keeps its fingerprint once (in `data`, as its
/// `request_hash`): the event is served and sealed with both, and a forged
/// request hash shows in `verify` as any other edit does.
#[tokio::test]
async fn a_reservations_fingerprint_is_stored_once_served_twice_and_covered() {
    let db = sealed_ledger().await;
    let d = digest(&db).await;
    let stream = "reservation:r2".to_owned();
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT metadata, data ->> 'request_hash', version FROM events
             WHERE stream = $1 AND seq = 1",
            &[&stream],
        )
        .await
        .unwrap();
    let (stored, hash): (serde_json::Value, String) = (row.get(0), row.get(1));
    assert_eq!(row.get::<_, i16>(2), 2);
    assert!(stored.get("fingerprint").is_none(), "{stored}");
    assert_eq!(hash.len(), 64);
    let page = db
        .store
        .events(
            stockledger::store::Cursor::START,
            100,
            Some("reservation:r2"),
        )
        .await
        .unwrap();
    let served = stockledger::store::read::event_json(&page.events[0]);
    assert_eq!(served["metadata"]["fingerprint"], hash.as_str());
    assert_eq!(served["data"]["request_hash"], hash.as_str());
    assert!(verify(&db, Some(&d)).await.clean());

    let at = position_of(&db, &stream, 1).await;
    as_superuser(
        &db,
        &format!(
            "UPDATE events SET data = jsonb_set(data, '{{request_hash}}', '\"{}\"')
             WHERE position = {at}",
            "0".repeat(64)
        ),
    )
    .await;
    let report = verify(&db, Some(&d)).await;
    assert!(
        matches!(&report.findings[0],
            Finding::EventAltered { position, .. } if *position == at),
        "{:?}",
        report.findings
    );
    assert_eq!(report.digest_matches, Some(false));
    // The metadata's side too: a fingerprint written back into the row,
    // other than the request hash, or said to be none, shows as well.
    let other = position_of(&db, &res_stream("r1"), 1).await;
    for forged in [r#"{"fingerprint": null}"#, r#"{"fingerprint": "ab"}"#] {
        as_superuser(
            &db,
            &format!(
                "UPDATE events SET metadata = metadata || '{forged}' WHERE position = {other}"
            ),
        )
        .await;
        let report = verify(&db, Some(&d)).await;
        assert!(
            report.findings.iter().any(|f| matches!(f,
                Finding::EventAltered { position, .. } if *position == other)),
            "{forged}: {:?}",
            report.findings
        );
    }
}

/// A release from before event versions reads a version-2 event as if it
/// were version 1; its sealer would hash it so, for ever. The database
/// refuses chain rows for such events from a session that does not say it
/// reads versions (schema 0020), and takes them from one that does.
#[tokio::test]
async fn a_sealer_that_does_not_read_versions_cannot_seal_a_later_version() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.run(reserve("r1", "o1", &[("apple", 3)], None))
        .await
        .unwrap();
    let at = position_of(&db, &res_stream("r1"), 1).await;
    let receipt = position_of(&db, &receipt_stream("in-1"), 1).await;
    let insert = |seq: i64, position: i64| {
        format!(
            "INSERT INTO event_chain (seq, position, hash) VALUES ({seq}, {position}, '\\x{}')",
            "00".repeat(32)
        )
    };
    // As an old release connects: no `stockledger.schema` (the test's own
    // client carries no startup options).
    let old = db.client().await;
    old.batch_execute(&insert(1, receipt)).await.unwrap();
    let refused = old.batch_execute(&insert(2, at)).await.unwrap_err();
    let db_error = refused.as_db_error().expect("a database error");
    assert_eq!(db_error.code().code(), "SL004", "{refused}");
    assert!(db_error.message().contains("cannot seal"), "{refused}");
    // A session of this release says its schema, as every pooled one does.
    old.batch_execute(&format!(
        "SET stockledger.schema = '{}'",
        stockledger::store::migrate::latest()
    ))
    .await
    .unwrap();
    old.batch_execute(&insert(2, at)).await.unwrap();
}

/// The sealer says its schema in the statement that writes the chain, not
/// only at connection: behind a pooler that drops startup options, this
/// release still seals a version-2 event.
#[tokio::test]
async fn the_sealer_seals_later_versions_without_its_startup_option() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.run(reserve("r1", "o1", &[("apple", 3)], None))
        .await
        .unwrap();
    // A pool of plain connections: no startup options at all.
    let manager = deadpool_postgres::Manager::from_config(
        db.config.clone(),
        tokio_postgres::NoTls,
        deadpool_postgres::ManagerConfig::default(),
    );
    let bare = deadpool_postgres::Pool::builder(manager)
        .max_size(2)
        .build()
        .unwrap();
    let options: String = bare
        .get()
        .await
        .unwrap()
        .query_one("SELECT current_setting('stockledger.schema', true)", &[])
        .await
        .unwrap()
        .get::<_, Option<String>>(0)
        .unwrap_or_default();
    assert_eq!(options, "", "the pool says nothing at connection");
    let sealed = seal::sealer::catch_up(&bare).await.unwrap();
    assert_eq!(sealed, Some(2), "the receipt and the reservation");
    assert!(verify(&db, Some(&digest(&db).await)).await.clean());
}

#[tokio::test]
async fn a_quantity_changed_with_the_balances_to_match_passes_the_audit_but_not_verify() {
    let db = sealed_ledger().await;
    let d = digest(&db).await;
    let at = position_of(&db, &receipt_stream("in-1"), 1).await;
    as_superuser(
        &db,
        &format!(
            "UPDATE events SET quantities = '{{12}}' WHERE position = {at};
             UPDATE item_balances SET on_hand = on_hand + 2 WHERE sku = 'apple';
             UPDATE stock_levels SET on_hand = on_hand + 2 WHERE sku = 'apple'"
        ),
    )
    .await;
    // The audit alone is fooled: the log and every figure agree.
    db.assert_audit_clean().await;
    let report = verify(&db, Some(&d)).await;
    assert!(!report.clean());
    assert!(
        matches!(&report.findings[0],
            Finding::EventAltered { position, stream, seq: 1, .. }
                if *position == at && *stream == receipt_stream("in-1")),
        "{:?}",
        report.findings
    );
    assert_eq!(report.digest_matches, Some(false));
    let (code, doc) = verify_cli(&db, &d);
    assert_eq!(code, 5, "{doc}");
    assert_eq!(doc["findings"][0]["kind"], "event_altered");
    assert_eq!(doc["findings"][0]["position"], at);
}

#[tokio::test]
async fn a_deleted_event_is_found() {
    let db = sealed_ledger().await;
    let at = position_of(&db, &res_stream("r2"), 1).await;
    as_superuser(&db, &format!("DELETE FROM events WHERE position = {at}")).await;
    let report = verify(&db, None).await;
    assert!(
        matches!(report.findings[0], Finding::EventMissing { position, .. } if position == at),
        "{:?}",
        report.findings
    );
    // Deleting its chain row too leaves a gap in the chain.
    as_superuser(
        &db,
        &format!("DELETE FROM event_chain WHERE position = {at}"),
    )
    .await;
    let report = verify(&db, None).await;
    assert!(
        report
            .findings
            .iter()
            .any(|f| matches!(f, Finding::ChainGap { .. })),
        "{:?}",
        report.findings
    );
}

#[tokio::test]
async fn two_events_swapped_in_commit_order_are_found() {
    let db = sealed_ledger().await;
    let a = position_of(&db, &receipt_stream("in-1"), 1).await;
    let b = position_of(&db, &receipt_stream("in-2"), 1).await;
    as_superuser(
        &db,
        &format!(
            "UPDATE events SET tx_id = CASE position
                 WHEN {a} THEN (SELECT tx_id FROM events WHERE position = {b})
                 ELSE (SELECT tx_id FROM events WHERE position = {a}) END
             WHERE position IN ({a}, {b})"
        ),
    )
    .await;
    let report = verify(&db, None).await;
    assert!(
        matches!(report.findings[0], Finding::OutOfOrder { position, .. } if position == b),
        "{:?}",
        report.findings
    );
}

#[tokio::test]
async fn an_event_inserted_among_sealed_ones_is_found() {
    let db = sealed_ledger().await;
    let event =
        stockledger::domain::Event::StockReceived(stockledger::domain::event::StockReceived {
            sku: stockledger::domain::Sku::parse("sku", "apple").unwrap(),
            location: stockledger::domain::Location::parse("location", "default").unwrap(),
            quantity: 100,
        });
    let client = db.client().await;
    let at = insert_event(
        &client,
        &receipt_stream("forged"),
        1,
        &event,
        &serde_json::json!({"command_id": uuid::Uuid::nil(), "actor": "x"}),
    )
    .await;
    // Back-dated below the sealed cursor, as if it had always been there.
    as_superuser(
        &db,
        &format!("UPDATE events SET tx_id = '3' WHERE position = {at}"),
    )
    .await;
    let report = verify(&db, None).await;
    assert_eq!(report.findings, vec![Finding::Uncovered { position: at }]);
}

#[tokio::test]
async fn a_block_rewritten_with_recomputed_hashes_is_caught_by_an_older_digest() {
    let db = sealed_ledger().await;
    let kept = digest(&db).await;
    let at = position_of(&db, &receipt_stream("in-1"), 1).await;
    let first_block: Vec<i64> = db
        .column("SELECT last_seq FROM seals WHERE block = 1")
        .await;
    // The careful forger: the event changed, then the chain and every seal
    // thrown away and sealed anew in blocks of the same sizes, so that
    // everything the database holds agrees and the head has the same shape.
    as_superuser(
        &db,
        &format!(
            "UPDATE events SET quantities = '{{12}}' WHERE position = {at};
             DELETE FROM event_chain; DELETE FROM seals"
        ),
    )
    .await;
    let client = db.store.pool().get().await.unwrap();
    seal::sealer::seal_once(&client, first_block[0])
        .await
        .unwrap();
    seal::sealer::seal_once(&client, 1000).await.unwrap();
    drop(client);
    let forged = digest(&db).await;
    assert_eq!((forged.block, forged.last_seq), (kept.block, kept.last_seq));
    assert_ne!(forged.seal, kept.seal);
    let report = verify(&db, None).await;
    assert!(report.clean(), "self-consistent: {:?}", report.findings);
    let report = verify(&db, Some(&kept)).await;
    assert_eq!(report.digest_matches, Some(false));
    assert!(
        matches!(
            &report.findings[..],
            [Finding::DigestMismatch { block: 2, .. }]
        ),
        "{:?}",
        report.findings
    );
}

#[tokio::test]
async fn a_digest_the_log_no_longer_holds_is_found() {
    let db = sealed_ledger().await;
    let kept = digest(&db).await;
    as_superuser(
        &db,
        &format!(
            "DELETE FROM events WHERE position IN (SELECT position FROM event_chain WHERE seq > (SELECT last_seq FROM seals WHERE block = 1));
             DELETE FROM event_chain WHERE seq > (SELECT last_seq FROM seals WHERE block = 1);
             DELETE FROM seals WHERE block = {}",
            kept.block
        ),
    )
    .await;
    let report = verify(&db, Some(&kept)).await;
    assert_eq!(
        report.findings,
        vec![Finding::DigestNotInLog {
            block: kept.block,
            sealed_blocks: kept.block - 1
        }]
    );
}

#[tokio::test]
async fn a_proof_holds_offline_and_fails_for_an_altered_event() {
    let db = sealed_ledger().await;
    let at = position_of(&db, &res_stream("r1"), 1).await;
    let first = digest(&db).await;
    // A proof against the first digest; then one against a later digest,
    // which walks the blocks sealed since.
    let proof = seal::proof::prove(db.store.pool(), at, Some(first.clone()))
        .await
        .unwrap();
    seal::proof::check(&proof, &first).unwrap();
    // A reservation is version 2 of its shape: its proof says a format an
    // older checker refuses, and the format must agree with the event.
    assert_eq!(proof.event["version"], 2);
    assert_eq!(proof.format, seal::proof::PROOF_FORMAT_VERSIONED);
    let mut relabelled = proof.clone();
    relabelled.format = seal::proof::PROOF_FORMAT.into();
    assert_eq!(
        seal::proof::check(&relabelled, &first),
        Err(ProofError::Format)
    );
    let receipt = position_of(&db, &receipt_stream("in-1"), 1).await;
    let of_receipt = seal::proof::prove(db.store.pool(), receipt, Some(first.clone()))
        .await
        .unwrap();
    assert_eq!(of_receipt.format, seal::proof::PROOF_FORMAT);
    seal::proof::check(&of_receipt, &first).unwrap();
    db.receive("in-4", "kiwi", 1).await;
    seal_all(&db).await;
    let latest = digest(&db).await;
    let later = seal::proof::prove(db.store.pool(), at, None).await.unwrap();
    assert_eq!(later.later.len(), 2, "blocks 2 and 3 follow the event's");
    seal::proof::check(&later, &latest).unwrap();
    // Any change to the event or its path breaks it.
    let mut altered = proof.clone();
    altered.event["data"]["lines"][0]["quantity"] = serde_json::json!(30);
    assert_eq!(
        seal::proof::check(&altered, &first),
        Err(ProofError::NotUnderRoot)
    );
    let mut moved = proof.clone();
    moved.event["position"] = serde_json::json!(at + 1);
    assert_eq!(
        seal::proof::check(&moved, &first),
        Err(ProofError::NotUnderRoot)
    );
    // A proof holds only against the digest it leads to.
    assert_eq!(
        seal::proof::check(&later, &first),
        Err(ProofError::NotUnderDigest)
    );
    let mut wrong_seal = first.clone();
    wrong_seal.seal = latest.seal.clone();
    assert_eq!(
        seal::proof::check(&proof, &wrong_seal),
        Err(ProofError::NotUnderDigest)
    );
    // A forgery that agrees with itself: a made-up event whose leaf is its
    // block's root, a seal computed over it, and a digest to match, all in
    // the file. Against the auditor's own digest it fails.
    let mut forged = proof.clone();
    forged.event["data"]["lines"][0]["quantity"] = serde_json::json!(999);
    let leaf = seal::chain::leaf(&seal::chain::canonical_event(&forged.event).unwrap());
    let fields = seal::chain::SealFields {
        version: seal::chain::SealVersion::CURRENT,
        block: first.block,
        first_seq: forged.chain_seq,
        last_seq: forged.chain_seq,
        merkle_root: leaf,
        chain_head: seal::chain::from_hex(&first.chain_head).unwrap(),
        last_tx_id: proof.block.last_tx_id,
        last_position: first.last_position,
        sealed_at: first.sealed_at,
    };
    let previous = seal::chain::ZERO;
    forged.block = seal::proof::SealedBlock {
        version: fields.version,
        block: first.block,
        first_seq: forged.chain_seq,
        last_seq: forged.chain_seq,
        merkle_root: seal::chain::hex(&leaf),
        chain_head: first.chain_head.clone(),
        last_tx_id: fields.last_tx_id,
        last_position: fields.last_position,
        sealed_at: fields.sealed_at,
    };
    forged.previous_seal = seal::chain::hex(&previous);
    forged.path = Vec::new();
    forged.later = Vec::new();
    forged.digest.seal = seal::chain::hex(&seal::chain::seal(&previous, &fields));
    forged.digest.last_seq = forged.chain_seq;
    assert_eq!(
        seal::proof::check(&forged, &forged.digest.clone()),
        Ok(()),
        "it agrees with itself"
    );
    assert_eq!(
        seal::proof::check(&forged, &first),
        Err(ProofError::NotUnderDigest)
    );
    // The command line checks a file without any database, against a
    // digest file of the auditor's.
    let file = std::env::temp_dir().join(format!("{}-proof.json", db.name));
    let kept = std::env::temp_dir().join(format!("{}-kept.json", db.name));
    for (p, d, code) in [
        (&later, &latest, 0),
        (&altered, &first, 5),
        (&forged, &first, 5),
    ] {
        std::fs::write(&file, serde_json::to_string(p).unwrap()).unwrap();
        std::fs::write(&kept, serde_json::to_string(d).unwrap()).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_stockledger"))
            .arg("verify-proof")
            .arg(&file)
            .arg("--digest")
            .arg(&kept)
            .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let _ = std::fs::remove_file(&kept);
    let _ = std::fs::remove_file(&file);
    // And no proof is made from a block the log no longer matches.
    as_superuser(
        &db,
        &format!("UPDATE events SET quantities = '{{9,1}}' WHERE position = {at}"),
    )
    .await;
    let refused = seal::proof::prove(db.store.pool(), at, None).await;
    assert!(
        matches!(refused, Err(seal::proof::ProveError::Altered(1))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn the_sealer_waits_for_open_writers_and_seals_each_event_once() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    // A writer holds its transaction open: nothing after its id is sealed
    // until it ends, so the chain never skips it.
    let mut client = db.client().await;
    let tx = client.transaction().await.unwrap();
    let held = raw_receipt(&tx, "held", "apple", 1).await;
    db.receive("in-2", "pear", 10).await;
    seal_all(&db).await;
    assert_eq!(
        digest(&db).await.last_seq,
        1,
        "only what precedes the open writer"
    );
    tx.commit().await.unwrap();
    seal_all(&db).await;
    let positions: Vec<i64> = db
        .column("SELECT position FROM event_chain ORDER BY seq")
        .await;
    assert_eq!(positions.len(), 3);
    assert!(positions.contains(&held));
    let report = verify(&db, Some(&digest(&db).await)).await;
    assert!(report.clean(), "{:?}", report.findings);
}

#[tokio::test]
async fn the_server_seals_as_it_goes_and_serves_the_digest_to_auditors() {
    let mut server = common::server::TestServer::start(common::server::test_config()).await;
    let (status, body) = server.get("/v1/digest", "auditor").await;
    assert_eq!(
        (status, body["code"].clone()),
        (404, serde_json::json!("NOT_FOUND"))
    );
    let receipt = serde_json::json!({"receipt_id": "in-1", "sku": "apple", "quantity": 5});
    assert_eq!(server.post("/v1/stock/receipts", receipt).await.0, 201);
    eventually("the server's sealer seals the receipt", || async {
        server.get("/v1/digest", "auditor").await.0 == 200
    })
    .await;
    let (_, body) = server.get("/v1/digest", "auditor").await;
    let d = Digest::parse(&body.to_string()).unwrap();
    assert_eq!((d.block, d.last_seq), (1, 1));
    assert_eq!(server.get("/v1/digest", "admin").await.0, 200);
    for role in ["writer", "reader"] {
        assert_eq!(server.get("/v1/digest", role).await.0, 403, "{role}");
    }
    let report = verify(&server.db, Some(&d)).await;
    assert!(report.clean(), "{:?}", report.findings);
    server.stop().await;
}

#[tokio::test]
async fn verify_reads_in_windows_side_by_side_and_misses_nothing() {
    let db = sealed_ledger().await;
    let d = digest(&db).await;
    let at = position_of(&db, &res_stream("r2"), 1).await;
    for window in [1, 2, 3, 100] {
        let report = seal::verify::verify_in_windows(db.store.pool(), Some(&d), window)
            .await
            .unwrap();
        assert!(report.clean(), "window {window}: {:?}", report.findings);
        assert_eq!(report.events, d.last_seq as u64);
    }
    as_superuser(&db, &format!("DELETE FROM events WHERE position = {at}")).await;
    for window in [1, 2, 3, 100] {
        let report = seal::verify::verify_in_windows(db.store.pool(), Some(&d), window)
            .await
            .unwrap();
        assert!(
            matches!(report.findings[0], Finding::EventMissing { position, .. } if position == at),
            "window {window}: {:?}",
            report.findings
        );
    }
    // Seals are read a page (a window's worth) at a time: a broken link
    // between two of them is found whatever the page.
    as_superuser(
        &db,
        "UPDATE seals SET previous = set_byte(previous, 0, get_byte(previous, 0) # 255) WHERE block = 2",
    )
    .await;
    for window in [1, 2, 3, 100] {
        let report = seal::verify::verify_in_windows(db.store.pool(), Some(&d), window)
            .await
            .unwrap();
        assert!(
            report.findings.iter().any(|f| matches!(f,
                Finding::SealBroken { block: 2, what } if what.contains("previous seal hash"))),
            "window {window}: {:?}",
            report.findings
        );
    }
}

/// Issue 25, case 5: a login with only the service role appends an event
/// that says it was recorded long ago, by a transaction that never was, and
/// moves the balances to match. The database records it at its own time and
/// under the transaction that wrote it, so figures of the past stay as they
/// were, and the event is chained after what was sealed before it.
#[tokio::test]
async fn a_service_login_cannot_back_date_an_event() {
    use stockledger::domain::{Balance, Item, Location, Sku};
    use stockledger::store::history::AsOf;

    let db = sealed_ledger().await;
    let kept = digest(&db).await;
    let at = |s: &str| {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .with_timezone(&chrono::Utc)
    };
    let item = Item {
        sku: Sku::parse("sku", "apple").unwrap(),
        location: Location::parse_or_default("location", None).unwrap(),
    };
    let past = AsOf::Time(at("2025-06-01T00:00:00Z"));
    assert_eq!(
        db.store.stock_as_of(&item, past).await.unwrap().figures,
        Balance::default()
    );
    // The issue's forger: a receipt of 500 said to be recorded in 2025, and
    // the balances moved to match, in one transaction.
    let forged = forge(
        &db,
        "receipt:back-dated",
        "recorded_at",
        "'2025-01-01T00:00:00Z'",
        true,
    )
    .await;
    // And one that names a transaction that never wrote it (the balances
    // cannot move then: their trigger looks for the transaction's events).
    let other = forge(&db, "receipt:other-tx", "tx_id", "'3'", false).await;
    for (stream, (began, own_tx)) in [("receipt:back-dated", forged), ("receipt:other-tx", other)] {
        let row = db
            .client()
            .await
            .query_one(
                "SELECT recorded_at, tx_id::text::bigint FROM events WHERE stream = $1",
                &[&stream],
            )
            .await
            .unwrap();
        let (recorded_at, tx_id): (chrono::DateTime<chrono::Utc>, i64) = (row.get(0), row.get(1));
        assert!(
            recorded_at >= began && recorded_at <= chrono::Utc::now(),
            "{stream}: recorded at {recorded_at}, its transaction began at {began}"
        );
        assert_eq!(tx_id, own_tx, "{stream}: the transaction that wrote it");
    }
    // The past is what it was; the present has the forged units, which is
    // for the audit and the people who read the log to question.
    assert_eq!(
        db.store.stock_as_of(&item, past).await.unwrap().figures,
        Balance::default()
    );
    assert_eq!(
        db.store.balance(&item).await.unwrap().unwrap().on_hand,
        10 - 3 + 500
    );
    seal_all(&db).await;
    let report = verify(&db, Some(&kept)).await;
    assert!(report.clean(), "{:?}", report.findings);
    let chained: Vec<i64> = db
        .column(
            "SELECT c.seq FROM event_chain c JOIN events e USING (position)
             WHERE e.stream = 'receipt:back-dated'",
        )
        .await;
    assert_eq!(chained, vec![kept.last_seq + 1], "chained after the digest");
}

/// As a login with only the service role, one transaction that inserts an
/// apple receipt of 500 on `stream` with `column` set to `value`, and moves
/// the balances to match when `move_balances`; returns when the transaction
/// began and its id.
async fn forge(
    db: &TestDb,
    stream: &str,
    column: &str,
    value: &str,
    move_balances: bool,
) -> (chrono::DateTime<chrono::Utc>, i64) {
    let mut client = db.store.pool().get().await.unwrap();
    let tx = client.transaction().await.unwrap();
    let me: String = tx
        .query_one("SELECT current_user::text", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(me, SERVICE_LOGIN);
    let meta = serde_json::json!({"command_id": uuid::Uuid::new_v4(), "actor": "forger"});
    tx.execute(
        &format!(
            "INSERT INTO events (stream, seq, type, data, metadata, {column},
                                 skus, locations, quantities)
             VALUES ($1, 1, 'StockReceived', '{{}}', $2, {value}, '{{apple}}', '{{default}}', '{{500}}')"
        ),
        &[&stream, &meta],
    )
    .await
    .unwrap();
    if move_balances {
        tx.execute(
            "UPDATE item_balances SET on_hand = on_hand + 500
             WHERE sku = 'apple' AND location = 'default'",
            &[],
        )
        .await
        .unwrap();
    }
    let r = tx
        .query_one(
            "SELECT transaction_timestamp(), pg_current_xact_id()::text::bigint",
            &[],
        )
        .await
        .unwrap();
    let began = (r.get(0), r.get(1));
    tx.commit().await.unwrap();
    began
}

/// Issue 25, case 5: what a seal records about its block (where the sealer
/// stopped in commit order, when it sealed) is under its hash, and every
/// field a digest shows is checked by `verify` and by a proof's check.
#[tokio::test]
async fn a_seals_recorded_fields_are_under_its_hash_and_every_digest_field_is_checked() {
    let db = sealed_ledger().await;
    let kept = digest(&db).await;
    let at = position_of(&db, &res_stream("r1"), 1).await;
    let proof = seal::proof::prove(db.store.pool(), at, Some(kept.clone()))
        .await
        .unwrap();
    seal::proof::check(&proof, &kept).unwrap();
    assert!(verify(&db, Some(&kept)).await.clean());
    for (column, change, undo) in [
        (
            "sealed_at",
            "sealed_at - interval '1 day'",
            "sealed_at + interval '1 day'",
        ),
        ("last_position", "last_position + 1", "last_position - 1"),
        ("last_tx_id", "last_tx_id + 1", "last_tx_id - 1"),
    ] {
        as_superuser(
            &db,
            &format!("UPDATE seals SET {column} = {change} WHERE block = 1"),
        )
        .await;
        let report = verify(&db, None).await;
        assert!(
            report
                .findings
                .iter()
                .any(|f| matches!(f, Finding::SealBroken { block: 1, .. })),
            "{column}: {:?}",
            report.findings
        );
        let report = verify(&db, Some(&kept)).await;
        assert_eq!(report.digest_matches, Some(false), "{column}");
        as_superuser(
            &db,
            &format!("UPDATE seals SET {column} = {undo} WHERE block = 1"),
        )
        .await;
        assert!(verify(&db, Some(&kept)).await.clean(), "{column} undone");
    }
    // A digest whose position or time is not the sealed one is not this
    // log's, for `verify` and for a proof's check alike.
    let mut moved = kept.clone();
    moved.last_position += 1;
    let mut earlier = kept.clone();
    earlier.sealed_at -= chrono::Duration::days(1);
    for (what, d) in [("last_position", &moved), ("sealed_at", &earlier)] {
        let report = verify(&db, Some(d)).await;
        assert_eq!(report.digest_matches, Some(false), "{what}");
        assert!(
            matches!(
                &report.findings[..],
                [Finding::DigestMismatch { block: 2, .. }]
            ),
            "{what}: {:?}",
            report.findings
        );
        assert_eq!(
            seal::proof::check(&proof, d),
            Err(ProofError::NotUnderDigest),
            "{what}"
        );
    }
}

/// Appends a reservation of `quantity` of `sku` inside `tx` by hand, with
/// its balance, as the store would.
async fn raw_reservation(
    tx: &tokio_postgres::Transaction<'_>,
    id: &str,
    order: &str,
    sku: &str,
    quantity: u32,
) {
    use stockledger::domain::command::{Line, Reserve};
    use stockledger::domain::{Event, EventMetadata, Item, Location, OrderId, Sku};
    let order_id = OrderId::parse("order_id", order).unwrap();
    let lines = vec![Line {
        item: Item {
            sku: Sku::parse("sku", sku).unwrap(),
            location: Location::parse_or_default("location", None).unwrap(),
        },
        quantity,
    }];
    let hash = Reserve::fingerprint_of(&order_id, &lines, None);
    let event = Event::ReservationCreated(ReservationCreated {
        order_id,
        lines,
        expires_at: chrono::Utc::now() + chrono::Duration::hours(1),
        ttl_seconds: 3600,
        request_hash: hash.clone(),
    });
    let meta = serde_json::to_value(EventMetadata {
        command_id: uuid::Uuid::new_v4(),
        actor: "test".into(),
        fingerprint: Some(hash),
        ..Default::default()
    })
    .unwrap();
    insert_event(tx, &res_stream(id), 1, &event, &meta).await;
    tx.execute(
        "UPDATE item_balances SET reserved = reserved + $2 WHERE sku = $1 AND location = 'default'",
        &[&sku, &i64::from(quantity)],
    )
    .await
    .unwrap();
}

/// Seals made before schema 12 keep version 1 and verify as they were made;
/// the sealer goes on after them with version 2 seals, and a digest or a
/// proof taken across both holds.
#[tokio::test]
async fn seals_made_before_schema_12_verify_as_they_were_made() {
    use seal::chain::{self, SealFields, SealVersion};
    let db = TestDb::at_schema(8, 11).await;
    // Written by hand, as the release of schema 11 wrote them: this binary's
    // command path needs the columns of later schemas.
    {
        let mut client = db.client().await;
        let tx = client.transaction().await.unwrap();
        raw_receipt(&tx, "in-1", "apple", 10).await;
        raw_reservation(&tx, "r1", "o1", "apple", 3).await;
        tx.commit().await.unwrap();
    }
    // Block 1 as the sealer before schema 12 made it. This binary reads the
    // `version` column of schema 20, which a version-1 event's leaf leaves
    // unsaid, and asks schema 22's `log_cut` where the log is whole: both
    // lent to the old schema for the read, then taken away again.
    let lend = |sql: &'static str| async {
        db.client().await.batch_execute(sql).await.unwrap();
    };
    lend("ALTER TABLE events ADD COLUMN version smallint NOT NULL DEFAULT 1").await;
    lend("CREATE TABLE log_cut (tx_id xid8, position bigint, floor bigint); GRANT SELECT ON log_cut TO PUBLIC").await;
    let page = db
        .store
        .log_batch(stockledger::store::Cursor::START, 100)
        .await
        .unwrap();
    let leaves: Vec<chain::Hash> = page
        .events
        .iter()
        .map(|e| seal::sealer::leaf_of(e).unwrap())
        .collect();
    lend("ALTER TABLE events DROP COLUMN version").await;
    lend("DROP TABLE log_cut").await;
    let mut head = chain::ZERO;
    let mut hashes = Vec::new();
    for l in &leaves {
        head = chain::link(&head, l);
        hashes.push(head.to_vec());
    }
    let last = page.events.last().unwrap();
    let client = db.store.pool().get().await.unwrap();
    let sealed_at: chrono::DateTime<chrono::Utc> = client
        .query_one("SELECT statement_timestamp()", &[])
        .await
        .unwrap()
        .get(0);
    let fields = SealFields {
        version: SealVersion::V1,
        block: 1,
        first_seq: 1,
        last_seq: leaves.len() as i64,
        merkle_root: chain::merkle_root(&leaves),
        chain_head: head,
        last_tx_id: last.tx_id,
        last_position: last.position,
        sealed_at,
    };
    let hash = chain::seal(&chain::ZERO, &fields);
    let seqs: Vec<i64> = (1..=leaves.len() as i64).collect();
    let positions: Vec<i64> = page.events.iter().map(|e| e.position).collect();
    client
        .execute(
            "WITH rows AS (
                 INSERT INTO event_chain (seq, position, hash)
                 SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[]))
             INSERT INTO seals (block, first_seq, last_seq, merkle_root, chain_head, previous,
                                hash, last_tx_id, last_position, sealed_at)
             VALUES (1, 1, $4, $5, $6, $7, $8, $9, $10, $11)",
            &[
                &seqs,
                &positions,
                &hashes,
                &fields.last_seq,
                &fields.merkle_root.as_slice(),
                &fields.chain_head.as_slice(),
                &chain::ZERO.as_slice(),
                &hash.as_slice(),
                &fields.last_tx_id,
                &fields.last_position,
                &sealed_at,
            ],
        )
        .await
        .unwrap();
    drop(client);
    let old = digest(&db).await;
    // The upgrade, then more events and a seal of the new version.
    stockledger::app::migrate_through(&mut db.client().await, i32::MAX)
        .await
        .unwrap();
    db.run(confirm("r1")).await.unwrap();
    seal_all(&db).await;
    let versions: Vec<i16> = db.column("SELECT version FROM seals ORDER BY block").await;
    assert_eq!(versions, vec![1, 2]);
    let new = digest(&db).await;
    for d in [&old, &new] {
        let report = verify(&db, Some(d)).await;
        assert!(report.clean(), "block {}: {:?}", d.block, report.findings);
        assert_eq!(report.digest_matches, Some(true));
    }
    let at = position_of(&db, &res_stream("r1"), 1).await;
    let proof = seal::proof::prove(db.store.pool(), at, None).await.unwrap();
    assert_eq!(proof.block.version, SealVersion::V1);
    assert_eq!(proof.later[0].version, SealVersion::V2);
    seal::proof::check(&proof, &new).unwrap();
}
