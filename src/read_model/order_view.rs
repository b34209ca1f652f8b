//! `order_view`: one row per order, with its reservation, state, lines,
//! times and a compact history.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper;
use rustc_hash::FxHashMap as HashMap;
use tokio_postgres::Client;

use crate::domain::{LineView, OrderId, Reservation, ReservationState};
use crate::read_model::{BatchFold, Diffs, Model, Rows, StreamSeen};
use crate::store::StoreError;

pub struct OrderView;

pub static ORDER_VIEW: Model<OrderView> = Model {
    name: "order_view",
    tables: &["order_view"],
    schema: include_str!("../../projections/order_view/schema.sql"),
    // Folded in Rust, from the window's events and the rows they touch
    // (`order_view_batch.rs` says why).
    apply: &[],
    batch: Some(BatchFold {
        version: "order_view batch fold 2",
        apply: crate::read_model::order_view_batch::apply,
    }),
    rows: PhantomData,
};

/// The label of its differences: the model's name.
const LABEL: &str = ORDER_VIEW.name;

/// One row as the log says it should be, by order id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderRow {
    pub reservation_id: String,
    pub state: ReservationState,
    /// The lines as reserved, each with what became of it.
    pub lines: Vec<LineView>,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// (seq, type, position) per event, oldest first.
    pub history: Vec<(u32, &'static str, i64)>,
}

/// A row as stored; unreadable jsonb is kept as the error.
pub struct StoredOrder {
    reservation_id: String,
    state: String,
    lines: Result<Vec<LineView>, String>,
    expires_at: DateTime<Utc>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    history: Result<Vec<(u32, String, i64)>, String>,
}

/// One entry of `order_view.history`, as stored.
#[derive(serde::Deserialize)]
struct HistoryEntry {
    seq: u32,
    #[serde(rename = "type")]
    type_name: String,
    position: i64,
}

impl Rows for OrderView {
    type Expected = HashMap<String, OrderRow>;
    type Actual = HashMap<String, StoredOrder>;

    /// A placed reservation is its order's row; a tombstone names no order.
    fn fold(expected: &mut Self::Expected, seen: &StreamSeen<'_>) {
        let p = match seen.reservation {
            Some(Reservation::Placed(p)) => p,
            Some(Reservation::Tombstone(_)) | None => return,
        };
        let history = seen
            .events
            .iter()
            .map(|e| (e.seq, e.event.type_name(), e.position))
            .collect();
        let row = OrderRow {
            reservation_id: p.reservation_id.to_string(),
            state: p.state,
            lines: p
                .lines
                .iter()
                .zip(&p.progress)
                .map(|(l, g)| LineView::new(l, *g))
                .collect(),
            expires_at: p.expires_at,
            created_at: p.created_at,
            updated_at: p.updated_at,
            history,
        };
        expected.insert(p.order_id.to_string(), row);
    }

    fn merge(into: &mut Self::Expected, other: Self::Expected) {
        into.extend(other);
    }

    async fn load(client: &Client, schema: &str) -> Result<Self::Actual, StoreError> {
        // jsonb columns come as text and are parsed straight into typed values.
        let sql = format!(
            "SELECT order_id, reservation_id, state, lines::text, expires_at, created_at,
                    updated_at, history::text
             FROM {schema}.order_view"
        );
        let rows = client.query(&sql, &[]).await?;
        let mut out = HashMap::default();
        out.reserve(rows.len());
        for r in rows {
            let history = serde_json::from_str::<Vec<HistoryEntry>>(r.get(7))
                .map(|h| {
                    h.into_iter()
                        .map(|e| (e.seq, e.type_name, e.position))
                        .collect()
                })
                .map_err(|e| e.to_string());
            let stored = StoredOrder {
                reservation_id: r.get(1),
                state: r.get(2),
                lines: serde_json::from_str(r.get(3)).map_err(|e| e.to_string()),
                expires_at: r.get(4),
                created_at: r.get(5),
                updated_at: r.get(6),
                history,
            };
            out.insert(r.get(0), stored);
        }
        Ok(out)
    }

