//! `order_view`'s batch, folded in Rust: the rows a window of the log
//! changes, computed from the window's events and the rows as they stood at
//! the checkpoint, written with one statement.
//!
//! Why not SQL: building each row's `lines` and `history` with
//! `jsonb_build_object` cost about 18 µs a reservation, most of the read
//! models' upkeep (docs/benchmarks.md, issue 24); here the rows are built as
//! JSON text and PostgreSQL only parses it. The cost is the window's events
//! and the rows they touch, whatever the length of the streams before.
//!
//! This fold is incremental (a row as it stood, plus the window's events, by
//! their typed columns); the audit's is a replay of each whole stream through
//! the domain's strict reservation fold (`order_view.rs`). They share only the
//! row's layout, so the audit still checks this fold against a definition that
//! did not build the rows. Like the SQL it replaced, it must not fail on a
//! broken stream: events without the reservation's row are skipped, lines the
//! reservation does not hold are ignored, and the audit names the stream.

use std::collections::hash_map::Entry;

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

use crate::domain::{EventType, ReservationMove, ReservationState, StreamKind};
use crate::read_model::window::WindowEvent;
use crate::read_model::BoxFuture;
use crate::store::StoreError;

/// The rows of orders whose reservation began before the window.
const EXISTING: &str = "
    SELECT order_id, reservation_id, state, lines::text, expires_at, created_at,
           updated_at, history::text, last_position
    FROM order_view WHERE order_id = ANY($1)";

const UPSERT: &str = "
    INSERT INTO order_view AS o (order_id, reservation_id, state, lines, expires_at,
                                 created_at, updated_at, history, last_position)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]::jsonb[],
                         $5::timestamptz[], $6::timestamptz[], $7::timestamptz[],
                         $8::text[]::jsonb[], $9::bigint[])
    ON CONFLICT (order_id) DO UPDATE
    SET reservation_id = EXCLUDED.reservation_id, state = EXCLUDED.state,
        lines = EXCLUDED.lines, expires_at = EXCLUDED.expires_at,
        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
        history = EXCLUDED.history, last_position = EXCLUDED.last_position";

/// One line of a row: what was reserved and what became of it. Its JSON is
/// `LineView`'s (a test holds the two equal); the counts are signed so a
/// broken stream shows as it is rather than failing the batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct LineRow {
    sku: String,
    location: String,
    quantity: i64,
    open: i64,
    confirmed: i64,
    released: i64,
    expired: i64,
    /// Left out while 0, as `LineView` leaves them.
    #[serde(default, skip_serializing_if = "is_zero")]
    waiting: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    dropped: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One entry of `history`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct HistoryEntry {
    seq: i32,
    #[serde(rename = "type")]
    type_name: String,
    position: i64,
}

/// One row of `order_view`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    reservation_id: String,
    state: ReservationState,
    lines: Vec<LineRow>,
    expires_at: DateTime<Utc>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    history: Vec<HistoryEntry>,
    last_position: i64,
}

/// What the window did to one order's row.
#[derive(Debug)]
enum Slot {
    /// Its reservation began in the window, or its row was read.
    Row(Row),
    /// Its reservation began before the window; its row is still to be read.
    Unread,
}

/// The batch fold of `order_view` over a window's events, in the copy the
/// transaction's `search_path` names.
pub(crate) fn apply<'a>(
    tx: &'a Transaction<'a>,
    events: &'a [WindowEvent],
) -> BoxFuture<'a, Result<(), StoreError>> {
    Box::pin(async move {
        if events.is_empty() {
            return Ok(());
        }
        let mut rows = fold_new(events);
        read_existing(tx, &mut rows).await?;
        fold_all(&mut rows, events);
        write(tx, rows).await
    })
}

/// Every order the window touches: a fresh row for a reservation that began
/// in it, `Unread` for the others.
fn fold_new(events: &[WindowEvent]) -> HashMap<String, Slot> {
    let mut rows = HashMap::default();
    for e in events {
        let opens = e.kind.map(EventType::reservation_move) == Some(ReservationMove::Opens);
        let begins = e.seq == 1 && opens;
        match rows.entry(e.order_id.clone()) {
            Entry::Vacant(v) if begins => {
                v.insert(Slot::Row(created(e)));
            }
            Entry::Vacant(v) => {
                v.insert(Slot::Unread);
            }
            Entry::Occupied(_) => {}
        }
    }
    rows
}

