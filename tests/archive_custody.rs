//! The archive's custody of history (issue 46, cases 1 to 4): once
//! `archive --detach` ran, its files are the only copy of what left, so no
//! run of the writer may delete a complete rows file, a manifest whose
//! ranges lie may not turn off the check before a detach, nobody else may
//! plant a file or a link in the directory, and the refusals name what an
//! operator can type.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::*;
use stockledger::projection::snapshot::Snapshots;
use stockledger::seal::archive::{self, detach::DetachReport, Archive, ArchiveError};

/// Partitions of 16 rows: a few dozen events span several.
const SMALL: i64 = 16;

async fn small_partitions() -> TestDb {
    let db = TestDb::new().await;
    cut_log_anew(&mut db.client().await, SMALL, 0).await;
    write_mixed(&db, "a", 30).await;
    seal_all(&db).await;
    db.project_all().await;
    db
}

fn archive_dir(db: &TestDb) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{}-custody", db.name));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

async fn detach(db: &TestDb, dir: &Path) -> Result<DetachReport, ArchiveError> {
    let files = Archive::open(dir).unwrap().whole().unwrap();
    archive::detach::detach(db.owner_store().pool(), &files, &Snapshots).await
}

fn files_named(dir: &Path, part: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(part))
        .collect();
    found.sort();
    found
}

/// Case 1: after a detach, a manifest removed (a partial restore, a sync
/// tool, a slip) leaves its rows file the only copy. The next `archive`
/// deleted it. Now it touches nothing and says what is missing; put back,
/// the archive verifies across the database again.
#[tokio::test]
async fn a_rows_file_that_may_be_the_only_copy_is_never_touched() {
    let db = small_partitions().await;
    let dir = archive_dir(&db);
    archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    let report = detach(&db, &dir).await.unwrap();
    assert!(
        report.detached.iter().any(|d| d.parent == "events"),
        "{report:?}"
    );
    let manifest = files_named(&dir, ".manifest.json").remove(0);
    let rows = files_named(&dir, ".rows.jsonl.gz").remove(0);
    let (manifest_text, rows_bytes) = (
        std::fs::read(&manifest).unwrap(),
        std::fs::read(&rows).unwrap(),
    );
    std::fs::remove_file(&manifest).unwrap();

    let refused = archive::write::archive(db.store.pool(), &dir, None).await;
    let why = match refused {
        Err(e @ ArchiveError::BehindTheCut { .. }) => e.to_string(),
        other => panic!("expected a refusal: the archive is behind the cut, got {other:?}"),
    };
    assert!(why.contains("left the database"), "{why}");
    assert_eq!(std::fs::read(&rows).unwrap(), rows_bytes, "untouched");
    assert!(files_named(&dir, ".set-aside-").is_empty());

    // From the command line the refusal is an error, and the file stays.
    let (code, out) = cli_json(
        &db.url(),
        &["archive", "--dir", dir.to_str().unwrap(), "--detach"],
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out["message"].as_str().unwrap().contains("are missing"),
        "{out}"
    );
    assert_eq!(std::fs::read(&rows).unwrap(), rows_bytes, "untouched");

    // The manifest restored, the files and the database are one ledger
    // again, and a run that finds nothing to write touches nothing.
    std::fs::write(&manifest, manifest_text).unwrap();
    let files = Archive::open(&dir).unwrap().whole().unwrap();
    let across = stockledger::seal::verify::verify_across(db.store.pool(), None, &files)
        .await
        .unwrap();
    assert!(across.clean(), "{:?}", across.findings);
    archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&rows).unwrap(), rows_bytes);
}

/// A crash between a rows file's rename and its manifest's leaves a rows
/// file no manifest names while the database still holds its events: set
/// aside (never deleted, it is a complete file) and written again.
#[tokio::test]
async fn a_crash_leftover_is_set_aside_and_written_again() {
    let db = small_partitions().await;
    let dir = archive_dir(&db);
    archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    let manifest = files_named(&dir, ".manifest.json").remove(0);
    std::fs::remove_file(&manifest).unwrap();
    let partial = dir.join("blocks-000000000001-000000000009.rows.jsonl.gz.partial");
    std::fs::write(&partial, b"half").unwrap();
    let written = archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    assert_eq!(written.len(), 1);
    assert!(!partial.exists(), "a .partial was never the only copy");
    assert_eq!(files_named(&dir, ".set-aside-").len(), 1);
    assert!(manifest.exists());
}

