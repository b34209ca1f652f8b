//! Archive files (docs/archive.md): sealed blocks written out of the
//! database, verified across the files and the database, proved from a
//! file as from the log, replayed by the audit; an altered file and a
//! missing segment named; nothing archived that does not verify.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;
use stockledger::seal::archive::{self, Archive, ArchiveError, Manifest};
use stockledger::seal::chain::SealFields;
use stockledger::seal::{self, Digest, Finding};

/// A ledger sealed in three blocks.
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
    seal_all(&db).await;
    db.receive("in-3", "fig", 7).await;
    db.run(release("r2")).await.unwrap();
    seal_all(&db).await;
    db.project_all().await;
    db
}

/// A fresh directory for `db`'s archive.
fn archive_dir(db: &TestDb) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{}-archive", db.name));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

async fn archive_through(db: &TestDb, dir: &Path, block: Option<i64>) -> Vec<Manifest> {
    archive::write::archive(db.store.pool(), dir, block)
        .await
        .unwrap()
}

/// The ledger archived as three segments, one block each.
async fn archived_in_three(db: &TestDb) -> PathBuf {
    let dir = archive_dir(db);
    for block in 1..=3 {
        let written = archive_through(db, &dir, Some(block)).await;
        assert_eq!(written.len(), 1);
        assert_eq!(
            (written[0].first_block, written[0].last_block),
            (block, block)
        );
    }
    dir
}

fn open(dir: &Path) -> Archive {
    Archive::open(dir).unwrap()
}

async fn verify_across(db: &TestDb, dir: &Path, d: Option<&Digest>) -> seal::Report {
    seal::verify::verify_across(db.store.pool(), d, &open(dir))
        .await
        .unwrap()
}

/// A segment's rows file, decompressed, one JSON value per line.
fn read_rows(path: &Path) -> Vec<Value> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_rows(path: &Path, rows: &[Value]) {
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::default(),
    );
    for r in rows {
        writeln!(gz, "{r}").unwrap();
    }
    gz.finish().unwrap();
}

fn segment_files(dir: &Path, first_block: i64) -> (PathBuf, PathBuf) {
    let stem = archive::segment_stem(first_block, first_block);
    (
        dir.join(format!("{stem}{}", archive::MANIFEST_SUFFIX)),
        dir.join(format!("{stem}{}", archive::ROWS_SUFFIX)),
    )
}

/// The receipt of `in-1` in segment 1 made to say 99 apples.
fn alter_first_segment(dir: &Path) -> i64 {
    let (_, rows_path) = segment_files(dir, 1);
    let mut rows = read_rows(&rows_path);
    let row = rows
        .iter_mut()
        .find(|r| r["event"]["stream"] == receipt_stream("in-1"))
        .expect("the receipt is in block 1");
    row["event"]["data"]["quantity"] = serde_json::json!(99);
    let position = row["event"]["position"].as_i64().unwrap();
    write_rows(&rows_path, &rows);
    position
}

/// Makes the manifest agree with its altered rows file, as a forger would.
fn rehash_manifest(dir: &Path, first_block: i64) {
    use sha2::Digest as _;
    let (manifest_path, rows_path) = segment_files(dir, first_block);
    let bytes = std::fs::read(&rows_path).unwrap();
    let mut m: Manifest =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    m.sha256 = stockledger::seal::chain::hex(&sha2::Sha256::digest(&bytes).into());
    m.bytes = bytes.len() as u64;
    std::fs::write(&manifest_path, serde_json::to_string(&m).unwrap()).unwrap();
}