/// The row a reservation's first event makes, before that event's history.
fn created(e: &WindowEvent) -> Row {
    let prefix = StreamKind::Reservation.prefix();
    Row {
        reservation_id: e
            .stream
            .strip_prefix(prefix)
            .unwrap_or(&e.stream)
            .to_owned(),
        state: ReservationState::Reserved,
        lines: e
            .lines
            .iter()
            .map(|(sku, location, q)| LineRow {
                sku: sku.clone(),
                location: location.clone(),
                quantity: *q,
                open: *q,
                confirmed: 0,
                released: 0,
                expired: 0,
                waiting: 0,
                dropped: 0,
            })
            .collect(),
        expires_at: e.expires_at.unwrap_or(e.recorded_at),
        created_at: e.recorded_at,
        updated_at: e.recorded_at,
        history: Vec::new(),
        last_position: 0,
    }
}

/// Reads the rows of the orders still `Unread`. One the table lacks (a
/// stream whose first event is not a reservation: broken) stays unread and
/// gets no row, as before.
async fn read_existing(
    tx: &Transaction<'_>,
    rows: &mut HashMap<String, Slot>,
) -> Result<(), StoreError> {
    let unread: Vec<&str> = rows
        .iter()
        .filter(|(_, s)| matches!(s, Slot::Unread))
        .map(|(o, _)| o.as_str())
        .collect();
    if unread.is_empty() {
        return Ok(());
    }
    let stmt = tx.prepare_cached(EXISTING).await?;
    let found = tx.query(&stmt, &[&unread]).await?;
    for r in found {
        let order: String = r.get(0);
        let corrupt = |what: &str, e: serde_json::Error| {
            StoreError::Corrupt(format!("order_view row of {order}: {what}: {e}").into())
        };
        let state: &str = r.get(2);
        let row = Row {
            reservation_id: r.get(1),
            state: parse_state(state).ok_or_else(|| {
                StoreError::Corrupt(format!("order_view row of {order}: state {state}").into())
            })?,
            lines: serde_json::from_str(r.get(3)).map_err(|e| corrupt("lines", e))?,
            expires_at: r.get(4),
            created_at: r.get(5),
            updated_at: r.get(6),
            history: serde_json::from_str(r.get(7)).map_err(|e| corrupt("history", e))?,
            last_position: r.get(8),
        };
        rows.insert(order, Slot::Row(row));
    }
    Ok(())
}

fn parse_state(s: &str) -> Option<ReservationState> {
    [
        ReservationState::Reserved,
        ReservationState::Confirmed,
        ReservationState::Released,
        ReservationState::Expired,
    ]
    .into_iter()
    .find(|st| st.as_str() == s)
}

/// Applies every event of the window to its order's row, in order. An event
/// of another stream that names the order (a broken log) is not the row's.
fn fold_all(rows: &mut HashMap<String, Slot>, events: &[WindowEvent]) {
    let prefix = StreamKind::Reservation.prefix();
    for e in events {
        if let Some(Slot::Row(row)) = rows.get_mut(&e.order_id) {
            if e.stream.strip_prefix(prefix) == Some(row.reservation_id.as_str()) {
                fold_event(row, e);
            }
        }
    }
}

/// One event's effect on its order's row, read from its type's row (what it
/// does to a reservation, how its lines move stock), never from its name:
/// its lines move from open to where the event says, a settling event after
/// the first sets the state, an event that moves only the hold (an
/// extension) moves the expiry, and every event is the row's latest.
fn fold_event(row: &mut Row, e: &WindowEvent) {
    let (moves, state) = match e.kind {
        Some(kind) => {
            let waiting = kind.line_effect().backordered;
            match kind.reservation_move() {
                ReservationMove::Adds => {
                    wait(row, &e.lines);
                    (None, None)
                }
                // Waiting units that leave the order were never held.
                ReservationMove::Moves { .. } if waiting < 0 => (Some(Moved::Dropped), None),
                ReservationMove::Moves { to, settles } => {
                    (Some(Moved::Out(to)), (settles && e.seq >= 2).then_some(to))
                }
                ReservationMove::Nothing if waiting < 0 => (Some(Moved::Filled), None),
                ReservationMove::Opens | ReservationMove::Nothing => (None, None),
            }
        }
        None => (None, None),
    };
    if let Some(at) = e
        .expires_at
        .filter(|_| e.kind.is_some_and(EventType::moves_hold))
    {
        row.expires_at = at;
    }
    if let Some(moved) = moves.filter(|_| e.seq >= 2) {
        for (sku, location, q) in &e.lines {
            let line = row
                .lines
                .iter_mut()
                .find(|l| &l.sku == sku && &l.location == location);
            if let Some(line) = line {
                moved.apply(line, *q);
            }
        }
    }
    // The first settling event decides the state, as a stream holds one.
    if let (Some(s), ReservationState::Reserved) = (state, row.state) {
        row.state = s;
    }
    row.history.push(HistoryEntry {
        seq: e.seq,
        type_name: e.type_name.clone(),
        position: e.position,
    });
    row.updated_at = e.recorded_at;
    row.last_position = e.position;
}

