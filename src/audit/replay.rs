//! Reading the log once and folding it into what every table should hold.

use rustc_hash::FxHashMap as HashMap;

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use tokio_postgres::types::ToSql;

use crate::audit::compare::{self, Actual};
use crate::audit::expected::{order_row, Expected, ExpiryRow};
use crate::audit::Difference;
use crate::domain::{Balance, Event, Item, Reservation, ReservationId, ReservationState};
use crate::limits::MAX_REPORTED_DIFFERENCES;
use crate::projection::{Projection, Slot};
use crate::store::{Cursor, StoreError};

/// A projection copy to compare, and the checkpoint it was built up to.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub projection: &'static Projection,
    pub cutoff: Cursor,
    pub slot: Slot,
}

/// Differences, counted in full and kept up to a limit.
#[derive(Default)]
pub(crate) struct Diffs {
    pub count: u64,
    pub kept: Vec<Difference>,
}

impl Diffs {
    pub fn push(
        &mut self,
        table: &str,
        key: impl Into<String>,
        field: &str,
        expected: impl ToString,
        actual: impl ToString,
    ) {
        self.count += 1;
        if self.kept.len() < MAX_REPORTED_DIFFERENCES {
            self.kept.push(Difference {
                table: table.to_owned(),
                key: key.into(),
                field: field.to_owned(),
                expected: expected.to_string(),
                actual: actual.to_string(),
            });
        }
    }
}

pub(crate) struct Outcome {
    pub events: u64,
    pub streams: u64,
    pub items: u64,
    pub orders: u64,
    pub compared: Vec<(String, String)>,
    pub difference_count: u64,
    pub differences: Vec<Difference>,
}

struct Row {
    stream: String,
    seq: u32,
    event: Result<Event, String>,
    recorded_at: DateTime<Utc>,
    cursor: Cursor,
}

pub struct Replay {
    targets: Vec<(Target, Expected)>,
    balances: HashMap<Item, Balance>,
    events: u64,
    streams: u64,
    orders: u64,
    diffs: Diffs,
}

/// One hash partition of the log, in physical order: no sort, so the server
/// streams it as fast as it can read it. Every event of a stream falls in the
/// same partition. Streams are put together in memory (see `read_log`).
const LOG: &str = "SELECT stream, seq, type, data::text, recorded_at, tx_id::text::bigint, position
                   FROM events WHERE (hashtext(stream) & 2147483647) % $2::int4 = $1::int4";

impl Replay {
    pub fn new(targets: Vec<Target>) -> Replay {
        let targets = targets
            .into_iter()
            .filter_map(|t| Expected::for_projection(t.projection.name).map(|e| (t, e)))
            .collect();
        Replay {
            targets,
            balances: HashMap::default(),
            events: 0,
            streams: 0,
            orders: 0,
            diffs: Diffs::default(),
        }
    }

    /// Streams the whole log and folds it stream by stream.
    ///
    /// The log is read unsorted. A receipt or adjustment is complete with its
    /// one event. A reservation's seq 1 waits in memory until its seq 2 comes
    /// by (the log is append-only, so in practice seq 1 is read first); what
    /// is still waiting at the end is folded then. Memory is therefore bounded
    /// by the reservations still open, not by the size of the log.
    /// Reads partition `part` of `parts`; the client must be inside the
    /// snapshot the comparison uses.
    pub async fn read_log(
        &mut self,
        client: &impl tokio_postgres::GenericClient,
        part: u32,
        parts: u32,
    ) -> Result<(), StoreError> {
        let stmt = client.prepare(LOG).await?;
        let (part, parts) = (part as i32, parts as i32);
        let params: [&(dyn ToSql + Sync); 2] = [&part, &parts];
        let rows = client.query_raw(&stmt, params).await?;
        let mut rows = std::pin::pin!(rows);
        let mut waiting: HashMap<String, Vec<Row>> = HashMap::default();
        while let Some(r) = rows.try_next().await? {
            let seq: i32 = r.get(1);
            let type_name: &str = r.get(2);
            let data: &str = r.get(3);
            let row = Row {
                stream: r.get(0),
                seq: seq as u32,
                event: Event::from_type_and_json(type_name, data)
                    .map_err(|e| format!("{type_name}: {e}")),
                recorded_at: r.get(4),
                cursor: Cursor {
                    tx_id: r.get(5),
                    position: r.get(6),
                },
            };
            self.events += 1;
            if !row.stream.starts_with("reservation:") {
                self.finish_stream(vec![row]);
                continue;
            }
            let stream = row.stream.clone();
            let entry = waiting.entry(stream.clone()).or_default();
            entry.push(row);
            // A reservation stream is complete once it reached seq 2.
            if entry.len() >= 2 {
                let mut rows = waiting.remove(&stream).expect("just inserted");
                rows.sort_by_key(|r| r.seq);
                self.finish_stream(rows);
            }
        }
        for (_, mut rows) in waiting {
            rows.sort_by_key(|r| r.seq);
            self.finish_stream(rows);
        }
        Ok(())
    }

