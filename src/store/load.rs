//! The first half of a command transaction: lock what the batch touches, in an
//! order every transaction shares, and read it into a `LedgerState`.
//!
//! What to lock is the domain's answer (`Command::touches`): streams, orders,
//! and items, including the items held by a reservation a command may move.
//!
//! Lock order (and why it cannot deadlock): first transaction-scoped advisory
//! locks on every stream and order id the batch names and on every item whose
//! first balance row it may create, sorted by their hash; then the existing
//! balance rows of every item involved, sorted by (location, sku). A row is
//! created (`write.rs`) only under its item's advisory lock, so that insert
//! never waits for anyone. Every wait is on a lock taken in this one order.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper as Client;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::domain::backorder::Backlog;
use crate::domain::{
    ArchivedStream, Balance, Command, CommandContext, Item, ItemSettings, Items, LedgerState,
    Location, OrderId, RecordedEvent, Reservation, ReservationId, SingleRecord, Sku, StreamId,
    Touches,
};
use crate::store::error::{corrupt, Cause, Failure};
use crate::store::locks::Lock;
use crate::store::rows::recorded_event;
use crate::store::statements::Statements;
use crate::store::StoreError;

/// The events of each reservation stream the batch touches, as loaded: what
/// the answers show, together with what the batch appends.
pub(crate) type Timelines = HashMap<StreamId, Vec<RecordedEvent>>;

/// What the decision needs, read under locks, and the database time to decide at.
pub(crate) struct Loaded {
    pub state: LedgerState,
    pub timelines: Timelines,
    /// Items that already had a balance row (and are locked).
    pub existing: HashSet<Item>,
    pub now: DateTime<Utc>,
    /// This transaction's id and its backend's process id: what an attempt
    /// whose outcome is unknown is resolved by.
    pub tx: TxIdentity,
}

/// Which transaction, on which backend of which server incarnation, an
/// attempt runs as. The incarnation (`schema/0006`) tells whether the
/// transaction id still means this transaction: after a crash the server may
/// hand the same id out again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TxIdentity {
    pub xid: i64,
    pub backend: Backend,
    pub incarnation: uuid::Uuid,
}

/// A backend and the start of its current transaction: together they name
/// one transaction on one server, even before it has a transaction id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backend {
    pub pid: i32,
    pub xact_start: DateTime<Utc>,
}

/// Begins the transaction, locks and loads: in one round trip when every
/// command names its items (receipts, adjustments, reserves), in two when one
/// moves the items a reservation holds (confirm, release, expire), which are
/// known only once its stream is read.
///
/// Round trip 1: BEGIN, the backend's identity, the advisory locks, the
/// streams, the order owners and, when the items are known up front, their
/// balance rows and the clock. Round trip 2, if needed: the balance rows and
/// the clock. The server runs a pipeline's statements in order, so every read
/// comes after the locks it needs, and the rows are locked after every
/// advisory lock in both cases.
pub(crate) async fn lock_and_load(
    client: &Client,
    stmts: &Statements,
    batch: &[(Command, CommandContext)],
    backend: &mut Option<Backend>,
) -> Result<Loaded, Failure> {
    let touches: Vec<Touches> = batch.iter().map(|(c, _)| c.touches()).collect();
    let streams: BTreeSet<StreamId> = touches.iter().flat_map(|t| t.streams().cloned()).collect();
    let orders: BTreeSet<&OrderId> = touches.iter().filter_map(|t| t.order.as_ref()).collect();
    let creatable: BTreeSet<&Item> = touches.iter().flat_map(|t| t.may_create.iter()).collect();
    let wanted = Wanted {
        keys: lock_keys(&streams, &orders, &creatable),
        streams: streams.iter().map(StreamId::to_string).collect(),
        orders: orders.iter().map(|o| o.as_str()).collect(),
        items: named_items(&touches),
    };
    let first = round_one(client, stmts, &wanted, backend).await?;
    let mut state = LedgerState::default();
    let timelines = read_streams(first.events, &mut state)?;
    read_order_owners(first.owners, &mut state)?;
    read_archived(first.archived, &mut state)?;
    // Decide at the database's clock, read after every lock is held, so an
    // expiry is judged as close to the commit as the transaction allows.
    // The transaction id is taken here too (after the locks, so a waiting
    // transaction does not hold readers back), to resolve a lost COMMIT.
    let (rows, clock) = match first.balances {
        Some(found) => found,
        None => {
            let items: BTreeSet<Item> = touches.iter().flat_map(|t| t.items(&state)).collect();
            lock_balances(client, stmts, &items).await?
        }
    };
    let existing = read_balances(rows, &mut state)?;
    Ok(Loaded {
        state,
        timelines,
        existing,
        now: clock.get(0),
        tx: TxIdentity {
            xid: clock.get(1),
            backend: backend.expect("known since the locks were taken"),
            incarnation: clock.get(2),
        },
    })
}

