//! The tables as they are (loaded into memory) and their differences from
//! what the log says, named with their key and both values.

use chrono::{DateTime, Utc};
use rustc_hash::FxHashMap as HashMap;
use tokio_postgres::GenericClient;

use crate::audit::expected::{ExpiryRow, OrderRow};
use crate::audit::replay::Diffs;
use crate::domain::{Balance, Item, Line};
use crate::store::StoreError;

/// Figures per (sku, location) as a table holds them.
pub(crate) type ActualFigures = HashMap<(String, String), Balance>;

/// A row of `order_view` as stored; unreadable jsonb is kept as the error.
pub(crate) struct ActualOrder {
    reservation_id: String,
    state: String,
    lines: Result<Vec<Line>, String>,
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

/// Every table the audit compares, read in one snapshot.
pub(crate) enum Actual {
    Figures(ActualFigures),
    Orders(HashMap<String, ActualOrder>),
    Expiry(HashMap<String, ExpiryRow>),
}

/// `table` is a trusted, schema-qualified name of ours, never input.
pub(crate) async fn load_figures(
    client: &impl GenericClient,
    table: &str,
) -> Result<Actual, StoreError> {
    let rows = client
        .query(
            &format!("SELECT sku, location, on_hand, reserved, confirmed FROM {table}"),
            &[],
        )
        .await?;
    Ok(Actual::Figures(
        rows.iter()
            .map(|r| {
                (
                    (r.get(0), r.get(1)),
                    Balance {
                        on_hand: r.get(2),
                        reserved: r.get(3),
                        confirmed: r.get(4),
                    },
                )
            })
            .collect(),
    ))
}

pub(crate) async fn load_orders(
    client: &impl GenericClient,
    table: &str,
) -> Result<Actual, StoreError> {
    // jsonb columns come as text and are parsed straight into typed values.
    let rows = client
        .query(
            &format!(
                "SELECT order_id, reservation_id, state, lines::text, expires_at, created_at, updated_at, history::text
                 FROM {table}"
            ),
            &[],
        )
        .await?;
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
        out.insert(
            r.get(0),
            ActualOrder {
                reservation_id: r.get(1),
                state: r.get(2),
                lines: serde_json::from_str(r.get(3)).map_err(|e| e.to_string()),
                expires_at: r.get(4),
                created_at: r.get(5),
                updated_at: r.get(6),
                history,
            },
        );
    }
    Ok(Actual::Orders(out))
}

pub(crate) async fn load_expiry(
    client: &impl GenericClient,
    table: &str,
) -> Result<Actual, StoreError> {
    let rows = client
        .query(
            &format!("SELECT reservation_id, order_id, expires_at FROM {table}"),
            &[],
        )
        .await?;
    Ok(Actual::Expiry(
        rows.iter()
            .map(|r| {
                (
                    r.get(0),
                    ExpiryRow {
                        order_id: r.get(1),
                        expires_at: r.get(2),
                    },
                )
            })
            .collect(),
    ))
}

fn item_key(sku: &str, location: &str) -> String {
    format!("{sku}@{location}")
}

pub(crate) fn figures(
    label: &str,
    expected: &HashMap<Item, Balance>,
    mut actual: ActualFigures,
    diffs: &mut Diffs,
) {
    for (item, want) in expected {
        let key = (item.sku.to_string(), item.location.to_string());
        let name = item_key(&key.0, &key.1);
        match actual.remove(&key) {
            None => diffs.push(label, name, "row", "present", "missing"),
            Some(got) => {
                for (field, w, g) in [
                    ("on_hand", want.on_hand, got.on_hand),
                    ("reserved", want.reserved, got.reserved),
                    ("confirmed", want.confirmed, got.confirmed),
                ] {
                    if w != g {
                        diffs.push(label, name.clone(), field, w, g);
                    }
                }
            }
        }
    }
    for (sku, location) in actual.keys() {
        diffs.push(label, item_key(sku, location), "row", "absent", "present");
    }
}

pub(crate) fn orders(
    expected: &HashMap<String, OrderRow>,
    mut actual: HashMap<String, ActualOrder>,
    diffs: &mut Diffs,
) {
    const LABEL: &str = "order_view";
    for (order, want) in expected {
        let Some(got) = actual.remove(order) else {
            diffs.push(LABEL, order.clone(), "row", "present", "missing");
            continue;
        };
        if got.reservation_id != want.reservation_id {
            diffs.push(
                LABEL,
                order,
                "reservation_id",
                &want.reservation_id,
                got.reservation_id,
            );
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
                    diffs.push(
                        LABEL,
                        order,
                        "history",
                        format!("{:?}", want.history),
                        format!("{h:?}"),
                    );
                }
            }
            Err(e) => diffs.push(LABEL, order, "history", "a readable history", e),
        }
    }
    for order in actual.keys() {
        diffs.push(LABEL, order.clone(), "row", "absent", "present");
    }
}

pub(crate) fn expiry(
    expected: &HashMap<String, ExpiryRow>,
    mut actual: HashMap<String, ExpiryRow>,
    diffs: &mut Diffs,
) {
    const LABEL: &str = "reservation_expiry";
    for (id, want) in expected {
        let Some(got) = actual.remove(id) else {
            diffs.push(LABEL, id.clone(), "row", "present", "missing");
            continue;
        };
        if got.order_id != want.order_id {
            diffs.push(LABEL, id, "order_id", &want.order_id, got.order_id);
        }
        if got.expires_at != want.expires_at {
            diffs.push(
                LABEL,
                id,
                "expires_at",
                want.expires_at.to_rfc3339(),
                got.expires_at.to_rfc3339(),
            );
        }
    }
    for id in actual.keys() {
        diffs.push(LABEL, id.clone(), "row", "absent", "present");
    }
}