    fn finish_stream(&mut self, rows: Vec<Row>) {
        self.streams += 1;
        let stream = rows[0].stream.clone();
        let mut valid = Vec::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            if r.seq as usize != i + 1 {
                self.diffs.push("events", &stream, "seq", i + 1, r.seq);
            }
            match &r.event {
                Ok(e) => valid.push((r, e)),
                Err(why) => self
                    .diffs
                    .push("events", &stream, "data", "a readable event", why),
            }
        }
        // Every event moves the write-side balances, whatever its stream.
        for (_, e) in &valid {
            add_effects(&mut self.balances, e);
        }
        if let Some(id) = stream.strip_prefix("reservation:") {
            self.reservation_stream(&stream, id, &valid);
            return;
        }
        let want = if stream.starts_with("receipt:") {
            "StockReceived"
        } else if stream.starts_with("adjustment:") {
            "StockAdjusted"
        } else {
            self.diffs.push(
                "events",
                &stream,
                "stream",
                "receipt:, adjustment: or reservation:",
                &stream,
            );
            return;
        };
        for (_, e) in &valid {
            if e.type_name() != want {
                self.diffs
                    .push("events", &stream, "type", want, e.type_name());
            }
        }
        for (target, expected) in &mut self.targets {
            if let Expected::Stock(map) = expected {
                for (r, e) in &valid {
                    if r.cursor <= target.cutoff {
                        add_effects(map, e);
                    }
                }
            }
        }
    }

    fn reservation_stream(&mut self, stream: &str, id: &str, valid: &[(&Row, &Event)]) {
        let Ok(id) = ReservationId::parse("reservation_id", id) else {
            self.diffs
                .push("events", stream, "stream", "a valid reservation id", id);
            return;
        };
        // The whole stream must obey the rules (transitions, amounts from seq 1).
        let full = match fold(&id, valid.iter().copied()) {
            Err(why) => {
                self.diffs
                    .push("events", stream, "rule", "an allowed history", why);
                return;
            }
            Ok(None) => return,
            Ok(Some(r)) => r,
        };
        if full.order_id.is_some() {
            self.orders += 1;
        }
        for (target, expected) in &mut self.targets {
            let seen = valid
                .iter()
                .filter(|(r, _)| r.cursor <= target.cutoff)
                .count();
            if seen == 0 {
                continue;
            }
            // Usually the target has seen the whole stream; fold again only
            // when its checkpoint falls inside it.
            let partial;
            let r = if seen == valid.len() {
                &full
            } else {
                match fold(&id, valid.iter().copied().take(seen)) {
                    Ok(Some(r)) => {
                        partial = r;
                        &partial
                    }
                    _ => continue,
                }
            };
            match expected {
                Expected::Stock(map) => {
                    for (_, e) in valid.iter().take(seen) {
                        add_effects(map, e);
                    }
                }
                Expected::Orders(map) => {
                    let history = valid
                        .iter()
                        .take(seen)
                        .map(|(row, e)| (row.seq, e.type_name(), row.cursor.position))
                        .collect();
                    if let Some((order, row)) = order_row(r, history) {
                        map.insert(order, row);
                    }
                }
                Expected::Expiry(map) => {
                    if let (ReservationState::Reserved, Some(order), Some(expires_at)) =
                        (r.state, &r.order_id, r.expires_at)
                    {
                        map.insert(
                            id.to_string(),
                            ExpiryRow {
                                order_id: order.to_string(),
                                expires_at,
                            },
                        );
                    }
                }
            }
        }
    }

    /// Adds what `other` read (another partition of the same log) to this one.
    pub fn merge(&mut self, other: Replay) {
        for (item, b) in other.balances {
            let mine = self.balances.entry(item).or_default();
            mine.on_hand += b.on_hand;
            mine.reserved += b.reserved;
            mine.confirmed += b.confirmed;
        }
        for ((_, mine), (_, theirs)) in self.targets.iter_mut().zip(other.targets) {
            match (mine, theirs) {
                (Expected::Stock(a), Expected::Stock(b)) => {
                    for (item, d) in b {
                        let m = a.entry(item).or_default();
                        m.on_hand += d.on_hand;
                        m.reserved += d.reserved;
                        m.confirmed += d.confirmed;
                    }
                }
                (Expected::Orders(a), Expected::Orders(b)) => a.extend(b),
                (Expected::Expiry(a), Expected::Expiry(b)) => a.extend(b),
                _ => unreachable!("replays of the same targets"),
            }
        }
        self.events += other.events;
        self.streams += other.streams;
        self.orders += other.orders;
        self.diffs.count += other.diffs.count;
        for d in other.diffs.kept {
            if self.diffs.kept.len() < MAX_REPORTED_DIFFERENCES {
                self.diffs.kept.push(d);
            }
        }
    }

    /// The targets, for loading their tables.
    pub fn targets(&self) -> Vec<Target> {
        self.targets.iter().map(|(t, _)| *t).collect()
    }

    /// Compares what the log says with the tables, loaded by `load_tables`
    /// for the same targets in the same snapshot.
    pub(crate) fn diff(mut self, tables: Tables) -> Outcome {
        if let Some(balances) = tables.balances {
            compare::figures("item_balances", &self.balances, balances, &mut self.diffs);
        }
        let mut compared = Vec::new();
        for ((target, expected), actual) in self.targets.iter().zip(tables.projections) {
            match (expected, actual) {
                (Expected::Stock(map), Actual::Figures(a)) => {
                    compare::figures(target.projection.name, map, a, &mut self.diffs)
                }
                (Expected::Orders(map), Actual::Orders(a)) => {
                    compare::orders(map, a, &mut self.diffs)
                }
                (Expected::Expiry(map), Actual::Expiry(a)) => {
                    compare::expiry(map, a, &mut self.diffs)
                }
                _ => unreachable!("tables are loaded in target order"),
            }
            compared.push((target.projection.name.to_owned(), target.cutoff.to_string()));
        }
        Outcome {
            events: self.events,
            streams: self.streams,
            items: self.balances.len() as u64,
            orders: self.orders,
            compared,
            difference_count: self.diffs.count,
            differences: self.diffs.kept,
        }
    }
}

