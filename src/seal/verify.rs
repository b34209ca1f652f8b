//! `verify`: recomputes the chain and every seal from the log, in one
//! snapshot, and holds them against what the sealer stored and against a
//! digest kept outside.
//!
//! Two recomputations run side by side. The *checked* one starts each link
//! from the hash the chain table stores for the row before, so every
//! altered event is named on its own, not only the first. The *pure* one
//! never looks at stored hashes: it is what the log alone hashes to, and is
//! what a digest is held against. An attacker who rewrites events, chain
//! rows and seals consistently passes the first and fails the second.

use std::collections::VecDeque;

use serde::Serialize;
use tokio_postgres::{IsolationLevel, Row};

use crate::limits::{MAX_VERIFY_FINDINGS, VERIFY_READERS, VERIFY_WINDOW_ROWS};
use crate::seal::chain::{self, Hash, SealFields, ZERO};
use crate::seal::digest::{self, Digest};
use crate::seal::sealer::leaf_of;
use crate::store::rows::{recorded_event, EVENT_COLUMNS};
use crate::store::{pool, StoreError};

use std::sync::Arc;

use crate::seal::archive::check;
/// A seal as stored: its fields, the seal hash before it and its own.
use crate::seal::archive::check::Seal as StoredSeal;
use crate::seal::archive::read::Item;
use crate::seal::archive::{Archive, ArchivedRow, ArchivedSeal};
use crate::seal::proof::SEAL_COLUMNS;

/// What does not match, each naming where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// A chained event is no longer in the log.
    EventMissing { chain_seq: i64, position: i64 },
    /// The event's content no longer hashes to its chain row: it was
    /// changed after it was sealed.
    EventAltered {
        chain_seq: i64,
        position: i64,
        stream: String,
        seq: u32,
        sealed_hash: String,
        now_hash: String,
        /// The archive segment the event was read from (`verify --archive`).
        #[serde(skip_serializing_if = "Option::is_none")]
        archive: Option<String>,
    },
    /// The event's row no longer decodes as an event at all.
    EventUndecodable {
        chain_seq: i64,
        position: i64,
        why: String,
    },
    /// The event no longer follows the one before it in safe commit order:
    /// the log was reordered.
    OutOfOrder { chain_seq: i64, position: i64 },
    /// Chain rows are missing before this one.
    ChainGap { expected: i64, found: i64 },
    /// An event below the sealed cursor that the chain does not cover:
    /// inserted after its neighbours were sealed.
    Uncovered { position: i64 },
    /// A seal that does not agree with the chain it covers, or with the
    /// seal before it.
    SealBroken { block: i64, what: String },
    /// The log no longer hashes to the digest given.
    DigestMismatch { block: i64, what: String },
    /// The digest names a block the log does not have.
    DigestNotInLog { block: i64, sealed_blocks: i64 },
    /// An archive file that does not read, does not follow the one before,
    /// or was changed after it was written (`verify --archive`).
    ArchiveProblem { file: String, what: String },
}

/// What `verify` found.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Chain rows and seals checked.
    pub events: u64,
    pub blocks: u64,
    /// The latest seal as stored.
    pub head: Option<Digest>,
    /// Events in the log not sealed yet (above the sealed cursor).
    pub unsealed: i64,
    /// Whether a digest was given and the log still hashes to it.
    pub digest_matches: Option<bool>,
    /// The first `MAX_VERIFY_FINDINGS` findings in chain order; `more`
    /// counts the rest.
    pub findings: Vec<Finding>,
    pub more: u64,
}

impl Report {
    pub fn clean(&self) -> bool {
        self.findings.is_empty() && self.digest_matches != Some(false)
    }

    fn found(&mut self, f: Finding) {
        if self.findings.len() < MAX_VERIFY_FINDINGS {
            self.findings.push(f);
        } else {
            self.more += 1;
        }
    }
}

/// The pure recomputation: the chain hash and the seal hash the log alone
/// gives, or `None` once an event is missing (nothing after it can be
/// recomputed).
struct Pure {
    chain: Option<Hash>,
    seal: Option<Hash>,
}

