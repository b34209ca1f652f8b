//! Tamper evidence: edits made as the database superuser with the triggers
//! switched off, each found by `verify`; proofs that hold offline and fail
//! for an altered event. docs/auditing.md.

mod common;

use std::process::Command;

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

async fn seal_all(db: &TestDb) {
    let sealed = seal::sealer::catch_up(db.store.pool()).await.unwrap();
    assert!(sealed.is_some(), "no other sealer runs on a test database");
}

async fn digest(db: &TestDb) -> Digest {
    db.store.digest().await.unwrap().expect("a seal")
}

async fn verify(db: &TestDb, d: Option<&Digest>) -> seal::Report {
    seal::verify::verify(db.store.pool(), d).await.unwrap()
}

/// Runs `sql` as the superuser with every trigger switched off, as an
/// administrator who wants to rewrite history would.
async fn as_superuser(db: &TestDb, sql: &str) {
    let client = db.client().await;
    client
        .batch_execute(&format!(
            "BEGIN; SET LOCAL session_replication_role = replica; {sql}; COMMIT"
        ))
        .await
        .unwrap();
}

async fn position_of(db: &TestDb, stream: &str, seq: i32) -> i64 {
    db.client()
        .await
        .query_one(
            "SELECT position FROM events WHERE stream = $1 AND seq = $2",
            &[&stream, &seq],
        )
        .await
        .unwrap()
        .get(0)
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
    let event = stockledger::domain::Event::StockReceived {
        sku: stockledger::domain::Sku::parse("sku", "apple").unwrap(),
        location: stockledger::domain::Location::parse("location", "default").unwrap(),
        quantity: 100,
    };
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
        block: first.block,
        first_seq: forged.chain_seq,
        last_seq: forged.chain_seq,
        merkle_root: leaf,
        chain_head: seal::chain::from_hex(&first.chain_head).unwrap(),
    };
    let previous = seal::chain::ZERO;
    forged.block = seal::proof::SealedBlock {
        block: first.block,
        first_seq: forged.chain_seq,
        last_seq: forged.chain_seq,
        merkle_root: seal::chain::hex(&leaf),
        chain_head: first.chain_head.clone(),
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
}
