//! Reading an archive directory: its manifests at once, its rows streamed.
//!
//! Nothing here trusts the files. What does not read, does not follow on,
//! or does not hash as its manifest says is a `Problem` naming the file;
//! `verify` reports each and goes on, so one altered file does not hide the
//! rest. Whether the rows hash to the seals is the walk's to say.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flate2::read::GzDecoder;
use sha2::{Digest as _, Sha256};
use tokio::sync::mpsc;

use crate::domain::RecordedEvent;
use crate::limits::{
    ARCHIVE_BATCH_ROWS, ARCHIVE_QUEUE_BATCHES, MAX_ARCHIVE_LINE_BYTES, MAX_ARCHIVE_MANIFEST_BYTES,
    MAX_ARCHIVE_SEGMENTS,
};
use crate::seal::archive::check::{self, Seal};
use crate::seal::archive::{
    ArchiveError, ArchivedSeal, Manifest, RowLine, ARCHIVE_FORMAT, MANIFEST_SUFFIX, ROWS_SUFFIX,
};
use crate::seal::chain::{self, Hash};

/// Something in the directory that is not as written, naming its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub what: String,
}

/// One segment: its manifest and where its rows are. The manifest is held
/// without its seals (a segment can hold thousands, an archive thousands of
/// segments): `seals` reads them again when the segment's rows are read,
/// and only the last one, which anchors what follows, is kept.
#[derive(Clone, Debug)]
pub struct Segment {
    pub manifest: Manifest,
    pub last_seal: ArchivedSeal,
    pub manifest_path: PathBuf,
    pub rows_path: PathBuf,
    /// The manifest's file name, which findings name.
    pub name: Arc<str>,
}

impl Segment {
    /// The segment's seals, read again from its manifest, which must still
    /// be the one opened.
    pub fn seals(&self) -> Result<Vec<ArchivedSeal>, String> {
        let m = read_manifest(&self.manifest_path)?;
        let same = m.seals.last() == Some(&self.last_seal)
            && (m.first_block, m.sha256.as_str())
                == (self.manifest.first_block, self.manifest.sha256.as_str());
        if !same {
            return Err("its manifest changed while it was read".into());
        }
        Ok(m.seals)
    }
}

/// An archive directory as opened: its segments in block order, and what
/// did not read or does not follow on.
#[derive(Clone, Debug)]
pub struct Archive {
    pub dir: PathBuf,
    pub segments: Vec<Segment>,
    pub problems: Vec<Problem>,
}

/// A row read from a segment, with its leaf (hashed on the reading
/// thread, off the async workers).
#[derive(Clone, Debug)]
pub struct ArchivedRow {
    pub file: Arc<str>,
    pub line: RowLine,
    pub leaf: Result<Hash, String>,
}

/// What the row stream carries: a segment's seals (named by its manifest)
/// ahead of its rows, its rows in batches, and what is wrong with it.
#[derive(Debug)]
pub enum Item {
    Seals(Arc<str>, Vec<ArchivedSeal>),
    Rows(Vec<ArchivedRow>),
    Problem(Problem),
}

impl ArchivedRow {
    pub fn position(&self) -> i64 {
        check::cursor(&self.line).1
    }

    /// The stored chain hash, or why it is not one.
    pub fn stored(&self) -> Result<Hash, String> {
        chain::from_hex(&self.line.hash).ok_or_else(|| "not 64 hex digits".to_owned())
    }

    /// The event, read as this release reads the log.
    pub fn recorded(&self) -> Result<RecordedEvent, String> {
        crate::store::read::event_from_json(&self.line.event, self.line.tx_id)
    }
}

impl Archive {
    /// Opens `dir`: reads every manifest, orders the segments by block, and
    /// notes every one that does not read or does not follow the one before
    /// (a missing segment is a gap in the blocks). A directory that does not
    /// exist is an error: a mistyped path must not read as an empty archive.
    pub fn open(dir: &Path) -> Result<Archive, ArchiveError> {
        let mut archive = Archive {
            dir: dir.to_owned(),
            segments: Vec::new(),
            problems: Vec::new(),
        };
        let entries = std::fs::read_dir(dir).map_err(|e| ArchiveError::io(dir, e))?;
        let mut names = Vec::new();
        for entry in entries {
            let name = entry.map_err(|e| ArchiveError::io(dir, e))?.file_name();
            let name = name.to_string_lossy().into_owned();
            if name.ends_with(MANIFEST_SUFFIX) {
                names.push(name);
            }
            if names.len() > MAX_ARCHIVE_SEGMENTS {
                return Err(ArchiveError::unreadable(
                    dir,
                    format!("more than {MAX_ARCHIVE_SEGMENTS} segments"),
                ));
            }
        }
        names.sort();
        for name in names {
            let manifest_path = dir.join(&name);
            match read_manifest(&manifest_path) {
                Ok(mut manifest) => {
                    let seals = std::mem::take(&mut manifest.seals);
                    archive.segments.push(Segment {
                        rows_path: dir.join(&manifest.rows_file),
                        last_seal: seals.into_iter().last().expect("a consistent manifest"),
                        manifest_path,
                        manifest,
                        name: name.into(),
                    })
                }
                Err(what) => archive.problems.push(Problem { file: name, what }),
            }
        }
        archive.segments.sort_by_key(|s| s.manifest.first_block);
        archive.check_sequence();
        Ok(archive)
    }

