//! `stockledger archive`: writes the sealed blocks not archived yet into new
//! segments.
//!
//! Nothing is written that does not verify first: every row read from the
//! database goes through `check::SegmentCheck` against its block's seal
//! before its line is handed to the file. The rows' file is written under a
//! temporary name, synced, renamed, and read back whole against its
//! manifest (`read::check_segment`); only then is the manifest written, so a
//! segment whose manifest exists was complete and checked. A crash leaves at
//! most a rows' file without a manifest, which the next run sets aside
//! (never deletes) and writes again. A run whose directory ends before
//! events that left the database (a manifest lost after a detach: its rows
//! file may be the only copy) touches nothing and says what is missing.
//! The directory and its files are the writer's alone (`files`).

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;
use sha2::{Digest as _, Sha256};
use tokio::sync::mpsc;

use crate::limits::{
    ARCHIVE_QUEUE_BATCHES, MAX_ARCHIVE_SEGMENT_BLOCKS, MAX_ARCHIVE_SEGMENT_EVENTS,
    VERIFY_WINDOW_ROWS,
};
use crate::seal::archive::check::{self, Seal, SegmentCheck};
use crate::seal::archive::files;
use crate::seal::archive::read::{check_segment, Segment};
use crate::seal::archive::{
    segment_stem, Archive, ArchiveError, ArchivedSeal, Manifest, RowLine, ARCHIVE_FORMAT,
    MANIFEST_SUFFIX, ROWS_SUFFIX,
};
use crate::seal::chain::{self, Hash, ZERO};
use crate::seal::proof::SEAL_COLUMNS;
use crate::store::read::event_json;
use crate::store::rows::{recorded_event, EVENT_COLUMNS};
use crate::store::{pool, StoreError};

/// Archives every sealed block after the archive's last, up to
/// `through_block` when given, into segments of at most
/// `MAX_ARCHIVE_SEGMENT_BLOCKS` blocks and `MAX_ARCHIVE_SEGMENT_EVENTS`
/// events; returns the manifests written. Refused, with nothing written,
/// when the directory is not whole or a block does not verify.
pub async fn archive(
    pool: &deadpool_postgres::Pool,
    dir: &Path,
    through_block: Option<i64>,
) -> Result<Vec<Manifest>, ArchiveError> {
    files::prepare_dir(dir)?;
    let _held = lock(dir)?;
    let archive = Archive::open(dir)?.whole()?;
    // First: behind the cut, a rows file no manifest names may hold events
    // the database no longer has, and it stays exactly where it is, under
    // the name its manifest will name once restored.
    refuse_behind_the_cut(&*pool::get(pool).await?, &archive).await?;
    let set_aside = tidy(&archive)?;
    for path in &set_aside {
        tracing::warn!(
            file = %path.display(),
            "a rows file no manifest names was set aside, not deleted: it may be the only copy of its events"
        );
    }
    write_after(pool, &archive, through_block)
        .await
        .map_err(|error| ArchiveError::set_aside(set_aside, error))
}

/// Writes the segments after `archive`'s last (see `archive`).
async fn write_after(
    pool: &deadpool_postgres::Pool,
    archive: &Archive,
    through_block: Option<i64>,
) -> Result<Vec<Manifest>, ArchiveError> {
    let client = pool::get(pool).await?;
    let seals = seals_after(&client, archive, through_block).await?;
    let mut start = Start::after(archive)?;
    let mut written = Vec::new();
    let mut rest = &seals[..];
    while !rest.is_empty() {
        let n = segment_len(rest);
        let (segment, after) = rest.split_at(n);
        let manifest = write_segment(&client, archive, &start, segment).await?;
        let last = manifest.seals.last().expect("a segment has blocks");
        start = Start::after_segment(&manifest, last)?;
        written.push(manifest);
        rest = after;
    }
    Ok(written)
}

/// Where the next segment must start: the chain row after the archive's
/// last, the stored chain hash at it, and the last seal hash (zeros before
/// block 1). The writer checks the database's rows from there, so a segment
/// follows on from the one before as `verify --archive` will walk them.
struct Start {
    first_seq: i64,
    chain: Hash,
    previous_seal: Hash,
}

impl Start {
    fn after(archive: &Archive) -> Result<Start, ArchiveError> {
        match archive.segments.last() {
            None => Ok(Start {
                first_seq: 1,
                chain: ZERO,
                previous_seal: ZERO,
            }),
            Some(s) => Start::after_segment(&s.manifest, &s.last_seal),
        }
    }

