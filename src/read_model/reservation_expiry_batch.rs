//! `reservation_expiry`'s batch, folded in Rust: reservations opened in the
//! window and still open at its end are inserted, those extended move their
//! expiry, those settled are deleted, each set with one statement of
//! constant shape.
//!
//! Why not SQL: its three statements joined the window with itself and the
//! table, so PostgreSQL planned each one afresh for every batch (about 1 ms a
//! statement, more than running it at one caller), and their generic plans
//! ran up to 150 times slower (docs/benchmarks.md, issue 24). These
//! statements take arrays and plan once.
//!
//! The audit checks the table against its replay of whole streams
//! (`reservation_expiry.rs`), which this fold does not use.

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;
use rustc_hash::FxHashMap as HashMap;

use crate::domain::{EventType, ReservationMove, StreamKind};
use crate::read_model::window::WindowEvent;
use crate::read_model::BoxFuture;
use crate::store::StoreError;

const INSERT: &str = "
    INSERT INTO reservation_expiry (reservation_id, order_id, expires_at)
    SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])";

const EXTEND: &str = "
    UPDATE reservation_expiry AS r SET expires_at = x.expires_at
    FROM unnest($1::text[], $2::timestamptz[]) AS x(reservation_id, expires_at)
    WHERE r.reservation_id = x.reservation_id";

const CLOSE: &str = "DELETE FROM reservation_expiry WHERE reservation_id = ANY($1)";

/// What the window does to one reservation's row.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Change {
    /// Opened in the window and open at its end: inserted.
    Open {
        order_id: String,
        expires_at: DateTime<Utc>,
    },
    /// Opened in the window and settled in it: never a row.
    Gone,
    /// Opened before: its row's expiry moves to the latest extension.
    Extend(DateTime<Utc>),
    /// Opened before and settled in the window: its row goes.
    Close,
}

/// The batch fold of `reservation_expiry` over a window's events, in the
/// copy the transaction's `search_path` names.
pub(crate) fn apply<'a>(
    tx: &'a Transaction<'a>,
    events: &'a [WindowEvent],
) -> BoxFuture<'a, Result<(), StoreError>> {
    Box::pin(write(tx, changes(events)))
}

/// Each reservation's change, by reservation id, from the window's events
/// in order.
fn changes(events: &[WindowEvent]) -> HashMap<String, Change> {
    let prefix = StreamKind::Reservation.prefix();
    let mut changes: HashMap<String, Change> = HashMap::default();
    for e in events {
        let Some(id) = e.stream.strip_prefix(prefix) else {
            continue;
        };
        // Read from the type's row, never its name: what opens a
        // reservation, what settles it, and any later event that says when
        // its hold ends and moves nothing else (an extension).
        let opens = e.kind.map(EventType::reservation_move) == Some(ReservationMove::Opens);
        let settles = e.seq >= 2 && e.kind.is_some_and(EventType::closes);
        let extends = e.seq >= 2 && e.kind.is_some_and(EventType::moves_hold);
        let now = changes.get(id).cloned();
        let next = match (e.kind, now) {
            (Some(_), _) if opens && e.seq == 1 => e.expires_at.map(|at| Change::Open {
                order_id: e.order_id.clone(),
                expires_at: at,
            }),
            (_, Some(Change::Open { .. })) if settles => Some(Change::Gone),
            _ if settles => Some(Change::Close),
            (_, now) if extends => match (now, e.expires_at) {
                (Some(Change::Open { order_id, .. }), Some(at)) => Some(Change::Open {
                    order_id,
                    expires_at: at,
                }),
                (Some(Change::Extend(was)), Some(at)) => Some(Change::Extend(was.max(at))),
                (None, Some(at)) => Some(Change::Extend(at)),
                (now, _) => now,
            },
            (_, now) => now,
        };
        if let Some(next) = next {
            changes.insert(id.to_owned(), next);
        }
    }
    changes
}

async fn write(tx: &Transaction<'_>, changes: HashMap<String, Change>) -> Result<(), StoreError> {
    let (mut opened, mut orders, mut expiries) = (Vec::new(), Vec::new(), Vec::new());
    let (mut extended, mut extended_to, mut closed) = (Vec::new(), Vec::new(), Vec::new());
    for (id, change) in changes {
        match change {
            Change::Open {
                order_id,
                expires_at,
            } => {
                opened.push(id);
                orders.push(order_id);
                expiries.push(expires_at);
            }
            Change::Extend(at) => {
                extended.push(id);
                extended_to.push(at);
            }
            Change::Close => closed.push(id),
            Change::Gone => {}
        }
    }
    if !opened.is_empty() {
        let stmt = tx.prepare_cached(INSERT).await?;
        tx.execute(&stmt, &[&opened, &orders, &expiries]).await?;
    }
    if !extended.is_empty() {
        let stmt = tx.prepare_cached(EXTEND).await?;
        tx.execute(&stmt, &[&extended, &extended_to]).await?;
    }
    if !closed.is_empty() {
        let stmt = tx.prepare_cached(CLOSE).await?;
        tx.execute(&stmt, &[&closed]).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + s, 0).expect("a valid time")
    }

    fn event(id: &str, seq: i32, kind: EventType, expires: i64) -> WindowEvent {
        WindowEvent {
            stream: format!("{}{id}", StreamKind::Reservation.prefix()),
            seq,
            kind: Some(kind),
            type_name: kind.as_str().into(),
            expires_at: Some(at(expires)),
            order_id: format!("o-{id}"),
            lines: Vec::new(),
            recorded_at: at(0),
            position: 0,
        }
    }

    /// One row of the outcome per case: opened and left open, opened and
    /// extended, opened and settled in the window, and reservations opened
    /// before it that are extended twice or settled (after an extension).
    #[test]
    fn each_reservation_gets_its_change() {
        use EventType::*;
        let events = [
            event("open", 1, ReservationCreated, 10),
            event("longer", 1, ReservationCreated, 10),
            event("longer", 2, ReservationExtended, 20),
            event("brief", 1, ReservationCreated, 10),
            event("brief", 2, ReservationLinesConfirmed, 0),
            event("brief", 3, ReservationConfirmed, 0),
            event("old", 4, ReservationExtended, 30),
            event("old", 5, ReservationExtended, 40),
            event("done", 3, ReservationExtended, 30),
            event("done", 4, ReservationExpired, 0),
        ];
        let c = changes(&events);
        let open = |id: &str, s| Change::Open {
            order_id: format!("o-{id}"),
            expires_at: at(s),
        };
        assert_eq!(c["open"], open("open", 10));
        assert_eq!(c["longer"], open("longer", 20));
        assert_eq!(c["brief"], Change::Gone);
        assert_eq!(c["old"], Change::Extend(at(40)));
        assert_eq!(c["done"], Change::Close);
        assert_eq!(c.len(), 5);
    }
}