/// Walks the chain in order; one block's leaves at a time. Seals are
/// pushed in block order ahead of the rows they end (`push_seal`), and
/// leave once their block was walked: the walk holds the seals of the rows
/// in flight, not every seal of the log.
struct Walk {
    report: Report,
    /// Seals pushed whose blocks were not walked yet, in block order.
    seals: VecDeque<StoredSeal>,
    /// Seals pushed so far, and the last one's block, last row and hash.
    pushed: i64,
    last_pushed: Option<(i64, i64, Hash)>,
    digest: Option<(Digest, Hash, Hash)>,
    /// Blocks walked so far.
    walked: i64,
    leaves: Vec<Option<Hash>>,
    expected_seq: i64,
    /// The stored hash of the row before (the checked chain's base).
    stored_before: Hash,
    pure: Pure,
    cursor_before: Option<(i64, i64)>,
    /// Whether the digest's block was reached and held against it.
    digest_checked: bool,
    /// The chain row whose event was found last.
    last_found: Option<i64>,
}

/// The database's seals, read a page at a time in block order as the walk
/// needs them: the walk holds the seals of the rows in flight, not every
/// seal of the log.
struct SealPages {
    /// The last block read.
    after: i64,
    /// Seals a page; as many as a window has rows.
    page: i64,
    done: bool,
}

impl SealPages {
    fn after(block: i64, page: i64) -> SealPages {
        SealPages {
            after: block,
            page,
            done: false,
        }
    }

    /// Pushes seals until they reach past chain row `through`, or there are
    /// no more.
    async fn push_through(
        &mut self,
        tx: &deadpool_postgres::Transaction<'_>,
        walk: &mut Walk,
        through: i64,
    ) -> Result<(), StoreError> {
        let sql =
            format!("SELECT {SEAL_COLUMNS} FROM seals WHERE block > $1 ORDER BY block LIMIT $2");
        while !self.done && walk.sealed_through() < through {
            let rows = tx.query(&sql, &[&self.after, &self.page]).await?;
            self.done = (rows.len() as i64) < self.page;
            for r in &rows {
                let seal =
                    StoredSeal::parse(&ArchivedSeal::from_row(r)?).map_err(|(block, why)| {
                        StoreError::Corrupt(format!("block {block}: {why}").into())
                    })?;
                self.after = seal.fields.block;
                walk.push_seal(seal);
            }
        }
        Ok(())
    }
}

/// Recomputes the chain and the seals from the log and checks them, and
/// `digest` when given. One REPEATABLE READ snapshot, shared by
/// `VERIFY_READERS` connections that read and hash windows of the chain side
/// by side (`window`); this task walks the windows in order.
pub async fn verify(
    pool: &deadpool_postgres::Pool,
    digest: Option<&Digest>,
) -> Result<Report, StoreError> {
    verify_in_windows(pool, digest, VERIFY_WINDOW_ROWS).await
}

/// `verify` with windows of `window_rows` chain rows (tests use small ones).
pub async fn verify_in_windows(
    pool: &deadpool_postgres::Pool,
    digest: Option<&Digest>,
    window_rows: i64,
) -> Result<Report, StoreError> {
    verify_with(pool, digest, window_rows, None).await
}

/// `verify` across an archive and the database: the archive's segments
/// stand for the blocks they hold, read from the files and never from the
/// database, and the database for the blocks after them, as one chain.
pub async fn verify_across(
    pool: &deadpool_postgres::Pool,
    digest: Option<&Digest>,
    archive: &Archive,
) -> Result<Report, StoreError> {
    verify_with(pool, digest, VERIFY_WINDOW_ROWS, Some(archive)).await
}

async fn verify_with(
    pool: &deadpool_postgres::Pool,
    digest: Option<&Digest>,
    window_rows: i64,
    archive: Option<&Archive>,
) -> Result<Report, StoreError> {
    let window_rows = window_rows.clamp(1, VERIFY_WINDOW_ROWS);
    let mut client = pool::get(pool).await?;
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    // The archive's files are read before the snapshot is shared.
    crate::store::snapshot::idle_long(&tx).await?;
    let (archived, archived_seq) = archive.map_or((0, 0), |a| (a.last_block(), a.last_seq()));
    let head = digest::latest(&tx).await?;
    let digest = match digest {
        Some(d) => {
            let (h, s) = d
                .hashes()
                .map_err(|e| StoreError::Corrupt(format!("the digest: {e}").into()))?;
            Some((d.clone(), h, s))
        }
        None => None,
    };
    let last_seq: i64 = tx
        .query_one("SELECT coalesce(max(seq), 0) FROM event_chain", &[])
        .await?
        .get(0);
    let mut walk = Walk::new(head, digest);
    if let Some(a) = archive {
        if let Some(f) = boundary(a, &tx).await? {
            walk.report.found(f);
        }
        walk.archive(a).await;
    }
    let id = crate::store::snapshot::export(&tx).await?;
    let first = archived_seq + 1;
    let windows = (last_seq - first + 1 + window_rows - 1).max(0) / window_rows;
    let mut readers = spawn_readers(pool, &id, first, windows, window_rows);
    let mut seals = SealPages::after(archived, window_rows);
    for w in 0..windows {
        let rows = readers[w as usize % VERIFY_READERS]
            .recv()
            .await
            .ok_or_else(|| StoreError::Database("a verify reader stopped".into()))??;
        seals
            .push_through(&tx, &mut walk, first + (w + 1) * window_rows - 1)
            .await?;
        rows.into_iter().for_each(|r| walk.row(r));
    }
    seals.push_through(&tx, &mut walk, i64::MAX).await?;
    walk.finish_chain();
    walk.uncovered(&tx).await?;
    tx.commit().await?;
    Ok(walk.report)
}

