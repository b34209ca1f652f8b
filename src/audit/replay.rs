//! Reading the log once and folding it into what every table should hold.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;
use futures_util::TryStreamExt;
use tokio_postgres::types::ToSql;

use crate::audit::compare;
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
    check_balances: bool,
    balances: BTreeMap<Item, Balance>,
    events: u64,
    streams: u64,
    orders: u64,
    diffs: Diffs,
}

const LOG_IN_STREAM_ORDER: &str = "
    SELECT stream, seq, type, data::text, recorded_at, tx_id::text::bigint, position
    FROM events ORDER BY stream, seq";

impl Replay {
    /// `check_balances`: also compare the write-side balances (the audit does,
    /// a rebuild verification does not need to).
    pub fn new(targets: Vec<Target>, check_balances: bool) -> Replay {
        let targets = targets
            .into_iter()
            .filter_map(|t| Expected::for_projection(t.projection.name).map(|e| (t, e)))
            .collect();
        Replay {
            targets,
            check_balances,
            balances: BTreeMap::new(),
            events: 0,
            streams: 0,
            orders: 0,
            diffs: Diffs::default(),
        }
    }

    /// Streams the whole log in (stream, seq) order, folding one stream at a
    /// time; memory holds one stream plus the expected tables.
    pub async fn read_log(&mut self, tx: &Transaction<'_>) -> Result<(), StoreError> {
        let stmt = tx.prepare(LOG_IN_STREAM_ORDER).await?;
        let rows = tx
            .query_raw(&stmt, std::iter::empty::<&(dyn ToSql + Sync)>())
            .await?;
        let mut rows = std::pin::pin!(rows);
        let mut current: Vec<Row> = Vec::new();
        while let Some(r) = rows.try_next().await? {
            let stream: String = r.get(0);
            if current.first().is_some_and(|c| c.stream != stream) {
                self.finish_stream(std::mem::take(&mut current));
            }
            let seq: i32 = r.get(1);
            let type_name: String = r.get(2);
            let data: String = r.get(3);
            current.push(Row {
                stream,
                seq: seq as u32,
                event: Event::from_type_and_json(&type_name, &data)
                    .map_err(|e| format!("{type_name}: {e}")),
                recorded_at: r.get(4),
                cursor: Cursor {
                    tx_id: r.get(5),
                    position: r.get(6),
                },
            });
            self.events += 1;
        }
        if !current.is_empty() {
            self.finish_stream(current);
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
            for (item, d) in e.stock_effects() {
                self.balances.entry(item).or_default().apply(d);
            }
        }
        if let Some(id) = stream.strip_prefix("reservation:") {
            self.reservation_stream(&stream, id, &valid);
        } else {
            let want = if stream.starts_with("receipt:") {
                Some("StockReceived")
            } else if stream.starts_with("adjustment:") {
                Some("StockAdjusted")
            } else {
                None
            };
            match want {
                None => self.diffs.push(
                    "events",
                    &stream,
                    "stream",
                    "receipt:, adjustment: or reservation:",
                    &stream,
                ),
                Some(t) => {
                    if rows.len() != 1 {
                        self.diffs.push("events", &stream, "events", 1, rows.len());
                    }
                    for (_, e) in &valid {
                        if e.type_name() != t {
                            self.diffs.push("events", &stream, "type", t, e.type_name());
                        }
                    }
                }
            }
            for (target, expected) in &mut self.targets {
                if let Expected::Stock(map) = expected {
                    for (r, e) in &valid {
                        if r.cursor <= target.cutoff {
                            for (item, d) in e.stock_effects() {
                                map.entry(item).or_default().apply(d);
                            }
                        }
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
        match fold(&id, valid.iter().copied()) {
            Err(why) => {
                self.diffs
                    .push("events", stream, "rule", "an allowed history", why);
                return;
            }
            Ok(Some(r)) if r.order_id.is_some() => self.orders += 1,
            Ok(_) => {}
        }
        for (target, expected) in &mut self.targets {
            let seen: Vec<(&Row, &Event)> = valid
                .iter()
                .copied()
                .filter(|(r, _)| r.cursor <= target.cutoff)
                .collect();
            match expected {
                Expected::Stock(map) => {
                    for (_, e) in &seen {
                        for (item, d) in e.stock_effects() {
                            map.entry(item).or_default().apply(d);
                        }
                    }
                }
                Expected::Orders(map) => {
                    if let Ok(Some(r)) = fold(&id, seen.iter().copied()) {
                        let history = seen
                            .iter()
                            .map(|(row, e)| {
                                (row.seq, e.type_name().to_owned(), row.cursor.position)
                            })
                            .collect();
                        if let Some((order, row)) = order_row(&r, history) {
                            map.insert(order, row);
                        }
                    }
                }
                Expected::Expiry(map) => {
                    if let Ok(Some(r)) = fold(&id, seen.iter().copied()) {
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
    }

    /// Compares what the log says with the tables, inside the same snapshot.
    pub(crate) async fn compare(mut self, tx: &Transaction<'_>) -> Result<Outcome, StoreError> {
        if self.check_balances {
            compare::figures(
                tx,
                "item_balances",
                "public.item_balances",
                &self.balances,
                &mut self.diffs,
            )
            .await?;
        }
        let mut compared = Vec::new();
        for (target, expected) in &self.targets {
            let schema = target.slot.schema();
            let name = target.projection.name;
            match expected {
                Expected::Stock(map) => {
                    compare::figures(
                        tx,
                        name,
                        &format!("{schema}.stock_levels"),
                        map,
                        &mut self.diffs,
                    )
                    .await?
                }
                Expected::Orders(map) => {
                    compare::orders(tx, &format!("{schema}.order_view"), map, &mut self.diffs)
                        .await?
                }
                Expected::Expiry(map) => {
                    compare::expiry(
                        tx,
                        &format!("{schema}.reservation_expiry"),
                        map,
                        &mut self.diffs,
                    )
                    .await?
                }
            }
            compared.push((name.to_owned(), target.cutoff.to_string()));
        }
        Ok(Outcome {
            events: self.events,
            streams: self.streams,
            items: self.balances.len() as u64,
            orders: self.orders,
            compared,
            difference_count: self.diffs.count,
            differences: self.diffs.kept,
        })
    }
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
