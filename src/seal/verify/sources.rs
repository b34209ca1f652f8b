//! What `verify` walks, read: the database's chain rows in windows on
//! connections of their own, its seals a page at a time, an archive's rows
//! and seals from its files, and the events the chain does not cover.

use tokio_postgres::Row;

use crate::limits::{MAX_VERIFY_FINDINGS, VERIFY_READERS};
use crate::seal::archive::read::Item;
use crate::seal::archive::{check, Archive, ArchivedRow, ArchivedSeal};
use crate::seal::chain;
use crate::seal::proof::SEAL_COLUMNS;
use crate::seal::sealer::leaf_of;
use crate::store::rows::{recorded_event, EVENT_COLUMNS};
use crate::store::StoreError;

use super::report::Finding;
use super::walk::{ChainRow, Found, StoredSeal, Walk};

/// The database's seals, read a page at a time in block order as the walk
/// needs them: the walk holds the seals of the rows in flight, not every
/// seal of the log.
pub(super) struct SealPages {
    /// The last block read.
    after: i64,
    /// Seals a page; as many as a window has rows.
    page: i64,
    done: bool,
}

impl SealPages {
    pub(super) fn after(block: i64, page: i64) -> SealPages {
        SealPages {
            after: block,
            page,
            done: false,
        }
    }

    /// Pushes seals until they reach past chain row `through`, or there are
    /// no more.
    pub(super) async fn push_through(
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

type Windows = tokio::sync::mpsc::Receiver<Result<Vec<ChainRow>, StoreError>>;

/// `VERIFY_READERS` connections in the snapshot `id`, reading `windows`
/// windows of chain rows from row `first` in turn; each hands its windows
/// over in order, one ahead at most, so memory stays bounded.
pub(super) fn spawn_readers(
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
pub(super) async fn boundary(
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
    pub(super) async fn archive(&mut self, archive: &Archive) {
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
}

impl Walk {
    /// Events the chain does not cover: below the sealed cursor, an
    /// insertion; above it, not sealed yet.
    pub(super) async fn uncovered(
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