type Windows = tokio::sync::mpsc::Receiver<Result<Vec<ChainRow>, StoreError>>;

/// `VERIFY_READERS` connections in the snapshot `id`, reading `windows`
/// windows of chain rows from row `first` in turn; each hands its windows
/// over in order, one ahead at most, so memory stays bounded.
fn spawn_readers(
    pool: &deadpool_postgres::Pool,
    id: &str,
    first: i64,
    windows: i64,
    window_rows: i64,
) -> Vec<Windows> {
    let mut readers = Vec::new();
    for part in 0..VERIFY_READERS {
        let (send, receive) = tokio::sync::mpsc::channel(1);
        let (pool, id) = (pool.clone(), id.to_owned());
        tokio::spawn(async move {
            let client = match crate::store::snapshot::join(&pool, &id).await {
                Ok(c) => c,
                Err(e) => return drop(send.send(Err(e)).await),
            };
            let mut w = part as i64;
            while w < windows {
                let rows = window(&client, first + w * window_rows, window_rows).await;
                let failed = rows.is_err();
                if send.send(rows).await.is_err() || failed {
                    return;
                }
                w += VERIFY_READERS as i64;
            }
        });
        readers.push(receive);
    }
    readers
}

/// What the log holds at one chain row, hashed.
enum Found {
    Missing,
    Undecodable(String),
    Event {
        leaf: Hash,
        cursor: (i64, i64),
        stream: String,
        seq: u32,
    },
}

/// One chain row and what the log holds there.
struct ChainRow {
    seq: i64,
    position: i64,
    stored: Result<Hash, String>,
    found: Found,
    /// The archive segment it was read from; `None` for the database.
    file: Option<Arc<str>>,
}

/// Chain rows `from .. from + rows` with their events, hashed: the rows by
/// their primary key, then their events by theirs.
async fn window(
    client: &deadpool_postgres::ClientWrapper,
    from: i64,
    rows: i64,
) -> Result<Vec<ChainRow>, StoreError> {
    let chain = client
        .query(
            "SELECT seq, position, hash FROM event_chain WHERE seq >= $1 AND seq < $2 ORDER BY seq",
            &[&from, &(from + rows)],
        )
        .await?;
    let mut rows: Vec<ChainRow> = chain
        .iter()
        .map(|r| ChainRow {
            seq: r.get(0),
            position: r.get(1),
            stored: chain::from_bytes(r.get(2)).ok_or_else(|| "not 32 bytes".to_owned()),
            found: Found::Missing,
            file: None,
        })
        .collect();
    if rows.is_empty() {
        return Ok(rows);
    }
    let positions: Vec<i64> = rows.iter().map(|r| r.position).collect();
    let at: rustc_hash::FxHashMap<i64, usize> =
        positions.iter().enumerate().map(|(i, p)| (*p, i)).collect();
    // By the positions themselves, not their range: a stray position in a
    // chain row must not pull the rest of the log into memory.
    let events = client
        .query(
            &format!("SELECT {EVENT_COLUMNS} FROM events WHERE position = ANY($1)"),
            &[&positions],
        )
        .await?;
    for e in &events {
        if let Some(&i) = at.get(&e.get::<_, i64>(0)) {
            rows[i].found = found(e);
        }
    }
    Ok(rows)
}

