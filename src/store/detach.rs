//! Taking archived partitions out of the database (`stockledger archive
//! --detach`, docs/archive.md, decisions 3, 4 and 7). The archive side
//! (`seal::archive::detach`) says what the files hold; this module checks
//! the database's side and moves the partitions out, oldest first:
//!
//! 1. Every position of the partition was handed out, and every transaction
//!    that could still hold one has ended (`settle_appenders`), so nothing
//!    more can land in it.
//! 2. Every event in it is archived (at or before the archive's last
//!    cursor), and every read model, rebuild copy and relay has applied it.
//! 3. In one transaction: the directory gets each stream whose events have
//!    now all left and that was closed by then; the events of every other
//!    stream it holds are carried (`carried_events`); the cut moves past it.
//! 4. `DETACH PARTITION … CONCURRENTLY` (appends and reads go on), a last
//!    check of the detached table, `DROP TABLE`.
//!
//! Every step can be run again: a run cut short anywhere is finished by the
//! next one. The chain's partitions follow once every row in them is
//! archived and names an event that already left.

use std::time::{Duration, Instant};

use deadpool_postgres::{ClientWrapper, Object, Pool};
use tokio_postgres::Client;

use crate::domain::event::opens_reservation_sql;
use crate::domain::EventType;
use crate::limits::{DETACH_LOCK_WAIT_MS, DETACH_STATEMENT_TIMEOUT_MS, DETACH_WRITERS_WAIT_MS};
use crate::store::locks::{Lock, TRY_SESSION_LOCK};
use crate::store::{cut, pool, Cursor, StoreError};

/// What the archive holds, as the detach needs it: every event at or before
/// `cursor` in safe commit order, every chain row up to `last_seq`, in
/// verified segments through `last_block`.
#[derive(Clone, Copy, Debug)]
pub struct Archived {
    pub cursor: Cursor,
    pub last_seq: i64,
    pub last_block: i64,
}

/// A partition of the log or of the chain, as `log_partitions` has it.
#[derive(Clone, Debug)]
pub struct Partition {
    pub parent: &'static str,
    pub name: String,
    /// Its positions (chain rows): `first` up to, not including, `next`.
    pub first: i64,
    pub next: i64,
}

/// One partition taken out.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Detached {
    pub parent: &'static str,
    pub partition: String,
    pub first: i64,
    pub next: i64,
    pub rows: i64,
    /// Table, TOAST and indexes the database no longer holds.
    pub bytes: i64,
    /// Streams put in the directory, and events carried, by this partition.
    pub archived_streams: u64,
    pub carried_events: u64,
}

impl Detached {
    /// `p`, before anything of it is counted.
    fn of(p: &Partition) -> Detached {
        Detached {
            parent: p.parent,
            partition: p.name.clone(),
            first: p.first,
            next: p.next,
            rows: 0,
            bytes: 0,
            archived_streams: 0,
            carried_events: 0,
        }
    }
}

/// A connection of the owner's, with the detach's own timeouts, not given
/// back to the pool (DETACH CONCURRENTLY runs outside any transaction).
pub struct Detacher {
    client: ClientWrapper,
    /// Every position up to this one was handed out before the appenders
    /// that could hold one had all ended.
    settled: i64,
}

impl Detacher {
    pub async fn open(pool: &Pool) -> Result<Detacher, StoreError> {
        let client = Object::take(pool::get(pool).await?);
        client
            .batch_execute(&format!(
                "SET statement_timeout = {DETACH_STATEMENT_TIMEOUT_MS};
                 SET lock_timeout = {DETACH_LOCK_WAIT_MS}"
            ))
            .await?;
        let got: bool = client
            .query_one(TRY_SESSION_LOCK, &[&Lock::Detach.name()])
            .await?
            .get(0);
        if !got {
            let why = "another `archive --detach` runs on this database";
            return Err(StoreError::Database(why.into()));
        }
        finish_pending(&client).await?;
        let settled = settle_appenders(&client).await?;
        Ok(Detacher { client, settled })
    }