    fn compare(expected: Self::Expected, mut actual: Self::Actual, diffs: &mut Diffs) {
        for (order, want) in &expected {
            match actual.remove(order) {
                None => diffs.push(LABEL, order.clone(), "row", "present", "missing"),
                Some(got) => compare_row(order, want, got, diffs),
            }
        }
        for order in actual.keys() {
            diffs.push(LABEL, order.clone(), "row", "absent", "present");
        }
    }
}

fn compare_row(order: &str, want: &OrderRow, got: StoredOrder, diffs: &mut Diffs) {
    if got.reservation_id != want.reservation_id {
        let w = &want.reservation_id;
        diffs.push(LABEL, order, "reservation_id", w, got.reservation_id);
    }
    if got.state != want.state.as_str() {
        diffs.push(LABEL, order, "state", want.state.as_str(), got.state);
    }
    match got.lines {
        Ok(l) if l == want.lines => {}
        Ok(l) => diffs.push(
            LABEL,
            order,
            "lines",
            format!("{:?}", want.lines),
            format!("{l:?}"),
        ),
        Err(e) => diffs.push(LABEL, order, "lines", "readable lines", e),
    }
    for (field, w, g) in [
        ("expires_at", want.expires_at, got.expires_at),
        ("created_at", want.created_at, got.created_at),
        ("updated_at", want.updated_at, got.updated_at),
    ] {
        if w != g {
            diffs.push(LABEL, order, field, w.to_rfc3339(), g.to_rfc3339());
        }
    }
    match got.history {
        Ok(h) => {
            let same = h.len() == want.history.len()
                && h.iter()
                    .zip(&want.history)
                    .all(|(g, w)| (g.0, g.1.as_str(), g.2) == *w);
            if !same {
                let w = format!("{:?}", want.history);
                diffs.push(LABEL, order, "history", w, format!("{h:?}"));
            }
        }
        Err(e) => diffs.push(LABEL, order, "history", "a readable history", e),
    }
}

/// One order's row, typed: the wire layer makes the API's answer of it
/// (`api::order`), as it does when the answer comes from the log.
#[derive(Clone, Debug)]
pub struct OrderViewRow {
    pub order_id: String,
    pub reservation_id: String,
    pub state: ReservationState,
    pub lines: Vec<LineView>,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// (seq, event type, position) of each event of the reservation.
    pub history: Vec<(u32, String, i64)>,
}

/// The row of `order`, if the read model has it.
pub(crate) async fn row(
    client: &ClientWrapper,
    order: &OrderId,
) -> Result<Option<OrderViewRow>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT order_id, reservation_id, state, lines::text, expires_at, created_at,
                    updated_at, history::text
             FROM order_view WHERE order_id = $1",
        )
        .await?;
    let Some(r) = client.query_opt(&stmt, &[&order.as_str()]).await? else {
        return Ok(None);
    };
    let corrupt = |what: &str, e: serde_json::Error| {
        StoreError::Corrupt(format!("order_view.{what} of {order}: {e}").into())
    };
    let history = serde_json::from_str::<Vec<HistoryEntry>>(r.get(7))
        .map_err(|e| corrupt("history", e))?
        .into_iter()
        .map(|e| (e.seq, e.type_name, e.position))
        .collect();
    let state: &str = r.get(2);
    let state = ReservationState::ALL
        .into_iter()
        .find(|s| s.as_str() == state)
        .ok_or_else(|| {
            StoreError::Corrupt(format!("order_view.state of {order}: {state}").into())
        })?;
    Ok(Some(OrderViewRow {
        order_id: r.get(0),
        reservation_id: r.get(1),
        state,
        lines: serde_json::from_str(r.get(3)).map_err(|e| corrupt("lines", e))?,
        expires_at: r.get(4),
        created_at: r.get(5),
        updated_at: r.get(6),
        history,
    }))
}