/// The tables to compare, as they are in the snapshot.
pub(crate) struct Tables {
    pub balances: Option<compare::ActualFigures>,
    pub projections: Vec<Actual>,
}

/// Loads the write-side balances (when asked) and every target's tables.
pub(crate) async fn load_tables(
    client: &impl tokio_postgres::GenericClient,
    targets: &[Target],
    balances: bool,
) -> Result<Tables, StoreError> {
    let balances = if balances {
        match compare::load_figures(client, "public.item_balances").await? {
            Actual::Figures(f) => Some(f),
            _ => unreachable!("figures load as figures"),
        }
    } else {
        None
    };
    let mut projections = Vec::with_capacity(targets.len());
    for t in targets {
        let schema = t.slot.schema();
        projections.push(match t.projection.name {
            "stock_levels" => {
                compare::load_figures(client, &format!("{schema}.stock_levels")).await?
            }
            "order_view" => compare::load_orders(client, &format!("{schema}.order_view")).await?,
            "reservation_expiry" => {
                compare::load_expiry(client, &format!("{schema}.reservation_expiry")).await?
            }
            other => unreachable!("targets are known projections, not {other}"),
        });
    }
    Ok(Tables {
        balances,
        projections,
    })
}

/// Adds an event's stock effects to `map`, cloning an item key only the first
/// time the item is seen.
fn add_effects(map: &mut HashMap<Item, Balance>, e: &Event) {
    e.for_each_effect(|item, d| match map.get_mut(item) {
        Some(b) => b.apply(d),
        None => {
            let mut b = Balance::default();
            b.apply(d);
            map.insert(item.clone(), b);
        }
    });
}

/// Folds a reservation stream strictly; `None` for no events.
fn fold<'a>(
    id: &ReservationId,
    events: impl Iterator<Item = (&'a Row, &'a Event)>,
) -> Result<Option<Reservation>, String> {
    let mut current = None;
    for (row, e) in events {
        current = Some(
            Reservation::fold(current, id, row.seq, e, uuid::Uuid::nil(), row.recorded_at)
                .map_err(|v| v.to_string())?,
        );
    }
    Ok(current)
}