    /// The oldest partition of `parent` still in the database, if any.
    pub async fn oldest(&self, parent: &'static str) -> Result<Option<Partition>, StoreError> {
        let row = self
            .client
            .query_opt(
                "SELECT name, first, next FROM log_partitions
                 WHERE parent = $1 AND detached_at IS NULL ORDER BY first LIMIT 1",
                &[&parent],
            )
            .await?;
        Ok(row.map(|r| Partition {
            parent,
            name: r.get(0),
            first: r.get(1),
            next: r.get(2),
        }))
    }

    /// The last event of the log's partition `p` in safe commit order: where
    /// the cut goes when it leaves. `None` when it holds none (or its table
    /// is gone).
    pub async fn last_of(&self, p: &Partition) -> Result<Option<Cursor>, StoreError> {
        match table(&self.client, &p.name).await? {
            Some(table) => last_cursor(&self.client, &table).await,
            None => Ok(None),
        }
    }

    /// The sealed blocks that hold the log's partition `p`'s events, first
    /// and last, from the database's own chain and seals (`None` when none
    /// of its events is sealed, or its table is gone). What is checked again
    /// before `p` leaves is chosen by these, never by a manifest's ranges,
    /// which no hash or seal covers.
    pub async fn sealed_blocks(&self, p: &Partition) -> Result<Option<(i64, i64)>, StoreError> {
        let Some(table) = table(&self.client, &p.name).await? else {
            return Ok(None);
        };
        let row = self
            .client
            .query_one(
                &format!(
                    "WITH rows AS (SELECT min(c.seq) AS first, max(c.seq) AS last
                                   FROM {table} AS e JOIN event_chain AS c ON c.position = e.position)
                     SELECT min(s.block), max(s.block) FROM seals AS s, rows
                     WHERE s.last_seq >= rows.first AND s.first_seq <= rows.last"
                ),
                &[],
            )
            .await?;
        Ok(match (row.get(0), row.get(1)) {
            (Some(first), Some(last)) => Some((first, last)),
            _ => None,
        })
    }

    /// Why the log's partition `p` must stay, or `None` when it may leave.
    pub async fn keeps(&self, p: &Partition, a: &Archived) -> Result<Option<String>, StoreError> {
        let c = &self.client;
        if p.next - 1 > self.settled {
            let why = format!(
                "{} takes appends still (positions up to {} are handed out)",
                p.name, self.settled
            );
            return Ok(Some(why));
        }
        let Some(table) = table(c, &p.name).await? else {
            return Ok(None); // Dropped by a run cut short: only its row is left.
        };
        let unarchived = after_archive(c, &table, a).await?;
        if unarchived > 0 {
            let why = format!(
                "{} holds {unarchived} events not archived yet (archive again once they are sealed)",
                p.name
            );
            return Ok(Some(why));
        }
        // An event with no chain row is one `verify` names as inserted
        // behind the sealer's back: it is in no archive, and dropping it
        // would destroy the evidence.
        let unchained: i64 = c
            .query_one(
                &format!(
                    "SELECT count(*) FROM {table} AS e WHERE NOT EXISTS
                     (SELECT 1 FROM event_chain AS c WHERE c.position = e.position AND c.seq <= $1)"
                ),
                &[&a.last_seq],
            )
            .await?
            .get(0);
        if unchained > 0 {
            let why = format!(
                "{} holds {unchained} events the chain does not cover (run `stockledger verify`)",
                p.name
            );
            return Ok(Some(why));
        }
        let Some(last) = last_cursor(c, &table).await? else {
            return Ok(None);
        };
        Ok(behind(c, last).await?.map(|who| {
            format!(
                "{who} has not taken every event of {} yet (it is at or before {last})",
                p.name
            )
        }))
    }

    /// Takes the log's partition `p` out (steps 3 and 4 above); `keeps`
    /// said it may leave.
    pub async fn detach_events(
        &mut self,
        p: &Partition,
        a: &Archived,
    ) -> Result<Detached, StoreError> {
        let mut found = Detached::of(p);
        if let Some(table) = table(&self.client, &p.name).await? {
            if attached(&self.client, &table).await? {
                (found.archived_streams, found.carried_events) = self.leave(&table).await?;
                detach(&self.client, p.parent, &table).await?;
            }
            let late = after_archive(&self.client, &table, a).await?;
            if late > 0 {
                reattach(&self.client, p, &table).await?;
                let why = format!("{late} events not archived were found in {table} once it was detached; it is attached again");
                return Err(StoreError::Invariant(why.into()));
            }
            (found.rows, found.bytes) = drop_table(&self.client, &table).await?;
        }
        mark_detached(&self.client, p, a).await?;
        Ok(found)
    }

    /// Step 3: the directory, the carried events and the cut, in one
    /// transaction. Returns the streams archived and the events carried.
    async fn leave(&mut self, table: &str) -> Result<(u64, u64), StoreError> {
        let closing: Vec<&str> = EventType::ALL
            .iter()
            .filter(|t| t.closes())
            .map(|t| t.as_str())
            .collect();
        let last = last_cursor(&self.client, table).await?;
        let tx = self.client.transaction().await?;
        tx.batch_execute(
            "CREATE TEMP TABLE leaving (
                 stream text PRIMARY KEY, last_seq integer NOT NULL,
                 last_position bigint NOT NULL, order_id text, closed boolean NOT NULL
             ) ON COMMIT DROP",
        )
        .await?;
        // Each stream of the partition with what it carried before: closed
        // when any of those events closes a stream of its kind (the last
        // event of a stream is the only one that may).
        tx.execute(
            &format!(
                "INSERT INTO leaving
                 SELECT stream, max(seq), max(position),
                        max(order_id) FILTER (WHERE {opens}),
                        bool_or(type = ANY($1::text[]))
                 FROM (SELECT stream, seq, position, type, order_id FROM {table}
                       UNION ALL
                       SELECT c.stream, c.seq, c.position, c.type, c.order_id
                       FROM carried_events AS c
                       WHERE c.stream IN (SELECT stream FROM {table})) AS steps
                 GROUP BY stream",
                opens = opens_reservation_sql!()
            ),
            &[&closing],
        )
        .await?;
        let archived = tx
            .execute(
                "INSERT INTO archived_streams (stream, last_seq, last_position, order_id)
                 SELECT stream, last_seq, last_position, order_id FROM leaving WHERE closed
                 ON CONFLICT (stream) DO NOTHING",
                &[],
            )
            .await?;
        let carried = tx
            .execute(
                &format!(
                    "INSERT INTO carried_events
                     SELECT e.* FROM {table} AS e
                     WHERE e.stream IN (SELECT stream FROM leaving WHERE NOT closed)
                     ON CONFLICT (position) DO NOTHING"
                ),
                &[],
            )
            .await?;
        tx.execute(
            "DELETE FROM carried_events
             WHERE stream IN (SELECT stream FROM leaving WHERE closed)",
            &[],
        )
        .await?;
        // The cut goes past every event that leaves before any of them is
        // gone, so no reader ever takes what is left for the whole log.
        let before = cut::cut(&*tx).await?.unwrap_or(Cursor::START);
        let cut = last.map_or(before, |l| l.max(before));
        // The floor moves only once the partition is gone (`mark_detached`).
        tx.execute(
            "INSERT INTO log_cut (tx_id, position, floor) VALUES ($1::text::xid8, $2, 1)
             ON CONFLICT (only_row) DO UPDATE
             SET tx_id = EXCLUDED.tx_id, position = EXCLUDED.position, cut_at = now()",
            &[&cut.tx_id.to_string(), &cut.position],
        )
        .await?;
        tx.commit().await?;
        Ok((archived, carried))
    }

    /// Why the chain's partition `p` must stay, or `None` when it may leave:
    /// every row in it is archived, a later partition holds the chain's
    /// last rows, and every row names an event that already left (else
    /// `verify --archive` would find that event uncovered).
    pub async fn chain_keeps(
        &self,
        p: &Partition,
        a: &Archived,
    ) -> Result<Option<String>, StoreError> {
        let c = &self.client;
        if p.next - 1 > a.last_seq {
            return Ok(Some(format!(
                "{} holds chain rows not archived yet",
                p.name
            )));
        }
        let top: i64 = c
            .query_one("SELECT coalesce(max(seq), 0) FROM event_chain", &[])
            .await?
            .get(0);
        if top < p.next {
            return Ok(Some(format!("{} holds the chain's last rows", p.name)));
        }
        let Some(table) = table(c, &p.name).await? else {
            return Ok(None);
        };
        let floor = cut::cut_and_floor(&**c).await?.map_or(1, |(_, f)| f);
        let kept: i64 = c
            .query_one(
                &format!("SELECT count(*) FROM {table} WHERE position >= $1"),
                &[&floor],
            )
            .await?
            .get(0);
        Ok((kept > 0).then(|| {
            format!(
                "{} chains {kept} events still in the database (positions from {floor} on)",
                p.name
            )
        }))
    }

    /// Takes the chain's partition `p` out; `chain_keeps` said it may leave.
    pub async fn detach_chain(&self, p: &Partition, a: &Archived) -> Result<Detached, StoreError> {
        let mut found = Detached::of(p);
        if let Some(table) = table(&self.client, &p.name).await? {
            if attached(&self.client, &table).await? {
                detach(&self.client, p.parent, &table).await?;
            }
            (found.rows, found.bytes) = drop_table(&self.client, &table).await?;
        }
        mark_detached(&self.client, p, a).await?;
        Ok(found)
    }
}