/// Case 2: a manifest's position range is under no hash. One that says its
/// segment holds nothing of the partition, over a rows file emptied, must
/// not let the partition leave: the segments to check are chosen from the
/// database's chain and seals, and a lying range is named.
#[tokio::test]
async fn a_manifest_that_lies_about_its_positions_stops_the_detach() {
    let db = small_partitions().await;
    let dir = archive_dir(&db);
    archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    let before = attached_partitions(&db, "events").await;
    let manifest = files_named(&dir, ".manifest.json").remove(0);
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["min_position"] = 100_000.into();
    m["max_position"] = 100_000.into();
    std::fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();

    // The range alone: named as a lie by the check every detach runs.
    let files = Archive::open(&dir).unwrap().whole().unwrap();
    let why = archive::read::check_segment(&files, &files.segments[0])
        .await
        .unwrap_err();
    assert!(why.contains("the manifest says 100000 to 100000"), "{why}");

    // With the rows file emptied too (an empty gzip), nothing leaves.
    let rows = files_named(&dir, ".rows.jsonl.gz").remove(0);
    let mut empty = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::flush(&mut empty).unwrap();
    std::fs::write(&rows, empty.finish().unwrap()).unwrap();
    let (code, out) = cli_json(
        &db.url(),
        &["archive", "--dir", dir.to_str().unwrap(), "--detach"],
    );
    assert_ne!(code, Some(0), "{out}");
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("stays in the database"),
        "{out}"
    );
    assert_eq!(attached_partitions(&db, "events").await, before);
    let (code, out) = cli_json(&db.url(), &["events"]);
    assert_eq!(code, Some(0), "the log is whole: {out}");
}

/// Case 3: a directory another user may write is refused, and so is one
/// that belongs to someone else; a link planted where the writer opens a
/// file is not written through; every file is the owner's alone (0600).
#[tokio::test]
async fn the_archive_directory_is_the_writers_alone() {
    let db = small_partitions().await;
    let dir = archive_dir(&db);
    std::fs::create_dir(&dir).unwrap();

    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let open = archive::write::archive(db.store.pool(), &dir, None).await;
    assert!(
        matches!(&open, Err(ArchiveError::Unreadable { why, .. }) if why.contains("chmod go-w")),
        "{open:?}"
    );
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
    let group = archive::write::archive(db.store.pool(), &dir, None).await;
    assert!(
        matches!(&group, Err(ArchiveError::Unreadable { why, .. }) if why.contains("mode is 770")),
        "{group:?}"
    );
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();

    // As root (CI), a directory that belongs to another user.
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    if root {
        std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
        let theirs = archive::write::archive(db.store.pool(), &dir, None).await;
        assert!(
            matches!(&theirs, Err(ArchiveError::Unreadable { why, .. }) if why.contains("belongs to user 65534")),
            "{theirs:?}"
        );
        std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
    }

    // A link where the lock file goes: the run fails, the target is whole.
    let victim = std::env::temp_dir().join(format!("{}-victim", db.name));
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(".archive.lock")).unwrap();
    let linked = archive::write::archive(db.store.pool(), &dir, None).await;
    assert!(matches!(linked, Err(ArchiveError::Io { .. })), "{linked:?}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    std::fs::remove_file(dir.join(".archive.lock")).unwrap();

    // A link where a temporary file goes is removed, never written through.
    let stem = "blocks-000000000001-000000000009";
    for name in [
        format!("{stem}.rows.jsonl.gz.partial"),
        format!("{stem}.manifest.json.partial"),
    ] {
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
    }
    let written = archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    assert!(!written.is_empty());
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    for f in std::fs::read_dir(&dir).unwrap() {
        let f = f.unwrap();
        let mode = f.metadata().unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "{:?} is {mode:o}", f.file_name());
    }
    std::fs::remove_file(&victim).unwrap();

    // A directory the writer makes is its owner's alone.
    let fresh = dir.join("fresh");
    archive::write::archive(db.store.pool(), &fresh, None)
        .await
        .unwrap();
    let mode = std::fs::metadata(&fresh).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
}

/// Case 4: `prove` of an event that left answers `HISTORY_ARCHIVED`, not
/// `INTERNAL`; the audit's refusal names the flag `audit` takes.
#[tokio::test]
async fn refusals_after_a_detach_name_their_code_and_flag() {
    let db = small_partitions().await;
    let dir = archive_dir(&db);
    archive::write::archive(db.store.pool(), &dir, None)
        .await
        .unwrap();
    detach(&db, &dir).await.unwrap();
    let (code, out) = cli_json(&db.url(), &["prove", "1"]);
    assert_ne!(code, Some(0), "{out}");
    assert_eq!(out["code"], "HISTORY_ARCHIVED", "{out}");
    let (code, out) = cli_json(&db.url(), &["audit"]);
    assert_ne!(code, Some(0), "{out}");
    assert_eq!(out["code"], "HISTORY_ARCHIVED", "{out}");
    let message = out["message"].as_str().unwrap();
    assert!(message.contains("`--from-archive DIR`"), "{message}");
    let dir_arg = dir.to_str().unwrap();
    let (code, out) = cli_json(&db.url(), &["audit", "--from-archive", dir_arg]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = cli_json(&db.url(), &["prove", "1", "--archive", dir_arg]);
    assert_eq!(code, Some(0), "{out}");
}
