//! Reading the log once and folding it into what every table should hold.

use rustc_hash::FxHashMap as HashMap;

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use tokio_postgres::types::ToSql;
use tokio_postgres::Client;

use crate::audit::backlogs::{self, ActualBacklogs, Backlogs};
use crate::audit::deliveries::Deliveries;
use crate::audit::doubles::{self, Doubles};
use crate::audit::settings::{self, ActualSettings, Settings};
use crate::domain::reservation::StreamViolation;
use crate::domain::stream::prefixes;
use crate::domain::{Event, EventType, Expectation, Reservation, StreamId, StreamKind};
use crate::projection::Slot;
use crate::read_model::{
    add_effects, compare_figures, load_figures, merge_figures, Actual, ActualFigures, Diffs,
    Expected, Figures, ReadModel, SeenEvent, StreamSeen,
};
use crate::seal::archive::{Archive, ArchivedRow};
use crate::store::log_row::{self, typed_columns_sql};
use crate::store::{Cursor, StoreError};
use uuid::Uuid;

/// A projection copy to compare, and the checkpoint it was built up to.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub projection: &'static dyn ReadModel,
    pub cutoff: Cursor,
    pub slot: Slot,
}

pub(crate) struct Outcome {
    pub events: u64,
    pub streams: u64,
    pub items: u64,
    pub orders: u64,
    pub compared: Vec<(String, String)>,
    pub diffs: Diffs,
    /// The first target whose rows differ from the log, if any.
    pub first_differing: Option<&'static dyn ReadModel>,
}

/// Streams read in part, waiting for the rest of their events.
type Waiting = HashMap<StreamId, Vec<Row>>;

struct Row {
    seq: u32,
    /// Whether its type is the last of a stream (`StreamKind::closes`).
    closes: bool,
    event: Result<Event, String>,
    recorded_at: DateTime<Utc>,
    cursor: Cursor,
}

pub struct Replay {
    targets: Vec<(Target, Expected)>,
    balances: Figures,
    /// The items' settings, kept on their balance rows.
    settings: Settings,
    /// The items' backlogs, kept on their balance rows.
    backlogs: Backlogs,
    /// Receipts and the deliveries against expected receipts that name them.
    deliveries: Deliveries,
    events: u64,
    streams: u64,
    orders: u64,
    diffs: Diffs,
}

/// One hash partition of the log, in physical order: no sort, so the server
/// streams it as fast as it can read it. Every event of a stream falls in the
/// same partition. Streams are put together in memory (see `read_log`).
const LOG: &str = concat!(
    "SELECT stream, seq, type, data::text, recorded_at, tx_id::text::bigint, position, ",
    typed_columns_sql!(),
    ", version FROM events WHERE (hashtext(stream) & 2147483647) % $2::int4 = $1::int4"
);
/// Where `LOG`'s typed columns start, and the column after them.
const LOG_COLUMNS_AT: usize = 7;
const LOG_VERSION: usize = LOG_COLUMNS_AT + 4;

impl Replay {
    pub fn new(targets: Vec<Target>) -> Replay {
        let targets = targets
            .into_iter()
            .map(|t| (t, t.projection.expected()))
            .collect();
        Replay {
            targets,
            balances: HashMap::default(),
            settings: Settings::default(),
            backlogs: Backlogs::default(),
            deliveries: Deliveries::default(),
            events: 0,
            streams: 0,
            orders: 0,
            diffs: Diffs::default(),
        }
    }

    /// Streams the whole log and folds it stream by stream.
    ///
    /// The log is read unsorted. A stream is complete once it holds the event
    /// that closes it (`StreamKind::closes`: a receipt's one event, a
    /// reservation's settlement) and every seq before it, or the last seq its
    /// kind allows; until then its events wait in memory (the log is
    /// append-only, so in practice they are read in seq order), and what is
    /// still waiting at the end is folded then. Memory is therefore bounded
    /// by the reservations still open, not by the size of the log. Reads partition `part` of `parts`; the client must be
    /// inside the snapshot the comparison uses.
    pub async fn read_log(
        &mut self,
        client: &impl tokio_postgres::GenericClient,
        part: u32,
        parts: u32,
    ) -> Result<(), StoreError> {
        let (part, parts) = (part as i32, parts as i32);
        let mut waiting = Waiting::default();
        self.read_rows(client, LOG, &[&part, &parts], &mut waiting)
            .await?;
        self.finish_waiting(waiting);
        Ok(())
    }