/// What the first round trip asks for.
struct Wanted<'a> {
    keys: Vec<String>,
    streams: Vec<String>,
    orders: Vec<&'a str>,
    /// Every item the batch may move, if every command names its own.
    items: Option<BTreeSet<Item>>,
}

/// What the first round trip brought back.
struct RoundOne {
    events: Vec<Row>,
    owners: Vec<Row>,
    /// The directory rows of the streams named (`archived_streams`).
    archived: Vec<Row>,
    /// The balance rows and the clock, when the items were known up front.
    balances: Option<(Vec<Row>, Row)>,
}

/// The items of a batch whose commands all name theirs; `None` if one moves
/// the items a reservation holds.
fn named_items(touches: &[Touches]) -> Option<BTreeSet<Item>> {
    let mut all = BTreeSet::new();
    for t in touches {
        match &t.items {
            Items::Named(items) => all.extend(items.iter().cloned()),
            Items::HeldBy(_) | Items::ExpectedOf(_) => return None,
        }
    }
    Some(all)
}

/// The advisory lock keys: one command per stream (and per order) at a time
/// across every process (the unique (stream, seq) key stays the backstop);
/// and one per item whose first balance row the batch may create: a row is
/// only ever created under its item's lock, so no other transaction can be
/// creating it at the same time, and the insert that creates it never waits.
fn lock_keys(
    streams: &BTreeSet<StreamId>,
    orders: &BTreeSet<&OrderId>,
    creatable: &BTreeSet<&Item>,
) -> Vec<String> {
    streams
        .iter()
        .map(|s| Lock::Stream(s).name())
        .chain(orders.iter().map(|o| Lock::Order(o).name()))
        .chain(creatable.iter().map(|i| Lock::Item(i).name()))
        .collect()
}

/// Round trip 1: BEGIN, which backend this is (first, so that if the
/// connection stalls from here on the retry loop can still end this
/// transaction and free its locks), the advisory locks, the streams and the
/// order owners, and the balance rows and the clock if the items are known.
async fn round_one(
    client: &Client,
    stmts: &Statements,
    wanted: &Wanted<'_>,
    backend: &mut Option<Backend>,
) -> Result<RoundOne, Failure> {
    let no_rows = || async { Ok::<_, tokio_postgres::Error>(Vec::new()) };
    let lock_params: [&(dyn ToSql + Sync); 1] = [&wanted.keys];
    let read_params: [&(dyn ToSql + Sync); 1] = [&wanted.streams];
    let (begun, who, locked, events, owners, archived, balances) = tokio::join!(
        client.batch_execute("BEGIN"),
        client.query_one(&stmts.who, &[]),
        client.execute(&stmts.lock, &lock_params),
        client.query(&stmts.read, &read_params),
        async {
            match wanted.orders.is_empty() {
                true => no_rows().await,
                false => client.query(&stmts.owners, &[&wanted.orders]).await,
            }
        },
        client.query(&stmts.archived, &read_params),
        async {
            match &wanted.items {
                None => None,
                Some(items) => Some(rows_and_clock(client, stmts, items).await),
            }
        },
    );
    // The first error is the one that counts: after a failed lock, the
    // later statements only report that the transaction is aborted.
    begun?;
    let who = who?;
    *backend = Some(Backend {
        pid: who.get(0),
        xact_start: who.get(1),
    });
    locked?;
    let (events, owners, archived) = (events?, owners?, archived?);
    let balances = match balances {
        Some((rows, clock)) => Some((rows?, clock?)),
        None => None,
    };
    Ok(RoundOne {
        events,
        owners,
        archived,
        balances,
    })
}