#[tokio::test]
async fn the_archive_holds_every_sealed_block_and_verifies_with_the_database() {
    let db = sealed_ledger().await;
    let d = digest(&db).await;
    assert_eq!(d.block, 3);
    let dir = archive_dir(&db);
    let first = archive_through(&db, &dir, Some(1)).await;
    let rest = archive_through(&db, &dir, None).await;
    assert_eq!(
        (
            first.len(),
            rest.len(),
            rest[0].first_block,
            rest[0].last_block
        ),
        (1, 1, 2, 3),
        "one segment for block 1, one for the rest"
    );
    assert_eq!(
        first[0].events + rest[0].events,
        db.count_events().await as u64
    );
    assert!(
        archive_through(&db, &dir, None).await.is_empty(),
        "a second run has nothing to archive"
    );
    let report = verify_across(&db, &dir, Some(&d)).await;
    assert!(report.clean(), "{:?}", report.findings);
    assert_eq!((report.digest_matches, report.blocks), (Some(true), 3));
    // Events sealed after the archive continue its chain from the database.
    db.receive("in-4", "kiwi", 1).await;
    seal_all(&db).await;
    let later = digest(&db).await;
    let report = verify_across(&db, &dir, Some(&later)).await;
    assert!(report.clean(), "{:?}", report.findings);
    assert_eq!(report.events, later.last_seq as u64);
    // The archive stands for the archived blocks: with their events gone
    // from the database, plain `verify` misses them and `--archive` does not.
    let last_archived = rest[0].last_seq;
    as_superuser(
        &db,
        &format!(
            "DELETE FROM events WHERE position IN (SELECT position FROM event_chain WHERE seq <= {last_archived})"
        ),
    )
    .await;
    let plain = seal::verify::verify(db.store.pool(), Some(&later))
        .await
        .unwrap();
    assert!(plain
        .findings
        .iter()
        .any(|f| matches!(f, Finding::EventMissing { .. })));
    let report = verify_across(&db, &dir, Some(&later)).await;
    assert!(report.clean(), "{:?}", report.findings);
    assert_eq!(report.digest_matches, Some(true));
}