fn found(row: &Row) -> Found {
    let e = match recorded_event(row) {
        Ok(e) => e,
        Err(err) => return Found::Undecodable(err.to_string()),
    };
    match leaf_of(&e) {
        Ok(leaf) => Found::Event {
            leaf,
            cursor: (e.tx_id, e.position),
            stream: e.stream.to_string(),
            seq: e.seq,
        },
        Err(err) => Found::Undecodable(err.to_string()),
    }
}

/// The database's seal of the archive's last block must be the archive's
/// (`Archive::unanchored`): otherwise walking one after the other would
/// check nothing about the database.
async fn boundary(
    archive: &Archive,
    tx: &deadpool_postgres::Transaction<'_>,
) -> Result<Option<Finding>, StoreError> {
    let Err(what) = archive.anchor(&**tx).await else {
        return Ok(None);
    };
    Ok(archive.segments.last().map(|s| Finding::ArchiveProblem {
        file: s.name.to_string(),
        what,
    }))
}

/// An archived row as the walk takes it: what the file holds there, hashed.
/// A leaf was hashed only from an event with every field of one, its stream
/// and seq among them.
fn archived_row(r: ArchivedRow) -> ChainRow {
    let event = &r.line.event;
    let found = match r.leaf {
        Ok(leaf) => Found::Event {
            leaf,
            cursor: crate::seal::archive::check::cursor(&r.line),
            stream: event["stream"].as_str().unwrap_or_default().to_owned(),
            seq: event["seq"]
                .as_u64()
                .and_then(|s| u32::try_from(s).ok())
                .unwrap_or(0),
        },
        Err(why) => Found::Undecodable(why),
    };
    ChainRow {
        seq: r.line.chain_seq,
        position: check::cursor(&r.line).1,
        stored: chain::from_hex(&r.line.hash).ok_or_else(|| "not 64 hex digits".to_owned()),
        found,
        file: Some(r.file),
    }
}

impl Walk {
    /// Walks the archive's rows, before the database's; what does not read
    /// or was changed in its files is a finding naming the file.
    async fn archive(&mut self, archive: &Archive) {
        for p in &archive.problems {
            self.report.found(Finding::ArchiveProblem {
                file: p.file.clone(),
                what: p.what.clone(),
            });
        }
        let mut rows = archive.rows();
        while let Some(item) = rows.recv().await {
            match item {
                Item::Seals(file, seals) => {
                    for s in &seals {
                        match StoredSeal::parse(s) {
                            Ok(seal) => self.push_seal(seal),
                            Err((block, why)) => self.report.found(Finding::ArchiveProblem {
                                file: file.to_string(),
                                what: format!("block {block}: {why}"),
                            }),
                        }
                    }
                }
                Item::Rows(batch) => batch.into_iter().for_each(|r| self.row(archived_row(r))),
                Item::Problem(p) => self.report.found(Finding::ArchiveProblem {
                    file: p.file,
                    what: p.what,
                }),
            }
        }
    }

    /// The next seal, checked against the one pushed before it: numbered
    /// from 1, its rows following on, its `previous` the stored hash before,
    /// its own hash over its fields.
    fn push_seal(&mut self, s: StoredSeal) {
        let block = s.fields.block;
        let (want_block, want_first, want_previous) = match self.last_pushed {
            None => (1, 1, ZERO),
            Some((b, last_seq, hash)) => (b + 1, last_seq + 1, hash),
        };
        let mut found = Vec::new();
        if block != want_block || self.pushed + 1 != block {
            found.push(format!("block {block} where block {want_block} belongs"));
        }
        if s.fields.first_seq != want_first {
            let first = s.fields.first_seq;
            found.push(format!(
                "starts at chain row {first} instead of {want_first}"
            ));
        }
        if s.previous != want_previous {
            found.push("its previous seal hash is not the stored hash of the block before".into());
        }
        if chain::seal(&s.previous, &s.fields) != s.hash {
            found.push("its hash does not cover its own fields".into());
        }
        for what in found {
            self.report.found(Finding::SealBroken { block, what });
        }
        self.pushed += 1;
        self.last_pushed = Some((block, s.fields.last_seq, s.hash));
        self.seals.push_back(s);
    }

    /// The last row the seals pushed so far end at (0 before any).
    fn sealed_through(&self) -> i64 {
        self.last_pushed.map_or(0, |(_, last_seq, _)| last_seq)
    }

