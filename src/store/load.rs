//! The first half of a command transaction: lock what the batch touches, in an
//! order every transaction shares, and read it into a `LedgerState`.
//!
//! Lock order (and why it cannot deadlock): first transaction-scoped advisory
//! locks on every stream and order id the batch names, sorted by their hash;
//! then the balance rows of every item involved, sorted by (location, sku).
//! Every transaction takes its locks in this one global order.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;

use crate::domain::decide::SingleRecord;
use crate::domain::{
    Balance, Command, CommandContext, Item, LedgerState, Location, OrderId, RecordedEvent,
    Reservation, ReservationId, Sku,
};
use crate::store::error::Failure;
use crate::store::rows::{recorded_event, EVENT_COLUMNS};
use crate::store::StoreError;

pub(crate) const RESERVATION_PREFIX: &str = "reservation:";

/// What the decision needs, read under locks, and the database time to decide at.
pub(crate) struct Loaded {
    pub state: LedgerState,
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

pub(crate) async fn lock_and_load(
    tx: &Transaction<'_>,
    batch: &[(Command, CommandContext)],
    backend: &mut Option<Backend>,
) -> Result<Loaded, Failure> {
    let streams: BTreeSet<String> = batch.iter().map(|(c, _)| c.stream()).collect();
    let orders: BTreeSet<String> = batch
        .iter()
        .filter_map(|(c, _)| c.order_id().map(|o| o.to_string()))
        .collect();

    // 1. Advisory locks: one command per stream (and per order) at a time,
    //    across every process. The unique (stream, seq) key stays the backstop.
    let keys: Vec<String> = streams
        .iter()
        .cloned()
        .chain(orders.iter().map(|o| format!("order:{o}")))
        .collect();
    let lock = tx
        .prepare_cached(
            "SELECT pg_advisory_xact_lock(h) FROM (
                 SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest($1::text[]) AS k ORDER BY 1
             ) AS sorted",
        )
        .await?;
    // Which backend this is, sent in the same flight as the locks: if the
    // connection stalls from here on, the retry loop can still end this
    // transaction and free its locks.
    let who = tx.prepare_cached("SELECT pg_backend_pid(), now()").await?;
    let lock_params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&keys];
    let (who, locked) = tokio::join!(tx.query_one(&who, &[]), tx.execute(&lock, &lock_params));
    let who = who?;
    *backend = Some(Backend {
        pid: who.get(0),
        xact_start: who.get(1),
    });
    locked?;

    // 2. The streams themselves.
    let mut state = LedgerState::default();
    let stream_list: Vec<String> = streams.into_iter().collect();
    let read = tx
        .prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE stream = ANY($1) ORDER BY stream, seq"
        ))
        .await?;
    let mut by_reservation: BTreeMap<ReservationId, Vec<RecordedEvent>> = BTreeMap::new();
    for row in tx.query(&read, &[&stream_list]).await? {
        let e = recorded_event(&row)?;
        if let Some(id) = e.stream.strip_prefix(RESERVATION_PREFIX) {
            let id = ReservationId::parse("stream", id)
                .map_err(|r| StoreError::Corrupt(format!("stream {}: {r}", e.stream)))?;
            by_reservation.entry(id).or_default().push(e);
        } else {
            let fingerprint = e.metadata.fingerprint.clone().ok_or_else(|| {
                StoreError::Corrupt(format!("stream {} has no fingerprint", e.stream))
            })?;
            state.singles.insert(
                e.stream.clone(),
                SingleRecord {
                    fingerprint,
                    command_id: e.metadata.command_id,
                    event: e.event,
                },
            );
        }
    }
    for (id, events) in by_reservation {
        state
            .reservations
            .insert(id.clone(), fold_stream(&id, &events)?);
    }

    // 3. Who holds the orders the batch wants to reserve for.
    if !orders.is_empty() {
        let order_list: Vec<String> = orders.into_iter().collect();
        let owners = tx
            .prepare_cached(
                "SELECT data ->> 'order_id', stream FROM events
                 WHERE type = 'ReservationCreated' AND (data ->> 'order_id') = ANY($1)",
            )
            .await?;
        for row in tx.query(&owners, &[&order_list]).await? {
            let order: String = row.get(0);
            let stream: String = row.get(1);
            let owner = stream.strip_prefix(RESERVATION_PREFIX).unwrap_or(&stream);
            state.order_owners.insert(
                OrderId::parse("order_id", &order)
                    .map_err(|r| StoreError::Corrupt(r.to_string()))?,
                ReservationId::parse("reservation_id", owner)
                    .map_err(|r| StoreError::Corrupt(r.to_string()))?,
            );
        }
    }

    // 4. Balance rows of every item involved, locked in (location, sku) order:
    //    items the commands name, and items held by reservations they may move.
    let mut items: BTreeSet<Item> = batch.iter().flat_map(|(c, _)| c.named_items()).collect();
    for r in state.reservations.values() {
        items.extend(r.lines.iter().map(|l| l.item.clone()));
    }
    let mut existing = HashSet::new();
    if !items.is_empty() {
        let (skus, locations): (Vec<&str>, Vec<&str>) = items
            .iter()
            .map(|i| (i.sku.as_str(), i.location.as_str()))
            .unzip();
        let lock_rows = tx
            .prepare_cached(
                "SELECT b.sku, b.location, b.on_hand, b.reserved, b.confirmed
                 FROM item_balances AS b
                 JOIN unnest($1::text[], $2::text[]) AS u(sku, location) USING (sku, location)
                 ORDER BY b.location, b.sku
                 FOR UPDATE OF b",
            )
            .await?;
        for row in tx.query(&lock_rows, &[&skus, &locations]).await? {
            let corrupt = |r: crate::domain::Rejection| StoreError::Corrupt(r.to_string());
            let item = Item {
                sku: Sku::parse("sku", row.get(0)).map_err(corrupt)?,
                location: Location::parse("location", row.get(1)).map_err(corrupt)?,
            };
            let balance = Balance {
                on_hand: row.get(2),
                reserved: row.get(3),
                confirmed: row.get(4),
            };
            existing.insert(item.clone());
            state.balances.insert(item, balance);
        }
    }

    // 5. Decide at the database's clock, read after every lock is held, so an
    //    expiry is judged as close to the commit as the transaction allows.
    //    The transaction id is taken here too (after the locks, so a waiting
    //    transaction does not hold readers back), to resolve a lost COMMIT.
    let clock = tx
        .prepare_cached(
            "SELECT clock_timestamp(), pg_current_xact_id()::text::bigint, stockledger_incarnation()",
        )
        .await?;
    let row = tx.query_one(&clock, &[]).await?;
    let now: DateTime<Utc> = row.get(0);

    Ok(Loaded {
        state,
        existing,
        now,
        tx: TxIdentity {
            xid: row.get(1),
            backend: backend.expect("known since the locks were taken"),
            incarnation: row.get(2),
        },
    })
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
            .map_err(|v| StoreError::Corrupt(format!("stream {}: {v}", e.stream)))?,
        );
    }
    current.ok_or_else(|| StoreError::Corrupt(format!("reservation {id} has no events")))
}