    /// The whole log, its archived part from `archive`'s files (which must
    /// be whole) and the rest from the database, on this one reader: the
    /// archive is not partitioned by the database's hash of stream names.
    pub async fn read_archive_and_log(
        &mut self,
        client: &impl tokio_postgres::GenericClient,
        archive: &Archive,
    ) -> Result<(), StoreError> {
        let mut waiting = Waiting::default();
        let corrupt = |why: String| {
            let why = format!("archive: {why} (run `stockledger verify --archive`)");
            StoreError::Corrupt(why.into())
        };
        // What is replayed is what was sealed: every row is held against the
        // seals before it is folded.
        archive.anchor(client).await.map_err(corrupt)?;
        let mut rows = archive.checked_rows();
        while let Some(batch) = rows.next().await.map_err(corrupt)? {
            for r in &batch {
                self.events += 1;
                let (name, row) = archived(r);
                self.take(&mut waiting, &name, row);
            }
        }
        // The archive holds exactly the events up to its last cursor (the
        // chain is in safe commit order); the database's are the rest. By
        // cursor, not by chain row: the chain rows of archived events may
        // have left the database with them (`archive --detach`).
        let (all, one, last) = (0i32, 1i32, archive.last_cursor());
        let sql = format!("{LOG} AND (tx_id, position) > ($3::text::xid8, $4::bigint)");
        let params: [&(dyn ToSql + Sync); 4] =
            [&all, &one, &last.tx_id.to_string(), &last.position];
        self.read_rows(client, &sql, &params, &mut waiting).await?;
        self.finish_waiting(waiting);
        Ok(())
    }

    async fn read_rows(
        &mut self,
        client: &impl tokio_postgres::GenericClient,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        waiting: &mut Waiting,
    ) -> Result<(), StoreError> {
        let stmt = client.prepare(sql).await?;
        let rows = client.query_raw(&stmt, params.iter().copied()).await?;
        let mut rows = std::pin::pin!(rows);
        while let Some(r) = rows.try_next().await? {
            self.events += 1;
            let name: &str = r.get(0);
            let (seq, type_name, data): (i32, &str, &str) = (r.get(1), r.get(2), r.get(3));
            let columns = log_row::columns_at(&r, LOG_COLUMNS_AT);
            let version: i16 = r.get(LOG_VERSION);
            let written = log_row::Written {
                version: i64::from(version),
                recorded_at: r.get(4),
            };
            let row = Row {
                seq: seq as u32,
                closes: EventType::parse(type_name).is_some_and(StreamKind::closes),
                event: log_row::rest_from_str(data)
                    .and_then(|rest| log_row::decode(type_name, written, columns, rest))
                    .map_err(|e| format!("{type_name}: {e}")),
                recorded_at: r.get(4),
                cursor: Cursor {
                    tx_id: r.get(5),
                    position: r.get(6),
                },
            };
            self.take(waiting, name, row);
        }
        Ok(())
    }

    /// One event read: it waits with its stream's until the stream is
    /// complete, then the stream is folded.
    fn take(&mut self, waiting: &mut Waiting, name: &str, row: Row) {
        let Ok(stream) = StreamId::parse("stream", name) else {
            self.foreign_stream(name, row);
            return;
        };
        let last = stream.kind().last_seq() as usize;
        let entry = waiting.entry(stream.clone()).or_default();
        entry.push(row);
        if complete(entry, last) {
            let rows = waiting.remove(&stream).expect("just inserted");
            self.finish_stream(stream, rows);
        }
    }

    fn finish_waiting(&mut self, waiting: Waiting) {
        for (stream, rows) in waiting {
            self.finish_stream(stream, rows);
        }
    }

    /// An event in a stream of no known kind: it still moved the write-side
    /// balances, and it is reported.
    fn foreign_stream(&mut self, name: &str, row: Row) {
        self.streams += 1;
        if let Ok(e) = &row.event {
            add_effects(&mut self.balances, e);
        }
        let want = format!("a name starting with {}", prefixes());
        self.diffs.push("events", name, "stream", want, name);
    }

    fn finish_stream(&mut self, stream: StreamId, mut rows: Vec<Row>) {
        self.streams += 1;
        rows.sort_by_key(|r| r.seq);
        let (cursors, valid) = self.readable(&stream, &rows);
        // Every event moves the write-side balances, whatever its stream.
        for e in &valid {
            add_effects(&mut self.balances, e.event);
            self.settings.fold(e.event, e.position);
            self.backlogs.fold(&stream, e.event, e.position);
            self.deliveries.fold(&stream, e.event, e.tx_id);
        }
        let Ok(full) = self.check_rules(&stream, &valid) else {
            return;
        };
        if full.as_ref().and_then(Reservation::order_id).is_some() {
            self.orders += 1;
        }
        for (target, expected) in &mut self.targets {
            let seen = cursors.iter().filter(|c| **c <= target.cutoff).count();
            if seen == 0 {
                continue;
            }
            // Usually the target has seen the whole stream; fold again only
            // when its checkpoint falls inside it.
            let partial;
            let reservation = if seen == valid.len() {
                full.as_ref()
            } else {
                partial = fold(&stream, &valid[..seen]).ok().flatten();
                partial.as_ref()
            };
            let seen = StreamSeen {
                stream: &stream,
                events: &valid[..seen],
                reservation,
            };
            target.projection.fold(expected, &seen);
        }
    }