    /// Each segment starts at the block after the one before, from block 1.
    fn check_sequence(&mut self) {
        let mut next_block = 1;
        for s in &self.segments {
            let m = &s.manifest;
            if m.first_block != next_block {
                let what = if m.first_block > next_block {
                    format!(
                        "it starts at block {}, but blocks {next_block} to {} are in no segment: a segment is missing",
                        m.first_block,
                        m.first_block - 1
                    )
                } else {
                    format!(
                        "it starts at block {}, which an earlier segment holds",
                        m.first_block
                    )
                };
                self.problems.push(Problem {
                    file: s.name.to_string(),
                    what,
                });
            }
            next_block = m.last_block + 1;
        }
    }

    /// The last block and chain row archived (0 when none).
    pub fn last_block(&self) -> i64 {
        self.segments.last().map_or(0, |s| s.manifest.last_block)
    }

    /// The cursor of the last archived event in safe commit order (the
    /// start of the log when nothing is archived): the sealer chains in that
    /// order, so the archive holds exactly the events at or before it.
    pub fn last_cursor(&self) -> crate::store::Cursor {
        self.segments
            .last()
            .map_or(crate::store::Cursor::START, |s| crate::store::Cursor {
                tx_id: s.last_seal.block.last_tx_id,
                position: s.last_seal.block.last_position,
            })
    }

    pub fn last_seq(&self) -> i64 {
        self.segments.last().map_or(0, |s| s.manifest.last_seq)
    }

    /// The archive, refused unless every segment reads, follows on and has
    /// its rows file (`verify --archive` says what is wrong).
    pub fn whole(self) -> Result<Archive, ArchiveError> {
        let gone = self.segments.iter().find(|s| !s.rows_path.exists());
        let problem = self.problems.first().cloned().or_else(|| {
            gone.map(|s| Problem {
                file: s.name.to_string(),
                what: format!("its rows file {} is gone", s.manifest.rows_file),
            })
        });
        match problem {
            None => Ok(self),
            Some(p) => Err(ArchiveError::unreadable(
                &self.dir.join(&p.file),
                format!("{} (run `stockledger verify --archive`)", p.what),
            )),
        }
    }

    /// Why the database's seal of the archive's last block (`stored`, its
    /// hash in hex, `None` when the database has no such block) does not
    /// anchor the archive: then the files and the database are not one
    /// ledger's, and checking the files against their own seals proves
    /// nothing about the database's history.
    pub fn unanchored(&self, stored: Option<&str>) -> Option<String> {
        let archived = &self.segments.last()?.last_seal;
        let block = archived.block.block;
        match stored {
            None => Some(format!("the database has no block {block}, the archive's last: it is not this ledger's database, or it was restored from before the archive")),
            Some(hash) if hash != archived.hash => Some(format!(
                "block {block} is sealed differently in the database: the archive is not this ledger's"
            )),
            Some(_) => None,
        }
    }

    /// Holds the archive against the database's seal of its last block
    /// (`unanchored`).
    pub async fn anchor(&self, client: &impl tokio_postgres::GenericClient) -> Result<(), String> {
        let block = self.last_block();
        if block == 0 {
            return Ok(());
        }
        let row = client
            .query_opt("SELECT hash FROM seals WHERE block = $1", &[&block])
            .await
            .map_err(|e| format!("reading block {block}'s seal: {e}"))?;
        let stored = row.map(|r| crate::domain::fingerprint::hex_bytes(r.get::<_, &[u8]>(0)));
        match self.unanchored(stored.as_deref()) {
            None => Ok(()),
            Some(why) => Err(why),
        }
    }

    /// Streams the rows of every segment in chain order, from a thread of
    /// its own, `ARCHIVE_QUEUE_BATCHES` batches ahead at most.
    pub fn rows(&self) -> mpsc::Receiver<Item> {
        self.rows_of(self.segments.clone())
    }

