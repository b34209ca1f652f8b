//! Reading a table and comparing it with the expected rows, naming every
//! difference with its key and both values.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;

use crate::audit::expected::{ExpiryRow, OrderRow};
use crate::audit::replay::Diffs;
use crate::domain::{Balance, Item, Line};
use crate::store::StoreError;

fn item_key(sku: &str, location: &str) -> String {
    format!("{sku}@{location}")
}

/// Compares (on_hand, reserved, confirmed) per item; `table` is a trusted,
/// schema-qualified name of ours, never input.
pub(crate) async fn figures(
    tx: &Transaction<'_>,
    label: &str,
    table: &str,
    expected: &BTreeMap<Item, Balance>,
    diffs: &mut Diffs,
) -> Result<(), StoreError> {
    let rows = tx
        .query(
            &format!("SELECT sku, location, on_hand, reserved, confirmed FROM {table}"),
            &[],
        )
        .await?;
    let mut actual: HashMap<(String, String), Balance> = rows
        .iter()
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
        .collect();
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
    Ok(())
}

pub(crate) async fn orders(
    tx: &Transaction<'_>,
    table: &str,
    expected: &HashMap<String, OrderRow>,
    diffs: &mut Diffs,
) -> Result<(), StoreError> {
    const LABEL: &str = "order_view";
    let rows = tx
        .query(
            &format!(
                "SELECT order_id, reservation_id, state, lines, expires_at, created_at, updated_at, history FROM {table}"
            ),
            &[],
        )
        .await?;
    let mut seen = 0usize;
    for r in rows {
        let order: String = r.get(0);
        let Some(want) = expected.get(&order) else {
            diffs.push(LABEL, order, "row", "absent", "present");
            continue;
        };
        seen += 1;
        let lines: Result<Vec<Line>, _> = serde_json::from_value(r.get(3));
        let history: Vec<(u32, String, i64)> = r
            .get::<_, serde_json::Value>(7)
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|h| {
                        (
                            h["seq"].as_u64().unwrap_or(0) as u32,
                            h["type"].as_str().unwrap_or("").to_owned(),
                            h["position"].as_i64().unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let state: String = r.get(2);
        let reservation_id: String = r.get(1);
        let times: [(&str, DateTime<Utc>, DateTime<Utc>); 3] = [
            ("expires_at", want.expires_at, r.get(4)),
            ("created_at", want.created_at, r.get(5)),
            ("updated_at", want.updated_at, r.get(6)),
        ];
        if reservation_id != want.reservation_id {
            diffs.push(
                LABEL,
                &order,
                "reservation_id",
                &want.reservation_id,
                reservation_id,
            );
        }
        if state != want.state.as_str() {
            diffs.push(LABEL, &order, "state", want.state.as_str(), state);
        }
        match lines {
            Ok(l) if l == want.lines => {}
            Ok(l) => diffs.push(
                LABEL,
                &order,
                "lines",
                format!("{:?}", want.lines),
                format!("{l:?}"),
            ),
            Err(e) => diffs.push(LABEL, &order, "lines", "readable lines", e),
        }
        for (field, w, g) in times {
            if w != g {
                diffs.push(LABEL, &order, field, w.to_rfc3339(), g.to_rfc3339());
            }
        }
        if history != want.history {
            diffs.push(
                LABEL,
                &order,
                "history",
                format!("{:?}", want.history),
                format!("{history:?}"),
            );
        }
    }
    if seen != expected.len() {
        let present: std::collections::HashSet<String> = tx
            .query(&format!("SELECT order_id FROM {table}"), &[])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        for order in expected.keys().filter(|o| !present.contains(*o)) {
            diffs.push(LABEL, order.clone(), "row", "present", "missing");
        }
    }
    Ok(())
}

pub(crate) async fn expiry(
    tx: &Transaction<'_>,
    table: &str,
    expected: &HashMap<String, ExpiryRow>,
    diffs: &mut Diffs,
) -> Result<(), StoreError> {
    const LABEL: &str = "reservation_expiry";
    let rows = tx
        .query(
            &format!("SELECT reservation_id, order_id, expires_at FROM {table}"),
            &[],
        )
        .await?;
    let mut seen = std::collections::HashSet::new();
    for r in rows {
        let id: String = r.get(0);
        let Some(want) = expected.get(&id) else {
            diffs.push(LABEL, id, "row", "absent", "present");
            continue;
        };
        let order: String = r.get(1);
        let expires_at: DateTime<Utc> = r.get(2);
        if order != want.order_id {
            diffs.push(LABEL, &id, "order_id", &want.order_id, order);
        }
        if expires_at != want.expires_at {
            diffs.push(
                LABEL,
                &id,
                "expires_at",
                want.expires_at.to_rfc3339(),
                expires_at.to_rfc3339(),
            );
        }
        seen.insert(id);
    }
    for id in expected.keys().filter(|id| !seen.contains(*id)) {
        diffs.push(LABEL, id.clone(), "row", "present", "missing");
    }
    Ok(())
}
