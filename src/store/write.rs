//! The second half of a command transaction: append the batch's events with
//! one statement, move the balances with at most two, and commit, all in one
//! round trip.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper as Client;
use tokio_postgres::types::ToSql;

use crate::domain::backorder::Backlog;
use crate::domain::shape;
use crate::domain::{EventMetadata, Item, LedgerState, NewEvent, Setting, StockDelta};
use crate::store::error::Failure;
use crate::store::log_row::{encode, metadata_row};
use crate::store::statements::Statements;
use crate::store::StoreError;

/// Everything the second half sends, as bound parameters.
pub(crate) struct Writes<'a> {
    events: EventColumns<'a>,
    now: DateTime<Utc>,
    /// Net balance changes of rows that existed, and of new rows.
    update: Columns<'a>,
    insert: Columns<'a>,
    /// Each item's settings after the batch, for the items it set anything on.
    settings: SettingColumns,
    /// Each item's backlog after the batch, for the items it changed one of.
    backlogs: (Vec<&'a str>, Vec<&'a str>, Vec<serde_json::Value>),
}

/// Per item: sku, location, and for each setting whether it was set and to what.
#[derive(Default)]
struct SettingColumns {
    skus: Vec<String>,
    locations: Vec<String>,
    set_max: Vec<bool>,
    max_per_order: Vec<Option<i64>>,
    set_point: Vec<bool>,
    reorder_point: Vec<Option<i64>>,
    set_low: Vec<bool>,
    alerted_low: Vec<bool>,
}

/// What a batch set on one item; `None` for what it left alone.
#[derive(Default)]
struct Set {
    max_per_order: Option<Option<u32>>,
    reorder_point: Option<Option<u32>>,
    alerted_low: Option<bool>,
}

#[derive(Default)]
struct EventColumns<'a> {
    streams: Vec<String>,
    seqs: Vec<i32>,
    types: Vec<&'static str>,
    /// Each event's shape version: its type's current one.
    versions: Vec<i16>,
    data: Vec<serde_json::Value>,
    metadata: Vec<serde_json::Value>,
    orders: Vec<Option<&'a str>>,
    line_of: Vec<i32>,
    skus: Vec<&'a str>,
    locations: Vec<&'a str>,
    quantities: Vec<i64>,
}

impl<'a> Writes<'a> {
    /// What appending `events` and moving the balances by their net effect
    /// takes; `existing` are the items whose rows the load locked.
    pub(crate) fn new(
        events: &'a [(NewEvent, EventMetadata)],
        net: &'a [(Item, StockDelta)],
        backlogs: &'a [(Item, Backlog)],
        existing: &HashSet<Item>,
        now: DateTime<Utc>,
    ) -> Writes<'a> {
        let mut c = EventColumns::default();
        for (i, (e, m)) in events.iter().enumerate() {
            let row = encode(&e.event);
            let version = shape::current(e.event.event_type());
            c.streams.push(e.stream.to_string());
            c.seqs.push(e.seq as i32);
            c.types.push(e.event.type_name());
            c.versions.push(version as i16);
            c.orders.push(row.order_id);
            c.data.push(row.data);
            c.metadata.push(metadata_row(&e.event, version, m));
            c.line_of
                .extend(std::iter::repeat_n(i as i32 + 1, row.skus.len()));
            c.skus.extend(row.skus);
            c.locations.extend(row.locations);
            c.quantities.extend(row.quantities);
        }
        let (old, new): (Vec<_>, Vec<_>) = net.iter().partition(|(i, _)| existing.contains(i));
        // A row that exists and does not move is left alone; a new item's row
        // is created even by an event that moves nothing (a count of 0 where
        // nothing was ever received), as every read model creates it.
        let old: Vec<_> = old
            .into_iter()
            .filter(|(_, d)| *d != StockDelta::default())
            .collect();
        Writes {
            events: c,
            now,
            update: columns(&old),
            insert: columns(&new),
            settings: settings(events),
            backlogs: backlog_columns(backlogs),
        }
    }
}