    pub fn rows_of(&self, segments: Vec<Segment>) -> mpsc::Receiver<Item> {
        let (send, receive) = mpsc::channel(ARCHIVE_QUEUE_BATCHES);
        tokio::task::spawn_blocking(move || {
            for s in &segments {
                if read_segment(s, &send).is_err() {
                    return; // The receiver is gone.
                }
            }
        });
        receive
    }
}

fn read_manifest(path: &Path) -> Result<Manifest, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(MAX_ARCHIVE_MANIFEST_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_ARCHIVE_MANIFEST_BYTES {
        return Err(format!("larger than {MAX_ARCHIVE_MANIFEST_BYTES} bytes"));
    }
    let m: Manifest = serde_json::from_str(&text).map_err(|e| format!("not a manifest: {e}"))?;
    if m.format != ARCHIVE_FORMAT {
        return Err(format!("format {:?}, not {ARCHIVE_FORMAT}", m.format));
    }
    if !m.rows_file.ends_with(ROWS_SUFFIX) || m.rows_file.contains(['/', '\\']) {
        return Err(format!(
            "rows file {:?} is not a file beside it",
            m.rows_file
        ));
    }
    consistent(&m)?;
    Ok(m)
}

/// A manifest's counts and ranges are its seals': consecutive blocks from
/// its first to its last, covering its chain rows and nothing else.
fn consistent(m: &Manifest) -> Result<(), String> {
    let (Some(first), Some(last)) = (m.seals.first(), m.seals.last()) else {
        return Err("it holds no seal".into());
    };
    let follows = m.seals.windows(2).all(|w| {
        w[1].block.block == w[0].block.block + 1 && w[1].block.first_seq == w[0].block.last_seq + 1
    });
    let covers = (
        first.block.block,
        last.block.block,
        first.block.first_seq,
        last.block.last_seq,
    ) == (m.first_block, m.last_block, m.first_seq, m.last_seq);
    let counted = i64::try_from(m.events).ok() == Some(m.last_seq - m.first_seq + 1);
    if !(follows && covers && counted) || last.block.chain_head != m.chain_head {
        return Err("its blocks, chain rows and counts do not agree with its seals".into());
    }
    Ok(())
}

/// A reader that hashes and counts the bytes it passes on.
struct Hashing<R> {
    inner: R,
    sha: Sha256,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

type Sent = Result<(), ()>;

/// Reads one segment's rows into `send`; `Err` once the receiver is gone.
fn read_segment(s: &Segment, send: &mpsc::Sender<Item>) -> Sent {
    let problem = |what: String| {
        send.blocking_send(Item::Problem(Problem {
            file: s.name.to_string(),
            what,
        }))
        .map_err(|_| ())
    };
    match s.seals() {
        Ok(seals) => send
            .blocking_send(Item::Seals(s.name.clone(), seals))
            .map_err(|_| ())?,
        Err(what) => return problem(what),
    }
    let file = match std::fs::File::open(&s.rows_path) {
        Ok(f) => f,
        Err(e) => return problem(format!("its rows file {}: {e}", s.manifest.rows_file)),
    };
    let mut hashing = Hashing {
        inner: file,
        sha: Sha256::new(),
        bytes: 0,
    };
    let mut lines = BufReader::new(GzDecoder::new(&mut hashing));
    let mut batch = Vec::with_capacity(ARCHIVE_BATCH_ROWS);
    let mut number = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        number += 1;
        let limit = MAX_ARCHIVE_LINE_BYTES as u64 + 1;
        match (&mut lines).take(limit).read_until(b'\n', &mut buf) {
            Ok(0) => break,
            // A line of the longest length still ends in its newline.
            Ok(n) if n as u64 >= limit && buf.last() != Some(&b'\n') => {
                problem(format!(
                    "line {number} is longer than {MAX_ARCHIVE_LINE_BYTES} bytes"
                ))?;
                break;
            }
            Ok(_) => match serde_json::from_slice::<RowLine>(&buf) {
                Ok(line) => batch.push(ArchivedRow {
                    file: s.name.clone(),
                    leaf: check::leaf(&line),
                    line,
                }),
                Err(e) => problem(format!("line {number} is not a row: {e}"))?,
            },
            Err(e) => {
                problem(format!("its rows file does not decompress: {e}"))?;
                break;
            }
        }
        if batch.len() == ARCHIVE_BATCH_ROWS {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(ARCHIVE_BATCH_ROWS));
            send.blocking_send(Item::Rows(full)).map_err(|_| ())?;
        }
    }
    if !batch.is_empty() {
        send.blocking_send(Item::Rows(batch)).map_err(|_| ())?;
    }
    drop(lines);
    // What was not read yet (after a bad line) still counts for the hash.
    let _ = std::io::copy(&mut hashing, &mut std::io::sink());
    let sha = chain::hex(&hashing.sha.finalize().into());
    if sha != s.manifest.sha256 || hashing.bytes != s.manifest.bytes {
        problem(format!(
            "its rows file was changed after it was written: {} bytes with SHA-256 {sha}, the manifest says {} bytes with {}",
            hashing.bytes, s.manifest.bytes, s.manifest.sha256
        ))?;
    }
    Ok(())
}