    fn new(head: Option<Digest>, digest: Option<(Digest, Hash, Hash)>) -> Walk {
        Walk {
            report: Report {
                events: 0,
                blocks: 0,
                head,
                unsealed: 0,
                // Known only once the digest's block is reached.
                digest_matches: digest.as_ref().map(|_| false),
                findings: Vec::new(),
                more: 0,
            },
            seals: VecDeque::new(),
            pushed: 0,
            last_pushed: None,
            digest,
            walked: 0,
            leaves: Vec::new(),
            expected_seq: 1,
            stored_before: ZERO,
            pure: Pure {
                chain: Some(ZERO),
                seal: Some(ZERO),
            },
            cursor_before: None,
            digest_checked: false,
            last_found: None,
        }
    }

    /// A chain row's stored hash; a broken one is a finding (and zeros).
    fn stored_hash(&mut self, seq: i64, stored: Result<Hash, String>) -> Hash {
        stored.unwrap_or_else(|why| {
            let what = format!("chain row {seq}: its hash is {why}");
            let block = self.walked + 1;
            self.report.found(Finding::SealBroken { block, what });
            ZERO
        })
    }

    fn row(&mut self, row: ChainRow) {
        let ChainRow { seq, position, .. } = row;
        self.report.events += 1;
        if seq != self.expected_seq {
            self.report.found(Finding::ChainGap {
                expected: self.expected_seq,
                found: seq,
            });
            // The pure chain cannot bridge rows that are gone.
            self.pure.chain = None;
        }
        self.expected_seq = seq + 1;
        let stored = self.stored_hash(seq, row.stored);
        let leaf = match row.found {
            Found::Missing => {
                self.report.found(Finding::EventMissing {
                    chain_seq: seq,
                    position,
                });
                None
            }
            Found::Undecodable(why) => {
                self.report.found(Finding::EventUndecodable {
                    chain_seq: seq,
                    position,
                    why,
                });
                None
            }
            Found::Event {
                leaf,
                cursor,
                stream,
                seq: stream_seq,
            } => {
                if self.cursor_before.is_some_and(|before| before >= cursor) {
                    self.report.found(Finding::OutOfOrder {
                        chain_seq: seq,
                        position,
                    });
                }
                self.cursor_before = Some(cursor);
                self.last_found = Some(seq);
                let now = chain::link(&self.stored_before, &leaf);
                if now != stored {
                    self.report.found(Finding::EventAltered {
                        chain_seq: seq,
                        position,
                        stream,
                        seq: stream_seq,
                        sealed_hash: chain::hex(&stored),
                        now_hash: chain::hex(&now),
                        archive: row.file.as_deref().map(str::to_owned),
                    });
                }
                Some(leaf)
            }
        };
        self.pure.chain = match (self.pure.chain, leaf) {
            (Some(c), Some(l)) => Some(chain::link(&c, &l)),
            _ => None,
        };
        self.stored_before = stored;
        self.leaves.push(leaf);
        self.end_of_block(seq, stored);
    }

    /// At the last row of a block: its Merkle root and chain head against
    /// the seal, the pure seal hash, and the digest when it names this block.
    fn end_of_block(&mut self, seq: i64, stored: Hash) {
        if self.seals.front().is_none_or(|s| seq < s.fields.last_seq) {
            return;
        }
        let s = self.seals.pop_front().expect("just seen");
        let block = s.fields.block;
        let leaves: Option<Vec<Hash>> = self.leaves.drain(..).collect();
        let mut found = Vec::new();
        let root = leaves.as_deref().map(chain::merkle_root);
        if root.is_some_and(|r| r != s.fields.merkle_root) {
            found.push(Finding::SealBroken {
                block,
                what: "the Merkle root of its events is not the one sealed".into(),
            });
        }
        if seq != s.fields.last_seq || stored != s.fields.chain_head {
            found.push(Finding::SealBroken {
                block,
                what: "its chain head is not the chain hash at its last row".into(),
            });
        }
        // Where the sealer stopped is where the next block starts reading:
        // it must be the block's last event (when that is still there).
        let cursor = (s.fields.last_tx_id, s.fields.last_position);
        if self.last_found == Some(seq) && self.cursor_before != Some(cursor) {
            found.push(Finding::SealBroken {
                block,
                what: "its last transaction id and position are not its last event's".into(),
            });
        }
        let pure_fields = match (root, self.pure.chain) {
            (Some(merkle_root), Some(chain_head)) => Some(SealFields {
                merkle_root,
                chain_head,
                ..s.fields.clone()
            }),
            _ => None,
        };
        self.pure.seal = match (self.pure.seal, pure_fields) {
            (Some(previous), Some(fields)) => Some(chain::seal(&previous, &fields)),
            _ => None,
        };
        if self
            .digest
            .as_ref()
            .is_some_and(|(d, _, _)| d.block == block)
        {
            self.digest_checked = true;
            match self.check_digest(&s.fields) {
                Some(f) => found.push(f),
                None => self.report.digest_matches = Some(true),
            }
        }
        for f in found {
            self.report.found(f);
        }
        self.report.blocks += 1;
        self.walked += 1;
    }