/// The streams themselves, folded; returns the reservation streams' events.
/// The rows come in stream and seq order (`statements.rs`); a step read
/// twice (from the log and from `carried_events`, while a detach copies it)
/// is taken once.
fn read_streams(rows: Vec<Row>, state: &mut LedgerState) -> Result<Timelines, Failure> {
    let mut by_reservation: BTreeMap<ReservationId, Vec<RecordedEvent>> = BTreeMap::new();
    let mut last: Option<(String, i32)> = None;
    for row in rows {
        let step = (row.get::<_, String>(1), row.get::<_, i32>(2));
        if last.as_ref() == Some(&step) {
            continue;
        }
        last = Some(step);
        let e = recorded_event(&row)?;
        match &e.stream {
            StreamId::Expected(id) => state
                .fold_expected(
                    id,
                    e.seq,
                    &e.event,
                    e.metadata.command_id,
                    e.metadata.fingerprint.as_deref(),
                )
                .map_err(|v| {
                    StoreError::Corrupt(Cause::with_source(format!("stream {}", e.stream), v))
                })?,
            StreamId::Reservation(id) => by_reservation.entry(id.clone()).or_default().push(e),
            StreamId::Receipt(_)
            | StreamId::Adjustment(_)
            | StreamId::Transfer(_)
            | StreamId::Count(_)
            | StreamId::Limit(_)
            | StreamId::ReorderPoint(_) => {
                let fingerprint = e.metadata.fingerprint.clone().ok_or_else(|| {
                    StoreError::Corrupt(format!("stream {} has no fingerprint", e.stream).into())
                })?;
                let record = SingleRecord {
                    fingerprint,
                    command_id: e.metadata.command_id,
                    event: e.event,
                };
                state.singles.insert(e.stream, record);
            }
            // No command touches an alert's stream; were one loaded, it
            // would answer nothing.
            StreamId::Alert(_) => {}
        }
    }
    let mut timelines = Timelines::with_capacity(by_reservation.len());
    for (id, events) in by_reservation {
        let folded = fold_stream(&id, &events)?;
        timelines.insert(StreamId::Reservation(id.clone()), events);
        state.reservations.insert(id, folded);
    }
    Ok(timelines)
}

/// Who holds the orders the batch wants to reserve for.
fn read_order_owners(rows: Vec<Row>, state: &mut LedgerState) -> Result<(), Failure> {
    for row in rows {
        let order = OrderId::parse("order_id", row.get(0)).map_err(corrupt)?;
        let stream = StreamId::parse("stream", row.get(1)).map_err(corrupt)?;
        let Some(owner) = stream.reservation_id() else {
            let why = format!("{stream} holds the event that opens a reservation");
            return Err(StoreError::Corrupt(why.into()).into());
        };
        state.order_owners.insert(order, owner.clone());
    }
    Ok(())
}

/// The streams of the batch that are in the directory of archived streams
/// and have no events here: the decision refuses any step on them. (While
/// a detach is under way a stream may be in both; its events count.)
fn read_archived(rows: Vec<Row>, state: &mut LedgerState) -> Result<(), Failure> {
    for row in rows {
        let stream = StreamId::parse("stream", row.get(0)).map_err(corrupt)?;
        if loaded(state, &stream) {
            continue;
        }
        let last_seq: i32 = row.get(1);
        let archived = ArchivedStream {
            last_seq: u32::try_from(last_seq).map_err(|_| {
                StoreError::Corrupt(format!("{stream} is archived at seq {last_seq}").into())
            })?,
            position: row.get(2),
        };
        state.archived.insert(stream, archived);
    }
    Ok(())
}