#[tokio::test]
async fn an_altered_archive_file_is_named_by_verify() {
    let db = sealed_ledger().await;
    let d = digest(&db).await;
    let dir = archived_in_three(&db).await;
    let position = alter_first_segment(&dir);
    let (manifest_name, _) = segment_files(&dir, 1);
    let manifest_name = manifest_name
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let report = verify_across(&db, &dir, Some(&d)).await;
    assert!(!report.clean());
    assert!(
        report.findings.iter().any(|f| matches!(f,
            Finding::ArchiveProblem { file, what } if *file == manifest_name && what.contains("changed after it was written"))),
        "{:?}",
        report.findings
    );
    assert!(report.findings.iter().any(|f| matches!(f,
        Finding::EventAltered { position: p, archive: Some(file), .. } if *p == position && *file == manifest_name)));
    // A forger who also rewrites the manifest's hash is still caught: the
    // event no longer hashes to its chain row, nor the file to the digest.
    rehash_manifest(&dir, 1);
    let report = verify_across(&db, &dir, Some(&d)).await;
    assert!(!report
        .findings
        .iter()
        .any(|f| matches!(f, Finding::ArchiveProblem { .. })));
    assert!(report.findings.iter().any(|f| matches!(f,
        Finding::EventAltered { position: p, .. } if *p == position)));
    assert_eq!(report.digest_matches, Some(false));
    // The command says so, and exits 5.
    let file = dir.join("digest.json");
    std::fs::write(&file, serde_json::to_string(&d).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .args(["verify", "--json", "--archive"])
        .arg(&dir)
        .arg("--digest")
        .arg(&file)
        .env("DATABASE_URL", db.url())
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), doc["clean"].clone()),
        (Some(5), Value::Bool(false))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_missing_segment_is_named_and_stops_archive_and_audit() {
    let db = sealed_ledger().await;
    let d = digest(&db).await;
    let dir = archived_in_three(&db).await;
    let (manifest, rows) = segment_files(&dir, 2);
    std::fs::remove_file(&manifest).unwrap();
    std::fs::remove_file(&rows).unwrap();
    let report = verify_across(&db, &dir, Some(&d)).await;
    assert!(
        report.findings.iter().any(|f| matches!(f,
            Finding::ArchiveProblem { what, .. } if what.contains("blocks 2 to 2 are in no segment"))),
        "{:?}",
        report.findings
    );
    assert!(!report.clean());
    match archive::write::archive(db.store.pool(), &dir, None).await {
        Err(ArchiveError::Unreadable { why, .. }) => {
            assert!(why.contains("a segment is missing"), "{why}")
        }
        other => panic!("archived onto a broken archive: {other:?}"),
    }
    assert!(
        open(&dir).whole().is_err(),
        "what the audit and the writer open"
    );
    // A rows file gone under its manifest is named too.
    let dir = archived_in_three(&db).await;
    std::fs::remove_file(segment_files(&dir, 3).1).unwrap();
    let report = verify_across(&db, &dir, Some(&d)).await;
    assert!(report.findings.iter().any(|f| matches!(f,
        Finding::ArchiveProblem { what, .. } if what.contains("No such file"))));
    assert!(open(&dir).whole().is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_archived_event_is_proved_exactly_as_a_live_one() {
    let db = sealed_ledger().await;
    let first = digest(&db).await;
    let dir = archived_in_three(&db).await;
    let at = position_of(&db, &res_stream("r1"), 1).await;
    let live = seal::proof::prove(db.store.pool(), at, Some(first.clone()))
        .await
        .unwrap();
    let archived = archive::prove::prove(db.store.pool(), &open(&dir), at, Some(first.clone()))
        .await
        .unwrap()
        .expect("the event is archived");
    assert_eq!(archived, live);
    seal::proof::check(&archived, &first).unwrap();
    // A digest taken after the archive: the later blocks come from the
    // archive, then from the database.
    db.receive("in-4", "kiwi", 1).await;
    seal_all(&db).await;
    let latest = digest(&db).await;
    let archived = archive::prove::prove(db.store.pool(), &open(&dir), at, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        archived.later.len() as i64,
        latest.block - archived.block.block
    );
    seal::proof::check(&archived, &latest).unwrap();
    let unarchived: i64 = db
        .client()
        .await
        .query_one("SELECT max(position) FROM events", &[])
        .await
        .unwrap()
        .get(0);
    let not_there = archive::prove::prove(db.store.pool(), &open(&dir), unarchived, None)
        .await
        .unwrap();
    assert!(
        not_there.is_none(),
        "an event after the archive is proved from the database"
    );
    // From an altered file no proof is made.
    alter_first_segment(&dir);
    rehash_manifest(&dir, 1);
    let in_1 = position_of(&db, &receipt_stream("in-1"), 1).await;
    let refused = archive::prove::prove(db.store.pool(), &open(&dir), in_1, None).await;
    assert!(
        matches!(refused, Err(seal::proof::ProveError::Archive(ref why)) if why.contains("does not hash to its chain row")),
        "{refused:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_audit_replays_the_archive_then_the_database() {
    let db = sealed_ledger().await;
    let dir = archive_dir(&db);
    archive_through(&db, &dir, Some(1)).await;
    archive_through(&db, &dir, Some(2)).await;
    // Block 3 and an unsealed event stay in the database only.
    db.receive("in-4", "kiwi", 1).await;
    db.project_all().await;
    let report =
        stockledger::audit::audit_from_archive(db.store.pool(), &open(&dir).whole().unwrap())
            .await
            .unwrap();
    assert!(report.clean(), "{:?}", report.differences);
    assert_eq!(report.events, db.count_events().await as u64);
    // An archive whose receipt says 99 apples, its manifest rehashed to
    // match, is not replayed: every archived row is held against the seals.
    alter_first_segment(&dir);
    rehash_manifest(&dir, 1);
    let refused =
        stockledger::audit::audit_from_archive(db.store.pool(), &open(&dir).whole().unwrap()).await;
    let why = refused
        .expect_err("an altered archive is not replayed")
        .to_string();
    assert!(why.contains("does not hash to its chain row"), "{why}");
    assert!(
        why.contains(&archive::segment_stem(1, 1)),
        "names the file: {why}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Another ledger's archive, a mistyped directory, a block already
/// archived, and what a stopped run left behind.
#[tokio::test]
async fn an_archive_follows_on_from_its_own_ledger_only() {
    let db = sealed_ledger().await;
    let other = sealed_ledger().await;
    let dir = archive_dir(&db);
    archive_through(&db, &dir, Some(2)).await;
    // The other ledger's block 2 has other events (other ids, other times).
    match archive::write::archive(other.store.pool(), &dir, None).await {
        Err(ArchiveError::NotThisLedger { block: 2 }) => {}
        other => panic!("archived onto another ledger's archive: {other:?}"),
    }
    let report = verify_across(&other, &dir, None).await;
    assert!(
        report.findings.iter().any(|f| matches!(f,
            Finding::ArchiveProblem { what, .. } if what.contains("sealed differently in the database"))),
        "{:?}",
        report.findings
    );
    assert!(
        Archive::open(&dir.join("no-such-dir")).is_err(),
        "a mistyped directory is not an empty archive"
    );
    assert!(
        archive_through(&db, &dir, Some(1)).await.is_empty(),
        "a block archived already is nothing to do"
    );
    // A run that stopped half-way left a temporary file and a rows file with
    // no manifest: the next run clears them (and nothing else it did not
    // write), and writes the next segment whole.
    let (orphan_manifest, orphan) = segment_files(&dir, 9);
    let partial = PathBuf::from(format!("{}.partial", orphan_manifest.display()));
    for planted in [&orphan, &partial] {
        std::fs::write(planted, b"half").unwrap();
    }
    std::fs::write(dir.join("notes.txt"), b"the auditor's").unwrap();
    let written = archive_through(&db, &dir, None).await;
    assert_eq!((written.len(), written[0].first_block), (1, 3));
    assert!(!orphan.exists() && !partial.exists(), "leftovers cleared");
    assert!(dir.join("notes.txt").exists(), "other files left alone");
    let report = verify_across(&db, &dir, Some(&digest(&db).await)).await;
    assert!(report.clean(), "{:?}", report.findings);
    // One run at a time: a second is refused while the first holds the lock.
    let held = std::fs::File::create(dir.join(".archive.lock")).unwrap();
    held.try_lock().unwrap();
    match archive::write::archive(db.store.pool(), &dir, None).await {
        Err(ArchiveError::Unreadable { why, .. }) => assert!(why.contains("another"), "{why}"),
        other => panic!("two runs at once: {other:?}"),
    }
    drop(held);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every row of `dir`'s three one-block segments rewritten with the receipt
/// of `in-1` at 99 apples, and everything above it recomputed: chain hashes,
/// Merkle roots, chain heads, seal hashes, manifests and their SHA-256. The
/// files then agree with themselves; only the database's seal (and a digest)
/// can tell.
fn reseal_forged(dir: &Path) {
    use stockledger::seal::chain;
    alter_first_segment(dir);
    let (mut chain_hash, mut seal_hash) = (chain::ZERO, chain::ZERO);
    for block in 1..=3 {
        let (manifest_path, rows_path) = segment_files(dir, block);
        let mut m: Manifest =
            serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
        let mut rows = read_rows(&rows_path);
        m.chain_before = chain::hex(&chain_hash);
        let mut leaves = Vec::new();
        for r in &mut rows {
            let leaf = chain::leaf(&chain::canonical_event(&r["event"]).unwrap());
            chain_hash = chain::link(&chain_hash, &leaf);
            r["hash"] = Value::String(chain::hex(&chain_hash));
            leaves.push(leaf);
        }
        write_rows(&rows_path, &rows);
        let s = &mut m.seals[0];
        s.block.merkle_root = chain::hex(&chain::merkle_root(&leaves));
        s.block.chain_head = chain::hex(&chain_hash);
        s.previous = chain::hex(&seal_hash);
        let fields = SealFields {
            version: s.block.version,
            block: s.block.block,
            first_seq: s.block.first_seq,
            last_seq: s.block.last_seq,
            merkle_root: chain_hash_of(&s.block.merkle_root),
            chain_head: chain_hash,
            last_tx_id: s.block.last_tx_id,
            last_position: s.block.last_position,
            sealed_at: s.block.sealed_at,
        };
        seal_hash = chain::seal(&seal_hash, &fields);
        s.hash = chain::hex(&seal_hash);
        m.chain_head = s.block.chain_head.clone();
        std::fs::write(&manifest_path, serde_json::to_string(&m).unwrap()).unwrap();
        rehash_manifest(dir, block);
    }
}

fn chain_hash_of(hex: &str) -> stockledger::seal::chain::Hash {
    stockledger::seal::chain::from_hex(hex).unwrap()
}

#[tokio::test]
async fn a_resealed_forgery_is_caught_by_the_databases_seal_and_the_digest() {
    let db = sealed_ledger().await;
    let d = digest(&db).await;
    let dir = archived_in_three(&db).await;
    reseal_forged(&dir);
    // The files agree with themselves: each segment reads back clean.
    let forged = open(&dir);
    for s in &forged.segments {
        archive::read::check_segment(&forged, s).await.unwrap();
    }
    let refused =
        stockledger::audit::audit_from_archive(db.store.pool(), &forged.clone().whole().unwrap())
            .await
            .expect_err("a forged archive is not replayed")
            .to_string();
    assert!(
        refused.contains("sealed differently in the database"),
        "{refused}"
    );
    let at = position_of(&db, &receipt_stream("in-1"), 1).await;
    let proof = archive::prove::prove(db.store.pool(), &forged, at, None).await;
    assert!(
        matches!(proof, Err(seal::proof::ProveError::Archive(_))),
        "{proof:?}"
    );
    let report = verify_across(&db, &dir, None).await;
    assert!(report.findings.iter().any(|f| matches!(f,
        Finding::ArchiveProblem { what, .. } if what.contains("sealed differently"))));
    let report = verify_across(&db, &dir, Some(&d)).await;
    assert_eq!(report.digest_matches, Some(false));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn nothing_is_archived_that_does_not_verify() {
    let db = sealed_ledger().await;
    let dir = archive_dir(&db);
    as_superuser(
        &db,
        &format!(
            "UPDATE events SET quantities = '{{99}}' WHERE stream = '{}'",
            receipt_stream("in-2")
        ),
    )
    .await;
    match archive::write::archive(db.store.pool(), &dir, None).await {
        Err(ArchiveError::NotVerified { block: 1, why }) => {
            assert!(why.contains("does not hash to its chain row"), "{why}")
        }
        other => panic!("archived an altered block: {other:?}"),
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name != ".archive.lock")
        .collect();
    assert!(left.is_empty(), "nothing is left behind: {left:?}");
    // Events not sealed yet are not archived either.
    let clean = TestDb::new().await;
    clean.receive("in-1", "apple", 1).await;
    seal_all(&clean).await;
    clean.receive("in-2", "apple", 1).await;
    let dir2 = archive_dir(&clean);
    let written = archive_through(&clean, &dir2, None).await;
    assert_eq!((written.len(), written[0].events), (1, 1));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

/// Runs the binary on `db` and returns its exit code and standard output.
fn cli(db: &TestDb, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .args(args)
        .env("DATABASE_URL", db.url())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), format!("{stdout}{stderr}"))
}

#[tokio::test]
async fn the_commands_archive_verify_prove_and_audit_across_files() {
    let db = sealed_ledger().await;
    let dir = archive_dir(&db);
    let d = dir.to_str().unwrap();
    let (code, out) = cli(
        &db,
        &["archive", "--dir", d, "--through-block", "2", "--json"],
    );
    assert_eq!(code, 0, "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["segments"][0]["last_block"], 2, "{doc}");
    let (code, out) = cli(&db, &["archive", "--dir", d]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("blocks 3 to 3"), "{out}");
    let (code, out) = cli(&db, &["verify", "--archive", d]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = cli(&db, &["audit", "--from-archive", d]);
    assert_eq!(code, 0, "{out}");
    let digest_file = dir.join("digest.json");
    std::fs::write(
        &digest_file,
        serde_json::to_string(&digest(&db).await).unwrap(),
    )
    .unwrap();
    let (code, proof) = cli(&db, &["prove", "1", "--archive", d]);
    assert_eq!(code, 0, "{proof}");
    let proof_file = dir.join("proof.json");
    std::fs::write(&proof_file, proof).unwrap();
    let (code, out) = cli(
        &db,
        &[
            "verify-proof",
            proof_file.to_str().unwrap(),
            "--digest",
            digest_file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    // A missing segment stops the audit with a message that says where.
    std::fs::remove_file(dir.join(format!(
        "{}{}",
        archive::segment_stem(1, 2),
        archive::MANIFEST_SUFFIX
    )))
    .unwrap();
    let (code, out) = cli(&db, &["audit", "--from-archive", d]);
    assert_ne!(code, 0);
    assert!(out.contains("a segment is missing"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A database with fewer blocks than the archive (another ledger's, or one
/// restored from before the archive) is named; a line longer than any this
/// release writes is refused without being read whole.
#[tokio::test]
async fn an_archive_ahead_of_its_database_and_an_overlong_line_are_named() {
    let db = sealed_ledger().await;
    let dir = archived_in_three(&db).await;
    let younger = TestDb::new().await;
    younger.receive("in-1", "apple", 1).await;
    seal_all(&younger).await;
    let report = verify_across(&younger, &dir, None).await;
    assert!(
        report.findings.iter().any(|f| matches!(f,
            Finding::ArchiveProblem { what, .. } if what.contains("the database has no block 3"))),
        "{:?}",
        report.findings
    );
    let (_, rows_path) = segment_files(&dir, 2);
    let mut rows = read_rows(&rows_path);
    rows[0]["event"]["metadata"]["actor"] =
        Value::String("x".repeat(stockledger::limits::MAX_ARCHIVE_LINE_BYTES));
    write_rows(&rows_path, &rows);
    let report = verify_across(&db, &dir, None).await;
    assert!(
        report.findings.iter().any(|f| matches!(f,
            Finding::ArchiveProblem { what, .. } if what.contains("line 1 is longer than"))),
        "{:?}",
        report.findings
    );
    let _ = std::fs::remove_dir_all(&dir);
}