    fn after_segment(m: &Manifest, last: &ArchivedSeal) -> Result<Start, ArchiveError> {
        let hash = |h: &str| {
            chain::from_hex(h).ok_or_else(|| ArchiveError::Unreadable {
                path: m.rows_file.clone(),
                why: format!("{h:?} is not a hash"),
            })
        };
        Ok(Start {
            first_seq: m.last_seq + 1,
            chain: hash(&m.chain_head)?,
            previous_seal: hash(&last.hash)?,
        })
    }
}

/// Refuses to write when events after the archive's last left the
/// database already (`archive --detach` took them out): the segments that
/// held them are missing from the directory, and the database cannot write
/// them again. Nothing is written, moved or removed.
async fn refuse_behind_the_cut(
    client: &deadpool_postgres::ClientWrapper,
    archive: &Archive,
) -> Result<(), ArchiveError> {
    let last = archive.last_cursor();
    match crate::store::cut::cut_and_floor_any_schema(&**client).await? {
        Some((cut, _)) if last < cut => Err(ArchiveError::BehindTheCut {
            last_block: archive.last_block(),
            cut: cut.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Tidies what a run that stopped half-way left: its temporary files are
/// removed (a `.partial` rows file was never renamed, so no manifest and no
/// detach ever counted on it), and a complete rows file no manifest names is
/// set aside (`files::set_aside`), never deleted: the database still holds
/// its events (`refuse_behind_the_cut` ran first), but it may be what an
/// operator meant to keep. Returns what was set aside. Only names this
/// writer makes are touched; anything else in the directory is left as it
/// is.
fn tidy(archive: &Archive) -> Result<Vec<PathBuf>, ArchiveError> {
    let dir = &archive.dir;
    let named: std::collections::HashSet<&str> = archive
        .segments
        .iter()
        .map(|s| s.manifest.rows_file.as_str())
        .collect();
    let entries = std::fs::read_dir(dir).map_err(|e| ArchiveError::io(dir, e))?;
    let mut set_aside = Vec::new();
    for entry in entries {
        let name = entry.map_err(|e| ArchiveError::io(dir, e))?.file_name();
        let name = name.to_string_lossy();
        let written = name.strip_suffix(".partial").unwrap_or(&name);
        let ours =
            is_segment_file(written, ROWS_SUFFIX) || is_segment_file(written, MANIFEST_SUFFIX);
        if !ours {
            continue;
        }
        if name.ends_with(".partial") {
            let path = dir.join(&*name);
            std::fs::remove_file(&path).map_err(|e| ArchiveError::io(&path, e))?;
        } else if name.ends_with(ROWS_SUFFIX) && !named.contains(&*name) {
            set_aside.push(files::set_aside(dir, &name)?);
        }
    }
    Ok(set_aside)
}

/// Whether `name` is `segment_stem(..)` followed by `suffix`.
fn is_segment_file(name: &str, suffix: &str) -> bool {
    let Some(stem) = name.strip_suffix(suffix) else {
        return false;
    };
    let Some(blocks) = stem.strip_prefix("blocks-") else {
        return false;
    };
    let digits = |s: &str| s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit());
    matches!(blocks.split_once('-'), Some((a, b)) if digits(a) && digits(b))
}

/// Holds `DIR/.archive.lock` for the run: two runs on one directory would
/// write overlapping segments, and one's clean-up would take the other's
/// files. The kernel lets go of it when the process ends, however it ends.
fn lock(dir: &Path) -> Result<std::fs::File, ArchiveError> {
    let path = dir.join(LOCK_FILE);
    let file = files::open_lock(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(ArchiveError::unreadable(
            dir,
            "another `stockledger archive` is writing this directory",
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(ArchiveError::io(&path, e)),
    }
}

/// The lock file's name in an archive directory.
const LOCK_FILE: &str = ".archive.lock";

/// How many of `seals` (at least one) the next segment takes.
fn segment_len(seals: &[ArchivedSeal]) -> usize {
    let mut events = 0u64;
    let mut n = 0;
    for s in seals.iter().take(MAX_ARCHIVE_SEGMENT_BLOCKS) {
        let more = (s.block.last_seq - s.block.first_seq + 1) as u64;
        if n > 0 && events + more > MAX_ARCHIVE_SEGMENT_EVENTS {
            break;
        }
        events += more;
        n += 1;
    }
    n.max(1)
}

/// The database's seals after the archive's last block, checked to follow
/// on from it.
async fn seals_after(
    client: &deadpool_postgres::ClientWrapper,
    archive: &Archive,
    through_block: Option<i64>,
) -> Result<Vec<ArchivedSeal>, ArchiveError> {
    let from = archive.last_block();
    // The archive's last block is read too, to hold it against the archive.
    let through = through_block.unwrap_or(i64::MAX).max(from);
    let rows = client
        .query(
            &format!(
                "SELECT {SEAL_COLUMNS} FROM seals WHERE block >= $1 AND block <= $2 ORDER BY block"
            ),
            &[&from, &through],
        )
        .await
        .map_err(StoreError::from)?;
    let mut seals = rows
        .iter()
        .map(ArchivedSeal::from_row)
        .collect::<Result<Vec<_>, StoreError>>()?;
    if from > 0 {
        let last = archive.segments.last().map(|s| &s.last_seal);
        let same = match (seals.first(), last) {
            (Some(db), Some(archived)) => db == archived,
            _ => false,
        };
        if !same {
            return Err(ArchiveError::NotThisLedger { block: from });
        }
        seals.remove(0);
    }
    Ok(seals)
}

/// The SHA-256 (hex) and size of a rows' file once written.
type Written = tokio::task::JoinHandle<Result<(String, u64), ArchiveError>>;

/// The rows' file being written, on a thread of its own: lines in, the
/// SHA-256 and size of the compressed bytes out.
fn spawn_writer(path: PathBuf) -> (mpsc::Sender<Vec<u8>>, Written) {
    let (send, mut receive) = mpsc::channel::<Vec<u8>>(ARCHIVE_QUEUE_BATCHES);
    let handle = tokio::task::spawn_blocking(move || {
        let io = |e| ArchiveError::io(&path, e);
        let file = files::create_new(&path)?;
        let mut gz = GzEncoder::new(
            HashingWriter {
                inner: std::io::BufWriter::new(file),
                sha: Sha256::new(),
                bytes: 0,
            },
            Compression::default(),
        );
        while let Some(lines) = receive.blocking_recv() {
            gz.write_all(&lines).map_err(io)?;
        }
        let mut hashing = gz.finish().map_err(io)?;
        hashing.inner.flush().map_err(io)?;
        let file = hashing.inner.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        Ok((chain::hex(&hashing.sha.finalize().into()), hashing.bytes))
    });
    (send, handle)
}

struct HashingWriter<W> {
    inner: W,
    sha: Sha256,
    bytes: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes one segment of `seals` (consecutive blocks): checks, writes, reads
/// back, then writes the manifest.
async fn write_segment(
    client: &deadpool_postgres::ClientWrapper,
    archive: &Archive,
    start: &Start,
    seals: &[ArchivedSeal],
) -> Result<Manifest, ArchiveError> {
    let (first, last) = (&seals[0].block, &seals[seals.len() - 1].block);
    let stem = segment_stem(first.block, last.block);
    let rows_file = format!("{stem}{ROWS_SUFFIX}");
    let partial = archive.dir.join(format!("{rows_file}.partial"));
    let parsed = seals
        .iter()
        .map(Seal::parse)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|(block, why)| ArchiveError::NotVerified { block, why })?;
    let mut walk = SegmentCheck::new(parsed, start.first_seq, start.chain, start.previous_seal);
    let (send, writer) = spawn_writer(partial.clone());
    let copied = copy_rows(client, &mut walk, first.first_seq, last.last_seq, &send).await;
    drop(send);
    let written = writer
        .await
        .unwrap_or_else(|e| Err(ArchiveError::unreadable(&partial, e)));
    // A failed write (a full disk) is the error to report: it is why the
    // rows stopped, not the other way round.
    let (range, (sha256, bytes)) = match (copied, written) {
        (Ok(range), Ok(w)) => (range, w),
        (_, Err(e)) | (Err(e), _) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    let rows_path = archive.dir.join(&rows_file);
    std::fs::rename(&partial, &rows_path).map_err(|e| ArchiveError::io(&rows_path, e))?;
    let manifest = Manifest {
        format: ARCHIVE_FORMAT.to_owned(),
        rows_file,
        sha256,
        bytes,
        events: (last.last_seq - first.first_seq + 1) as u64,
        first_block: first.block,
        last_block: last.block,
        first_seq: first.first_seq,
        last_seq: last.last_seq,
        min_position: range.0,
        max_position: range.1,
        chain_before: chain::hex(&start.chain),
        chain_head: last.chain_head.clone(),
        seals: seals.to_vec(),
        written_at: chrono::Utc::now(),
    };
    let name = format!("{stem}{MANIFEST_SUFFIX}");
    // Written under a temporary name first: the read-back reads the seals
    // from it, and only a segment read back whole gets its real name.
    let manifest_partial = archive.dir.join(format!("{name}.partial"));
    write_synced(&manifest_partial, &manifest)?;
    let segment = Segment {
        manifest: Manifest {
            seals: Vec::new(),
            ..manifest.clone()
        },
        last_seal: seals[seals.len() - 1].clone(),
        manifest_path: manifest_partial.clone(),
        rows_path,
        name: name.as_str().into(),
    };
    if let Err(why) = check_segment(archive, &segment).await {
        let _ = std::fs::remove_file(&segment.rows_path);
        let _ = std::fs::remove_file(&manifest_partial);
        let why = format!("read back: {why}");
        return Err(ArchiveError::unreadable(&segment.rows_path, why));
    }
    let path = archive.dir.join(&name);
    let io = |e| ArchiveError::io(&path, e);
    std::fs::rename(&manifest_partial, &path).map_err(io)?;
    // The rename is durable once the directory is.
    std::fs::File::open(&archive.dir)
        .and_then(|d| d.sync_all())
        .map_err(io)?;
    Ok(manifest)
}

fn write_synced(path: &Path, m: &Manifest) -> Result<(), ArchiveError> {
    let io = |e| ArchiveError::io(path, e);
    let mut file = files::create_new(path)?;
    let text = serde_json::to_vec_pretty(m).expect("a manifest serializes");
    file.write_all(&text).map_err(io)?;
    file.sync_all().map_err(io)
}

/// Reads chain rows `first ..= last` with their events, window by window,
/// checks each, and sends its line to the writer; returns the lowest and
/// highest position.
async fn copy_rows(
    client: &deadpool_postgres::ClientWrapper,
    walk: &mut SegmentCheck,
    first: i64,
    last: i64,
    send: &mpsc::Sender<Vec<u8>>,
) -> Result<(i64, i64), ArchiveError> {
    let sql = format!(
        "SELECT e.*, c.seq, c.hash FROM event_chain c
         LEFT JOIN (SELECT {EVENT_COLUMNS} FROM events) e ON e.position = c.position
         WHERE c.seq >= $1 AND c.seq < $2 ORDER BY c.seq"
    );
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    let mut from = first;
    while from <= last {
        let to = (from + VERIFY_WINDOW_ROWS).min(last + 1);
        let rows = client
            .query(&sql, &[&from, &to])
            .await
            .map_err(StoreError::from)?;
        let mut lines = Vec::with_capacity(rows.len() * 600);
        for r in &rows {
            let block = walk.block();
            let refused = |why: String| ArchiveError::NotVerified { block, why };
            let line = row_line(r).map_err(refused)?;
            let position = check::cursor(&line).1;
            let stored = chain::from_bytes(r.get(r.len() - 1))
                .ok_or_else(|| refused(format!("chain row {}: not 32 bytes", line.chain_seq)))?;
            let leaf = check::leaf(&line).map_err(refused)?;
            walk.row(line.chain_seq, stored, leaf, check::cursor(&line))
                .map_err(|(block, why)| ArchiveError::NotVerified { block, why })?;
            (min, max) = (min.min(position), max.max(position));
            serde_json::to_writer(&mut lines, &line).expect("a row serializes");
            lines.push(b'\n');
        }
        if rows.is_empty() {
            break;
        }
        if send.send(lines).await.is_err() {
            break; // The writer failed: its error is the one to report.
        }
        from = to;
    }
    walk.finish()
        .map_err(|(block, why)| ArchiveError::NotVerified { block, why })?;
    Ok((min, max))
}

/// A row of `event_chain` joined with its event, as a line of the file.
fn row_line(r: &tokio_postgres::Row) -> Result<RowLine, String> {
    let chain_seq: i64 = r.get(r.len() - 2);
    if r.get::<_, Option<i64>>(0).is_none() {
        return Err(format!(
            "chain row {chain_seq}: its event is gone from the log"
        ));
    }
    let e = recorded_event(r).map_err(|e| format!("chain row {chain_seq}: {e}"))?;
    Ok(RowLine {
        chain_seq,
        hash: crate::domain::fingerprint::hex_bytes(r.get::<_, &[u8]>(r.len() - 1)),
        tx_id: e.tx_id,
        event: event_json(&e),
    })
}