/// Where an event moves units: open ones out to where they went, waiting
/// ones into the open (filled) or out (dropped).
#[derive(Clone, Copy, Debug)]
enum Moved {
    Out(ReservationState),
    Filled,
    Dropped,
}

impl Moved {
    fn apply(self, line: &mut LineRow, q: i64) {
        let (from, to) = match self {
            Moved::Out(ReservationState::Confirmed) => (&mut line.open, &mut line.confirmed),
            Moved::Out(ReservationState::Released) => (&mut line.open, &mut line.released),
            Moved::Out(ReservationState::Expired) => (&mut line.open, &mut line.expired),
            // Held units that stay held move nowhere.
            Moved::Out(ReservationState::Reserved) => return,
            Moved::Filled => (&mut line.waiting, &mut line.open),
            Moved::Dropped => (&mut line.waiting, &mut line.dropped),
        };
        *from -= q;
        *to += q;
    }
}

/// Units placed to wait: added to the line of their item, or a line of
/// their own, kept in the domain's order of lines (location, then SKU).
fn wait(row: &mut Row, lines: &[(String, String, i64)]) {
    for (sku, location, q) in lines {
        let at = row
            .lines
            .binary_search_by(|l| (&l.location, &l.sku).cmp(&(location, sku)));
        match at {
            Ok(i) => {
                row.lines[i].quantity += q;
                row.lines[i].waiting += q;
            }
            Err(i) => row.lines.insert(
                i,
                LineRow {
                    sku: sku.clone(),
                    location: location.clone(),
                    quantity: *q,
                    open: 0,
                    confirmed: 0,
                    released: 0,
                    expired: 0,
                    waiting: *q,
                    dropped: 0,
                },
            ),
        }
    }
}

/// Writes every row the window changed with one statement.
async fn write(tx: &Transaction<'_>, rows: HashMap<String, Slot>) -> Result<(), StoreError> {
    let n = rows.len();
    let mut cols = Columns::with_capacity(n);
    for (order, slot) in rows {
        if let Slot::Row(row) = slot {
            cols.push(order, row)?;
        }
    }
    if cols.orders.is_empty() {
        return Ok(());
    }
    let stmt = tx.prepare_cached(UPSERT).await?;
    tx.execute(
        &stmt,
        &[
            &cols.orders,
            &cols.reservations,
            &cols.states,
            &cols.lines,
            &cols.expires,
            &cols.created,
            &cols.updated,
            &cols.histories,
            &cols.positions,
        ],
    )
    .await?;
    Ok(())
}

/// The rows as the columns of `UPSERT`.
#[derive(Default)]
struct Columns {
    orders: Vec<String>,
    reservations: Vec<String>,
    states: Vec<&'static str>,
    lines: Vec<String>,
    expires: Vec<DateTime<Utc>>,
    created: Vec<DateTime<Utc>>,
    updated: Vec<DateTime<Utc>>,
    histories: Vec<String>,
    positions: Vec<i64>,
}

impl Columns {
    fn with_capacity(n: usize) -> Columns {
        Columns {
            orders: Vec::with_capacity(n),
            reservations: Vec::with_capacity(n),
            states: Vec::with_capacity(n),
            lines: Vec::with_capacity(n),
            expires: Vec::with_capacity(n),
            created: Vec::with_capacity(n),
            updated: Vec::with_capacity(n),
            histories: Vec::with_capacity(n),
            positions: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, order: String, row: Row) -> Result<(), StoreError> {
        let json = |v: serde_json::Result<String>| {
            v.map_err(|e| StoreError::Invariant(format!("order_view row as JSON: {e}").into()))
        };
        self.lines.push(json(serde_json::to_string(&row.lines))?);
        self.histories
            .push(json(serde_json::to_string(&row.history))?);
        self.orders.push(order);
        self.reservations.push(row.reservation_id);
        self.states.push(row.state.as_str());
        self.expires.push(row.expires_at);
        self.created.push(row.created_at);
        self.updated.push(row.updated_at);
        self.positions.push(row.last_position);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + s, 0).expect("a valid time")
    }