    /// The stream's readable events in seq order (with their cursors),
    /// reporting gaps and unreadable data.
    fn readable<'a>(
        &mut self,
        stream: &StreamId,
        rows: &'a [Row],
    ) -> (Vec<Cursor>, Vec<SeenEvent<'a>>) {
        let mut cursors = Vec::with_capacity(rows.len());
        let mut valid = Vec::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            if r.seq as usize != i + 1 {
                self.diffs
                    .push("events", stream.to_string(), "seq", i + 1, r.seq);
            }
            match &r.event {
                Ok(event) => {
                    cursors.push(r.cursor);
                    valid.push(SeenEvent {
                        seq: r.seq,
                        event,
                        recorded_at: r.recorded_at,
                        position: r.cursor.position,
                        tx_id: r.cursor.tx_id,
                    });
                }
                Err(why) => {
                    let key = stream.to_string();
                    self.diffs
                        .push("events", key, "data", "a readable event", why);
                }
            }
        }
        (cursors, valid)
    }

    /// Checks the stream against its kind's rules; a reservation stream is
    /// folded strictly (an `Err` means it breaks them and is reported).
    fn check_rules(
        &mut self,
        stream: &StreamId,
        valid: &[SeenEvent<'_>],
    ) -> Result<Option<Reservation>, ()> {
        let key = stream.to_string();
        match stream.kind() {
            StreamKind::Reservation => fold(stream, valid).map_err(|why| {
                self.diffs
                    .push("events", key, "rule", "an allowed history", why);
            }),
            // An expected receipt is folded strictly too; the fold's state
            // feeds no read model (`incoming` reads each event's own
            // statement of where it stands).
            StreamKind::Expected => {
                let StreamId::Expected(id) = stream else {
                    unreachable!("an expected receipt's stream")
                };
                let events = valid.iter().map(|e| (e.seq, e.event, Uuid::nil(), None));
                // A broken one is reported, and its events still fold into
                // the read models, as the projections' SQL folds them.
                if let Err(why) = Expectation::fold_all(id, events) {
                    self.diffs
                        .push("events", key, "rule", "an allowed history", why);
                }
                Ok(None)
            }
            StreamKind::Receipt
            | StreamKind::Adjustment
            | StreamKind::Transfer
            | StreamKind::Count
            | StreamKind::Limit
            | StreamKind::ReorderPoint
            | StreamKind::Alert => {
                for e in valid {
                    let t = e.event.event_type();
                    if !stream.kind().allows(e.seq, t) {
                        let allowed: Vec<_> = stream.kind().event_types().collect();
                        self.diffs
                            .push("events", &key, "type", format!("{allowed:?}"), t);
                    }
                }
                Ok(None)
            }
        }
    }

    /// Adds what `other` read (another partition of the same log) to this one.
    pub fn merge(&mut self, other: Replay) {
        merge_figures(&mut self.balances, other.balances);
        self.settings.merge(other.settings);
        self.backlogs.merge(other.backlogs);
        self.deliveries.merge(other.deliveries);
        for ((target, mine), (_, theirs)) in self.targets.iter_mut().zip(other.targets) {
            target.projection.merge(mine, theirs);
        }
        self.events += other.events;
        self.streams += other.streams;
        self.orders += other.orders;
        self.diffs.merge(other.diffs);
    }

    /// The targets, for loading their tables.
    pub fn targets(&self) -> Vec<Target> {
        self.targets.iter().map(|(t, _)| *t).collect()
    }

    /// Compares what the log says with the tables, loaded by `load_tables`
    /// for the same targets in the same snapshot.
    pub(crate) fn diff(mut self, tables: Tables) -> Outcome {
        std::mem::take(&mut self.deliveries).check(&mut self.diffs);
        tables.doubles.report(&mut self.diffs);
        if let Some((balances, settings, backlogs)) = tables.balances {
            compare_figures("item_balances", &self.balances, balances, &mut self.diffs);
            self.settings
                .compare(&self.balances, settings, &mut self.diffs);
            std::mem::take(&mut self.backlogs).compare(backlogs, &mut self.diffs);
        }
        let mut compared = Vec::new();
        let mut first_differing = None;
        for ((target, expected), actual) in self.targets.into_iter().zip(tables.projections) {
            let (before, kept) = (self.diffs.count, self.diffs.kept.len());
            target.projection.compare(expected, actual, &mut self.diffs);
            if self.diffs.count > before && first_differing.is_none() {
                first_differing = Some(target.projection);
            }
            // A copy other than the live one is named by its schema, in the
            // differences and in the list of what was compared.
            let mut name = target.projection.name().to_owned();
            if target.slot != Slot::Live {
                for d in &mut self.diffs.kept[kept..] {
                    d.table = format!("{}.{}", target.slot.schema(), d.table);
                }
                name = format!("{name} ({})", target.slot.as_str());
            }
            compared.push((name, target.cutoff.to_string()));
        }
        Outcome {
            events: self.events,
            streams: self.streams,
            items: self.balances.len() as u64,
            orders: self.orders,
            compared,
            diffs: self.diffs,
            first_differing,
        }
    }
}