/// The backlogs as bound columns.
fn backlog_columns(backlogs: &[(Item, Backlog)]) -> (Vec<&str>, Vec<&str>, Vec<serde_json::Value>) {
    let mut c = (Vec::new(), Vec::new(), Vec::new());
    for (item, backlog) in backlogs {
        c.0.push(item.sku.as_str());
        c.1.push(item.location.as_str());
        c.2.push(serde_json::to_value(backlog).expect("a backlog serialises"));
    }
    c
}

/// The items whose backlog the batch's events change, with the backlog
/// the decision left them, in (location, sku) order.
pub(crate) fn changed_backlogs(
    events: &[(NewEvent, EventMetadata)],
    state: &LedgerState,
) -> Vec<(Item, Backlog)> {
    let items: BTreeSet<Item> = events
        .iter()
        .filter(|(e, _)| e.event.event_type().moves_backlog())
        .flat_map(|(e, _)| e.event.stock_effects().into_iter().map(|(item, _)| item))
        .collect();
    items
        .into_iter()
        .map(|item| {
            let backlog = state.backlog(&item);
            (item, backlog)
        })
        .collect()
}

/// The net effect of the batch's events per item, in (location, sku) order:
/// every item an event names, also when the effects add up to nothing.
pub(crate) fn net_effects(events: &[(NewEvent, EventMetadata)]) -> Vec<(Item, StockDelta)> {
    let mut net: BTreeMap<Item, StockDelta> = BTreeMap::new();
    for (e, _) in events {
        e.event.for_each_effect(|item, d| {
            let n = net.entry(item.clone()).or_default();
            n.on_hand += d.on_hand;
            n.reserved += d.reserved;
            n.confirmed += d.confirmed;
            n.backordered += d.backordered;
        });
    }
    net.into_iter().collect()
}

/// The settings the batch's events set, per item, in (location, sku) order:
/// the last event of an item says what holds, as it does for the domain.
/// A setting the batch did not set is `None`, and stays as it was.
fn settings(events: &[(NewEvent, EventMetadata)]) -> SettingColumns {
    let mut set: BTreeMap<Item, Set> = BTreeMap::new();
    for (e, _) in events {
        if let Some((item, setting)) = e.event.setting() {
            let s = set.entry(item).or_default();
            match setting {
                Setting::MaxPerOrder(max) => s.max_per_order = Some(max),
                Setting::ReorderPoint(point) => s.reorder_point = Some(point),
                Setting::AlertedLow(low) => s.alerted_low = Some(low),
            }
        }
    }
    let mut c = SettingColumns::default();
    for (item, s) in set {
        c.skus.push(item.sku.as_str().to_owned());
        c.locations.push(item.location.as_str().to_owned());
        c.set_max.push(s.max_per_order.is_some());
        c.max_per_order
            .push(s.max_per_order.flatten().map(i64::from));
        c.set_point.push(s.reorder_point.is_some());
        c.reorder_point
            .push(s.reorder_point.flatten().map(i64::from));
        c.set_low.push(s.alerted_low.is_some());
        c.alerted_low.push(s.alerted_low.unwrap_or(false));
    }
    c
}

/// An appended event's place and stamp, as the log holds them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stamped {
    pub position: i64,
    pub recorded_at: DateTime<Utc>,
    pub tx_id: i64,
}