/// The partition's name as SQL spells it (quoted where it must be), or
/// `None` when the table is gone.
async fn table(c: &Client, name: &str) -> Result<Option<String>, StoreError> {
    Ok(
        c.query_one("SELECT to_regclass(quote_ident($1))::text", &[&name])
            .await?
            .get(0),
    )
}

async fn attached(c: &Client, table: &str) -> Result<bool, StoreError> {
    Ok(c.query_one(
        "SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = $1::text::regclass)",
        &[&table],
    )
    .await?
    .get(0))
}

/// How many events of `table` come after the archive's last one: not in it.
async fn after_archive(c: &Client, table: &str, a: &Archived) -> Result<i64, StoreError> {
    Ok(c.query_one(
        &format!(
            "SELECT count(*) FROM {table}
             WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)"
        ),
        &[&a.cursor.tx_id.to_string(), &a.cursor.position],
    )
    .await?
    .get(0))
}

/// The last event of `table` in safe commit order.
async fn last_cursor(c: &Client, table: &str) -> Result<Option<Cursor>, StoreError> {
    let sql = format!(
        "SELECT tx_id::text::bigint, position FROM {table}
         ORDER BY tx_id DESC, position DESC LIMIT 1"
    );
    Ok(c.query_opt(&sql, &[]).await?.map(|r| Cursor {
        tx_id: r.get(0),
        position: r.get(1),
    }))
}