    /// At the end of a block: the digest, if it names this block, against
    /// the pure recomputation. Every field the digest shows is checked: the
    /// ones the seal hash covers through it, the others (a version 1 seal's
    /// position and time) against the block as stored.
    fn check_digest(&self, sealed: &SealFields) -> Option<Finding> {
        let block = sealed.block;
        let (d, head, seal) = self.digest.as_ref().filter(|(d, _, _)| d.block == block)?;
        let what = if d.last_seq != sealed.last_seq {
            format!(
                "the digest ends at chain row {}, the block at {}",
                d.last_seq, sealed.last_seq
            )
        } else if d.last_position != sealed.last_position {
            format!(
                "the digest ends at log position {}, the block at {}",
                d.last_position, sealed.last_position
            )
        } else if d.sealed_at != sealed.sealed_at {
            format!(
                "the digest was sealed at {}, the block at {}",
                chain::micros_utc(d.sealed_at),
                chain::micros_utc(sealed.sealed_at)
            )
        } else if d.format != digest::DIGEST_FORMAT {
            format!("the digest's format is not {}", digest::DIGEST_FORMAT)
        } else if self.pure.chain != Some(*head) {
            "the log up to the digest no longer hashes to its chain head: it was changed after the digest was taken".to_owned()
        } else if self.pure.seal != Some(*seal) {
            "the seals up to the digest no longer hash to its seal".to_owned()
        } else {
            return None;
        };
        Some(Finding::DigestMismatch { block, what })
    }

    /// After the last row (and every seal pushed): seals with no rows, rows
    /// with no seal, and a digest beyond the log.
    fn finish_chain(&mut self) {
        if !self.leaves.is_empty() {
            self.report.found(Finding::SealBroken {
                block: self.pushed + 1,
                what: format!("{} chain rows after the last seal", self.leaves.len()),
            });
        }
        while let Some(s) = self.seals.pop_front() {
            let (block, last) = (s.fields.block, s.fields.last_seq);
            self.report.found(Finding::SealBroken {
                block,
                what: format!("it covers chain rows up to {last} that are not there"),
            });
        }
        if let Some((d, _, _)) = &self.digest {
            // Never reached: beyond the seals, or its rows are gone.
            if !self.digest_checked {
                let (block, sealed_blocks) = (d.block, self.pushed);
                self.report.digest_matches = Some(false);
                self.report.found(Finding::DigestNotInLog {
                    block,
                    sealed_blocks,
                });
            }
        }
    }

    /// Events the chain does not cover: below the sealed cursor, an
    /// insertion; above it, not sealed yet.
    async fn uncovered(
        &mut self,
        tx: &deadpool_postgres::Transaction<'_>,
    ) -> Result<(), StoreError> {
        let limit = MAX_VERIFY_FINDINGS as i64;
        let row = tx
            .query_one(
                "WITH head AS (SELECT last_tx_id, last_position FROM seals ORDER BY block DESC LIMIT 1),
                 loose AS (
                     SELECT e.position, coalesce(
                         (e.tx_id::text::bigint, e.position) <= (h.last_tx_id, h.last_position),
                         false) AS below
                     FROM events e LEFT JOIN head h ON true
                     WHERE NOT EXISTS (SELECT 1 FROM event_chain c WHERE c.position = e.position))
                 SELECT count(*) FILTER (WHERE NOT below),
                        count(*) FILTER (WHERE below),
                        coalesce((array_agg(position ORDER BY position) FILTER (WHERE below))[1:$1::bigint::int],
                                 '{}')
                 FROM loose",
                &[&limit],
            )
            .await?;
        self.report.unsealed = row.get(0);
        let below: i64 = row.get(1);
        let listed: Vec<i64> = row.get(2);
        for position in &listed {
            self.report.found(Finding::Uncovered {
                position: *position,
            });
        }
        self.report.more += (below - listed.len() as i64).max(0) as u64;
        Ok(())
    }
}
