//! The events of a batch's window that the Rust batch folds read: those of
//! streams that name an order (reservations; tombstones name none), by their
//! typed columns, in commit order, read once per batch for every fold.

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;

use crate::domain::EventType;
use crate::store::log_row::{columns_at, typed_columns_sql};
use crate::store::{Cursor, StoreError};

/// The window's events of streams that name an order, in commit order (so
/// each stream's in seq order: each is appended after the one before it
/// committed).
const WINDOW: &str = concat!(
    "SELECT stream, seq, type, (data ->> 'expires_at')::timestamptz, ",
    typed_columns_sql!(),
    ", recorded_at, position
     FROM events
     WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
       AND (tx_id, position) <= ($3::text::xid8, $4::bigint)
       AND order_id IS NOT NULL
     ORDER BY tx_id, position"
);
/// Where `WINDOW`'s typed columns start; the two after them.
const TYPED_COLUMNS_AT: usize = 4;
const RECORDED_AT: usize = TYPED_COLUMNS_AT + 4;
const POSITION: usize = RECORDED_AT + 1;

/// One event of the window, as the fold reads it.
#[derive(Clone, Debug)]
pub struct WindowEvent {
    pub stream: String,
    pub seq: i32,
    pub kind: Option<EventType>,
    pub type_name: String,
    pub expires_at: Option<DateTime<Utc>>,
    pub order_id: String,
    pub lines: Vec<(String, String, i64)>,
    pub recorded_at: DateTime<Utc>,
    pub position: i64,
}

/// A batch's window `(from, to]`: its events are read the first time a
/// batch fold asks, and every other fold of the batch gets the same ones.
pub struct Window {
    pub from: Cursor,
    pub to: Cursor,
    events: Option<Vec<WindowEvent>>,
}

impl Window {
    pub fn new(from: Cursor, to: Cursor) -> Window {
        Window {
            from,
            to,
            events: None,
        }
    }

    /// The window's events, read once.
    pub async fn events(&mut self, tx: &Transaction<'_>) -> Result<&[WindowEvent], StoreError> {
        if self.events.is_none() {
            self.events = Some(read(tx, self.from, self.to).await?);
        }
        Ok(self.events.as_deref().unwrap_or_default())
    }
}

/// The window's events in `(from, to]`.
async fn read(
    tx: &Transaction<'_>,
    from: Cursor,
    to: Cursor,
) -> Result<Vec<WindowEvent>, StoreError> {
    let stmt = tx.prepare_cached(WINDOW).await?;
    let (from_tx, to_tx) = (from.tx_id.to_string(), to.tx_id.to_string());
    let rows = tx
        .query(&stmt, &[&from_tx, &from.position, &to_tx, &to.position])
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let type_name: String = r.get(2);
            let c = columns_at(r, TYPED_COLUMNS_AT);
            WindowEvent {
                stream: r.get(0),
                seq: r.get(1),
                kind: EventType::parse(&type_name),
                type_name,
                expires_at: r.get(3),
                order_id: c.order_id.unwrap_or_default().to_owned(),
                lines: c
                    .skus
                    .iter()
                    .zip(&c.locations)
                    .zip(&c.quantities)
                    .map(|((s, l), q)| ((*s).to_owned(), (*l).to_owned(), *q))
                    .collect(),
                recorded_at: r.get(RECORDED_AT),
                position: r.get(POSITION),
            }
        })
        .collect())
}