/// A read model's copy or a relay that has not yet taken the event at
/// `last`: it would never find it once it left.
async fn behind(c: &Client, last: Cursor) -> Result<Option<String>, StoreError> {
    let row = c
        .query_opt(
            "SELECT 'read model ' || name || ' (' || slot || ')' FROM projection_checkpoints
              WHERE (tx_id, position) < ($1::text::xid8, $2::bigint)
             UNION ALL
             SELECT 'the relay to ' || stream_name FROM relay_checkpoints
              WHERE (tx_id, position) < ($3::bigint, $2::bigint)
             LIMIT 1",
            &[&last.tx_id.to_string(), &last.position, &last.tx_id],
        )
        .await?;
    Ok(row.map(|r| r.get(0)))
}

/// Finishes a `DETACH … CONCURRENTLY` a run cut short left pending: until
/// then the parent takes no other detach.
async fn finish_pending(c: &Client) -> Result<(), StoreError> {
    let pending = c
        .query(
            "SELECT inhparent::regclass::text, inhrelid::regclass::text FROM pg_inherits
              WHERE inhdetachpending
                AND inhparent IN ('events'::regclass, 'event_chain'::regclass)",
            &[],
        )
        .await?;
    for row in pending {
        let (parent, table): (String, String) = (row.get(0), row.get(1));
        c.batch_execute(&format!(
            "ALTER TABLE {parent} DETACH PARTITION {table} FINALIZE"
        ))
        .await?;
    }
    Ok(())
}