/// Rows streamed from an archive, held against the seals
/// (`check::SegmentCheck`): each row's link to its chain row before its
/// batch is handed on, each block's root and seal at its last row, the
/// file's SHA-256 after its last. An `Err` at any point fails the whole
/// read, so a caller acts on what it was handed only once `next` returned
/// `None`: the audit reports nothing before that, and a proof is made only
/// once its block closed.
pub struct CheckedRows {
    rows: mpsc::Receiver<Item>,
    walk: check::SegmentCheck,
    done: bool,
}

impl CheckedRows {
    /// The next batch, checked; `None` after the last, once the last block
    /// was seen whole.
    pub async fn next(&mut self) -> Result<Option<Vec<ArchivedRow>>, String> {
        loop {
            if self.done {
                return Ok(None);
            }
            match self.rows.recv().await {
                None => {
                    self.done = true;
                    self.walk
                        .finish()
                        .map_err(|(b, why)| format!("block {b}: {why}"))?;
                }
                Some(Item::Problem(p)) => return Err(format!("{}: {}", p.file, p.what)),
                Some(Item::Seals(file, seals)) => {
                    let parsed = seals
                        .iter()
                        .map(Seal::parse)
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|(b, why)| format!("{file}: block {b}: {why}"))?;
                    self.walk.extend(parsed);
                }
                Some(Item::Rows(batch)) => {
                    self.check(&batch)?;
                    return Ok(Some(batch));
                }
            }
        }
    }

    fn check(&mut self, batch: &[ArchivedRow]) -> Result<(), String> {
        for r in batch {
            let at = |why: String| format!("{}: {why}", r.file);
            let (stored, leaf) = (r.stored().map_err(at)?, r.leaf.clone().map_err(at)?);
            self.walk
                .row(r.line.chain_seq, stored, leaf, check::cursor(&r.line))
                .map_err(|(b, why)| at(format!("block {b}: {why}")))?;
        }
        Ok(())
    }
}

impl Archive {
    /// Every row of every segment, from block 1, checked as it comes.
    pub fn checked_rows(&self) -> CheckedRows {
        CheckedRows {
            rows: self.rows(),
            walk: check::SegmentCheck::new(Vec::new(), 1, chain::ZERO, chain::ZERO),
            done: false,
        }
    }

    /// The rows of segment `s` alone, checked from where its manifest says
    /// it starts (its seals come with its rows).
    pub fn checked_segment(&self, s: &Segment) -> Result<CheckedRows, String> {
        let m = &s.manifest;
        let chain_before =
            chain::from_hex(&m.chain_before).ok_or("its chain_before is not a hash")?;
        let previous =
            chain::from_hex(&s.seals()?[0].previous).ok_or("a previous seal is not a hash")?;
        Ok(CheckedRows {
            rows: self.rows_of(vec![s.clone()]),
            walk: check::SegmentCheck::new(Vec::new(), m.first_seq, chain_before, previous),
            done: false,
        })
    }
}

/// Checks one segment's rows file against its own manifest, from the file
/// alone: the SHA-256, the row count, every row against the segment's
/// seals, and the manifest's position range against the rows' (no hash
/// covers it, and `prove --archive` looks events up by it). The writer
/// reads every segment back with it, and the detach before a partition
/// leaves.
pub async fn check_segment(archive: &Archive, s: &Segment) -> Result<(), String> {
    let mut rows = archive.checked_segment(s)?;
    let mut events = 0u64;
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    while let Some(batch) = rows.next().await? {
        events += batch.len() as u64;
        for r in &batch {
            (min, max) = (min.min(r.position()), max.max(r.position()));
        }
    }
    let m = &s.manifest;
    if events != m.events {
        return Err(format!("{events} rows, the manifest says {}", m.events));
    }
    if (min, max) != (m.min_position, m.max_position) {
        return Err(format!(
            "its rows hold positions {min} to {max}, the manifest says {} to {}",
            m.min_position, m.max_position
        ));
    }
    Ok(())
}