/// Whether the stream's events were read into the state.
fn loaded(state: &LedgerState, stream: &StreamId) -> bool {
    match stream {
        StreamId::Reservation(id) => state.reservations.contains_key(id),
        StreamId::Expected(id) => state.expectations.contains_key(id),
        StreamId::Alert(_) => false,
        StreamId::Receipt(_)
        | StreamId::Adjustment(_)
        | StreamId::Transfer(_)
        | StreamId::Count(_)
        | StreamId::Limit(_)
        | StreamId::ReorderPoint(_) => state.singles.contains_key(stream),
    }
}

/// Round trip 2, for a batch whose items were not known up front.
async fn lock_balances(
    client: &Client,
    stmts: &Statements,
    items: &BTreeSet<Item>,
) -> Result<(Vec<Row>, Row), Failure> {
    let (rows, clock) = rows_and_clock(client, stmts, items).await;
    Ok((rows?, clock?))
}

/// The balance rows of every item the batch may move, locked in (location,
/// sku) order, then the clock: sent together, in that order.
async fn rows_and_clock(
    client: &Client,
    stmts: &Statements,
    items: &BTreeSet<Item>,
) -> (
    Result<Vec<Row>, tokio_postgres::Error>,
    Result<Row, tokio_postgres::Error>,
) {
    let (skus, locations): (Vec<&str>, Vec<&str>) = items
        .iter()
        .map(|i| (i.sku.as_str(), i.location.as_str()))
        .unzip();
    tokio::join!(
        async {
            match items.is_empty() {
                true => Ok(Vec::new()),
                false => client.query(&stmts.rows, &[&skus, &locations]).await,
            }
        },
        client.query_one(&stmts.clock, &[]),
    )
}

/// The balance rows into the state; returns the items that had a row.
fn read_balances(rows: Vec<Row>, state: &mut LedgerState) -> Result<HashSet<Item>, Failure> {
    let mut existing = HashSet::new();
    for row in rows {
        let item = Item {
            sku: Sku::parse("sku", row.get(0)).map_err(corrupt)?,
            location: Location::parse("location", row.get(1)).map_err(corrupt)?,
        };
        let balance = Balance {
            on_hand: row.get(2),
            reserved: row.get(3),
            confirmed: row.get(4),
            backordered: row.get(8),
        };
        let backlog: Backlog = serde_json::from_value(row.get(9))
            .map_err(|e| StoreError::Corrupt(format!("{item} has backlog: {e}").into()))?;
        if !backlog.is_empty() {
            state.backlogs.insert(item.clone(), backlog);
        }
        let units = |i: usize, name: &str| {
            let v: Option<i64> = row.get(i);
            v.map(u32::try_from)
                .transpose()
                .map_err(|_| StoreError::Corrupt(format!("{item} has {name} {v:?}").into()))
        };
        let settings = ItemSettings {
            max_per_order: units(5, "max_per_order")?,
            reorder_point: units(6, "reorder_point")?,
            alerted_low: row.get(7),
        };
        if settings != ItemSettings::default() {
            state.settings.insert(item.clone(), settings);
        }
        existing.insert(item.clone());
        state.balances.insert(item, balance);
    }
    Ok(existing)
}

/// Folds one reservation stream, reporting a broken one as corruption.
pub(crate) fn fold_stream(
    id: &ReservationId,
    events: &[RecordedEvent],
) -> Result<Reservation, StoreError> {
    let mut current: Option<Reservation> = None;
    for e in events {
        current = Some(
            Reservation::fold(
                current,
                id,
                e.seq,
                &e.event,
                e.metadata.command_id,
                e.recorded_at,
            )
            .map_err(|v| {
                StoreError::Corrupt(Cause::with_source(format!("stream {}", e.stream), v))
            })?,
        );
    }
    current.ok_or_else(|| StoreError::Corrupt(format!("reservation {id} has no events").into()))
}