/// Waits until every transaction that was appending to the log when it
/// began has ended, and returns the last position handed out before: each
/// position up to it was taken by one of those transactions or an earlier
/// one (an INSERT holds its lock on the parent before it draws a
/// position), so none of them can still land anywhere. Waits at most
/// `DETACH_WRITERS_WAIT_MS`.
async fn settle_appenders(c: &Client) -> Result<i64, StoreError> {
    let handed_out: i64 = c
        .query_one(
            "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
             FROM events_position",
            &[],
        )
        .await?
        .get(0);
    let appenders: Vec<String> = c
        .query(
            "SELECT DISTINCT virtualtransaction FROM pg_locks
              WHERE relation = 'events'::regclass AND mode = 'RowExclusiveLock'
                AND pid IS DISTINCT FROM pg_backend_pid()",
            &[],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let started = Instant::now();
    loop {
        let running: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_locks
                  WHERE locktype = 'virtualxid' AND virtualxid = ANY($1)",
                &[&appenders],
            )
            .await?
            .get(0);
        if running == 0 {
            return Ok(handed_out);
        }
        if started.elapsed() > Duration::from_millis(DETACH_WRITERS_WAIT_MS) {
            let why = format!(
                "{running} transactions appending to the log did not end within {DETACH_WRITERS_WAIT_MS} ms"
            );
            return Err(StoreError::Database(why.into()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `DETACH PARTITION … CONCURRENTLY`: it waits for the transactions that
/// may still read the partition, but blocks neither appends nor reads.
async fn detach(c: &Client, parent: &str, table: &str) -> Result<(), StoreError> {
    c.batch_execute(&format!(
        "ALTER TABLE {parent} DETACH PARTITION {table} CONCURRENTLY"
    ))
    .await?;
    Ok(())
}

async fn reattach(c: &Client, p: &Partition, table: &str) -> Result<(), StoreError> {
    c.batch_execute(&format!(
        "ALTER TABLE {} ATTACH PARTITION {table} FOR VALUES FROM ({}) TO ({})",
        p.parent, p.first, p.next
    ))
    .await?;
    Ok(())
}

/// Drops a detached partition; returns its rows and its bytes.
async fn drop_table(c: &Client, table: &str) -> Result<(i64, i64), StoreError> {
    let row = c
        .query_one(
            &format!("SELECT count(*), pg_total_relation_size($1::text::regclass) FROM {table}"),
            &[&table],
        )
        .await?;
    let found = (row.get(0), row.get(1));
    c.batch_execute(&format!("DROP TABLE {table}")).await?;
    Ok(found)
}

async fn mark_detached(c: &Client, p: &Partition, a: &Archived) -> Result<(), StoreError> {
    c.execute(
        "UPDATE log_partitions SET detached_at = now(), archived_through_block = $3
         WHERE parent = $1 AND first = $2",
        &[&p.parent, &p.first, &a.last_block],
    )
    .await?;
    if p.parent == "events" {
        c.execute("UPDATE log_cut SET floor = greatest(floor, $1)", &[&p.next])
            .await?;
    }
    Ok(())
}

/// Reclaims the space of the carried events a detach deleted (streams that
/// closed), so the table stays the size of the streams open across the cut
/// instead of waiting for autovacuum.
pub async fn vacuum_carried(pool: &Pool) -> Result<(), StoreError> {
    let client = pool::get(pool).await?;
    client.batch_execute("VACUUM carried_events").await?;
    Ok(())
}

/// Forgets the directory entries of streams whose last event was below
/// `position` (docs/archive.md, decision 3): the operator's retention. A
/// command on a forgotten stream is no longer refused `ARCHIVED`: a
/// forgotten id may be used again, and a forgotten order reserved again.
/// Returns how many were forgotten.
pub async fn forget_archived_below(pool: &Pool, position: i64) -> Result<u64, StoreError> {
    let client = pool::get(pool).await?;
    let forgotten = client
        .execute(
            "DELETE FROM archived_streams WHERE last_position < $1",
            &[&position],
        )
        .await?;
    client.batch_execute("VACUUM archived_streams").await?;
    Ok(forgotten)
}

/// The lowest position still kept by partitions that left at least `days`
/// days ago: what `forget_archived_below` takes for a retention in days.
pub async fn detached_days_ago(pool: &Pool, days: u32) -> Result<i64, StoreError> {
    let client = pool::get(pool).await?;
    Ok(client
        .query_one(
            "SELECT coalesce(max(next), 1) FROM log_partitions
             WHERE parent = 'events'
               AND detached_at < now() - make_interval(days => $1::int)",
            &[&(days as i32)],
        )
        .await?
        .get(0))
}