/// The tables to compare, as they are in the snapshot.
pub(crate) struct Tables {
    /// The write side's figures, settings and backlogs, when asked for.
    pub balances: Option<(ActualFigures, ActualSettings, ActualBacklogs)>,
    pub projections: Vec<Actual>,
    /// Steps and orders the log holds twice across partitions (with the
    /// balances: the whole audit's check, not a rebuild's).
    pub doubles: Doubles,
}

/// Loads the write-side balances (when asked) and every target's tables.
pub(crate) async fn load_tables(
    client: &Client,
    targets: &[Target],
    balances: bool,
) -> Result<Tables, StoreError> {
    let (balances, doubles) = if balances {
        let figures = (
            load_figures(client, "public.item_balances").await?,
            settings::load(client).await?,
            backlogs::load(client).await?,
        );
        (Some(figures), doubles::load(client).await?)
    } else {
        (None, Doubles::default())
    };
    let mut projections = Vec::with_capacity(targets.len());
    for t in targets {
        projections.push(t.projection.load(client, t.slot.schema()).await?);
    }
    Ok(Tables {
        balances,
        projections,
        doubles,
    })
}

/// Whether a stream's rows (as read so far, in any order) are all of it:
/// seqs 1 to n, the last an event that closes its stream, or as many as its
/// kind allows. A stream with a gap or a doubled seq waits for the end of the
/// log and is folded (and reported) then.
fn complete(rows: &[Row], last: usize) -> bool {
    let n = rows.len();
    if n >= last {
        return true;
    }
    if !rows.iter().any(|r| r.closes && r.seq as usize == n) {
        return false;
    }
    let mut seqs: Vec<u32> = rows.iter().map(|r| r.seq).collect();
    seqs.sort_unstable();
    seqs.iter().enumerate().all(|(i, s)| *s as usize == i + 1)
}

/// Folds a reservation stream strictly; `None` for no events or another kind.
fn fold(
    stream: &StreamId,
    events: &[SeenEvent<'_>],
) -> Result<Option<Reservation>, StreamViolation> {
    let Some(id) = stream.reservation_id() else {
        return Ok(None);
    };
    let mut current = None;
    for e in events {
        current = Some(Reservation::fold(
            current,
            id,
            e.seq,
            e.event,
            uuid::Uuid::nil(),
            e.recorded_at,
        )?);
    }
    Ok(current)
}

/// An archived event as the replay reads it: its stream's name and its row.
/// An event that no longer reads is a row with the reason, as from the log.
fn archived(r: &ArchivedRow) -> (String, Row) {
    let json = &r.line.event;
    let name = json["stream"].as_str().unwrap_or_default().to_owned();
    let recorded = r.recorded();
    let type_name = json["type"].as_str().unwrap_or_default();
    let recorded_at = recorded
        .as_ref()
        .map_or_else(|_| DateTime::<Utc>::MIN_UTC, |e| e.recorded_at);
    let row = Row {
        seq: json["seq"]
            .as_u64()
            .and_then(|s| u32::try_from(s).ok())
            .unwrap_or(0),
        closes: EventType::parse(type_name).is_some_and(StreamKind::closes),
        event: recorded
            .map(|e| e.event)
            .map_err(|e| format!("{type_name}: {e}")),
        recorded_at,
        cursor: Cursor {
            tx_id: r.line.tx_id,
            position: r.position(),
        },
    };
    (name, row)
}