/// Round trip 3 (of a command transaction): appends the events, moves the
/// balances and commits, as one pipeline. Returns the events' positions and
/// stamps in the order of the batch: the insert hands positions out in that
/// order (its ORDER BY), which is the order the commands were decided in.
///
/// Every statement was prepared before the transaction began, so each
/// request goes out when its future is first polled, and `join!` polls them
/// in the order written: the server sees INSERT, UPDATE, INSERT, COMMIT. If
/// a statement fails, the transaction is aborted and the COMMIT ends it as a
/// ROLLBACK without an error of its own, so the first statement error is
/// the answer and a COMMIT is only trusted when everything before it
/// succeeded.
pub(crate) async fn append_move_commit(
    client: &Client,
    stmts: &Statements,
    w: &Writes<'_>,
) -> Result<Vec<Stamped>, Failure> {
    let e = &w.events;
    let append: [&(dyn ToSql + Sync); 12] = [
        &e.streams,
        &e.seqs,
        &e.types,
        &e.data,
        &e.metadata,
        &w.now,
        &e.orders,
        &e.line_of,
        &e.skus,
        &e.locations,
        &e.quantities,
        &e.versions,
    ];
    let (u, i) = (&w.update, &w.insert);
    let update: [&(dyn ToSql + Sync); 6] = [&u.0, &u.1, &u.2, &u.3, &u.4, &u.5];
    let insert: [&(dyn ToSql + Sync); 6] = [&i.0, &i.1, &i.2, &i.3, &i.4, &i.5];
    let b = &w.backlogs;
    let backlogs: [&(dyn ToSql + Sync); 3] = [&b.0, &b.1, &b.2];
    let s = &w.settings;
    let settings: [&(dyn ToSql + Sync); 8] = [
        &s.skus,
        &s.locations,
        &s.set_max,
        &s.max_per_order,
        &s.set_point,
        &s.reorder_point,
        &s.set_low,
        &s.alerted_low,
    ];
    let (appended, updated, inserted, set, waiting, committed) = tokio::join!(
        client.query(&stmts.append, &append),
        unless_empty(client, &stmts.update_balances, &update, u.0.is_empty()),
        unless_empty(client, &stmts.insert_balances, &insert, i.0.is_empty()),
        unless_empty(client, &stmts.set_settings, &settings, s.skus.is_empty()),
        unless_empty(client, &stmts.set_backlogs, &backlogs, b.0.is_empty()),
        client.batch_execute("COMMIT"),
    );
    let rows = appended.map_err(|err| match Failure::from(err) {
        // Room for this whole append, which may span partitions.
        Failure::NoRoom(why, _) => Failure::NoRoom(why, e.streams.len() as i64),
        other => other,
    })?;
    updated?;
    inserted?;
    let (set, waiting) = (set?, waiting?);
    committed?;
    // Every item a setting or a backlog names has a row by now: its event
    // names the item, so the insert above created a new one, and an
    // existing one is locked by the load (nothing deletes balance rows).
    // This is a tripwire for a bug, reported after the fact: the audit
    // names such a row too.
    rows_written("settings", s.skus.len(), set)?;
    rows_written("backlogs", b.0.len(), waiting)?;
    stamps(&rows, e.streams.len())
}

/// Runs `stmt` unless it has nothing to write (`empty`): 0 rows then.
async fn unless_empty(
    client: &Client,
    stmt: &tokio_postgres::Statement,
    params: &[&(dyn ToSql + Sync)],
    empty: bool,
) -> Result<u64, tokio_postgres::Error> {
    match empty {
        true => Ok(0),
        false => client.execute(stmt, params).await,
    }
}

/// The tripwire of a statement that must write one row per value sent.
fn rows_written(what: &str, sent: usize, written: u64) -> Result<(), Failure> {
    if written == sent as u64 {
        return Ok(());
    }
    Err(Failure::Fatal(StoreError::Invariant(
        format!("{sent} {what} written to {written} rows").into(),
    )))
}

/// The appended events' stamps in log order, `expected` of them.
fn stamps(rows: &[tokio_postgres::Row], expected: usize) -> Result<Vec<Stamped>, Failure> {
    // RETURNING promises no order; the positions themselves do.
    let mut positions: Vec<Stamped> = rows
        .iter()
        .map(|r| Stamped {
            position: r.get(0),
            recorded_at: r.get(1),
            tx_id: r.get(2),
        })
        .collect();
    positions.sort_unstable_by_key(|s| s.position);
    if positions.len() != expected {
        return Err(Failure::Fatal(StoreError::Invariant(
            format!("{expected} events appended as {} rows", positions.len()).into(),
        )));
    }
    Ok(positions)
}

type Columns<'a> = (
    Vec<&'a str>,
    Vec<&'a str>,
    Vec<i64>,
    Vec<i64>,
    Vec<i64>,
    Vec<i64>,
);

fn columns<'a>(rows: &[&'a (Item, StockDelta)]) -> Columns<'a> {
    let mut c: Columns<'a> = Default::default();
    for (item, d) in rows {
        c.0.push(item.sku.as_str());
        c.1.push(item.location.as_str());
        c.2.push(d.on_hand);
        c.3.push(d.reserved);
        c.4.push(d.confirmed);
        c.5.push(d.backordered);
    }
    c
}