    fn event(seq: i32, kind: EventType, lines: &[(&str, i64)], position: i64) -> WindowEvent {
        WindowEvent {
            stream: "reservation:r1".into(),
            seq,
            kind: Some(kind),
            type_name: kind.as_str().into(),
            expires_at: Some(at(600 + position)),
            order_id: "o1".into(),
            lines: lines
                .iter()
                .map(|(s, q)| ((*s).into(), "default".into(), *q))
                .collect(),
            recorded_at: at(position),
            position,
        }
    }

    fn line(row: &Row, sku: &str) -> (i64, i64, i64, i64, i64) {
        let l = row.lines.iter().find(|l| l.sku == sku).expect("the line");
        (l.quantity, l.open, l.confirmed, l.released, l.expired)
    }

    /// Created, shipped in part, a line released, extended, then the rest
    /// confirmed: each event moves what it names, the settling one sets the
    /// state, and the history holds all five.
    #[test]
    fn a_reservation_settled_in_steps() {
        let events = [
            event(1, EventType::ReservationCreated, &[("a", 3), ("b", 2)], 10),
            event(2, EventType::ReservationLinesConfirmed, &[("a", 1)], 11),
            event(3, EventType::ReservationLinesReleased, &[("b", 2)], 12),
            event(4, EventType::ReservationExtended, &[], 13),
            event(5, EventType::ReservationConfirmed, &[("a", 2)], 14),
        ];
        let mut rows = fold_new(&events);
        fold_all(&mut rows, &events);
        let Some(Slot::Row(row)) = rows.remove("o1") else {
            panic!("a row for o1")
        };
        assert_eq!(row.reservation_id, "r1");
        assert_eq!(row.state, ReservationState::Confirmed);
        assert_eq!(line(&row, "a"), (3, 0, 3, 0, 0));
        assert_eq!(line(&row, "b"), (2, 0, 0, 2, 0));
        assert_eq!(row.expires_at, at(613));
        assert_eq!((row.created_at, row.updated_at), (at(10), at(14)));
        assert_eq!(row.history.len(), 5);
        assert_eq!(row.last_position, 14);
    }

    /// A stream that begins before the window waits for its row; one whose
    /// row does not exist (broken) gets none.
    #[test]
    fn an_older_stream_needs_its_row() {
        let events = [event(2, EventType::ReservationExpired, &[("a", 3)], 20)];
        let mut rows = fold_new(&events);
        assert!(matches!(rows.get("o1"), Some(Slot::Unread)));
        fold_all(&mut rows, &events);
        assert!(matches!(rows.get("o1"), Some(Slot::Unread)));
    }

    /// The stored lines are `LineView`'s JSON, the served form: a line
    /// written by one reads as the other, with and without units that
    /// waited for stock (left out of both while 0).
    #[test]
    fn a_line_row_is_laid_out_as_a_line_view() {
        for (waiting, dropped) in [(0, 0), (2, 0), (0, 3), (1, 1)] {
            let view = crate::domain::LineView {
                sku: crate::domain::Sku::parse("sku", "a").expect("a valid sku"),
                location: crate::domain::Location::parse_or_default("location", None).unwrap(),
                quantity: 5 + waiting + dropped,
                open: 1,
                confirmed: 2,
                released: 1,
                expired: 1,
                waiting,
                dropped,
            };
            let json = serde_json::to_value(&view).unwrap();
            assert_eq!(json.get("waiting").is_some(), waiting > 0);
            let row: LineRow = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(serde_json::to_value(&row).unwrap(), json);
            let back: crate::domain::LineView =
                serde_json::from_value(serde_json::to_value(&row).unwrap()).unwrap();
            assert_eq!(back, view);
        }
    }

    /// A pre-order's lines: a held line gains waiting units, an item not
    /// on hand gets a line of its own in the domain's order; a fill moves
    /// waiting units to open, a drop moves them to dropped.
    #[test]
    fn backorders_wait_fill_and_drop() {
        let events = [
            event(1, EventType::ReservationCreated, &[("b", 2)], 10),
            event(2, EventType::BackorderPlaced, &[("a", 3), ("b", 1)], 11),
            event(3, EventType::BackorderFilled, &[("a", 2)], 12),
            event(4, EventType::BackorderDropped, &[("a", 1), ("b", 1)], 13),
        ];
        let mut rows = fold_new(&events);
        fold_all(&mut rows, &events);
        let Some(Slot::Row(row)) = rows.remove("o1") else {
            panic!("a row for o1")
        };
        let lines: Vec<(&str, i64, i64, i64, i64)> = row
            .lines
            .iter()
            .map(|l| (l.sku.as_str(), l.quantity, l.open, l.waiting, l.dropped))
            .collect();
        assert_eq!(lines, vec![("a", 3, 2, 0, 1), ("b", 3, 2, 0, 1)]);
    }
}
