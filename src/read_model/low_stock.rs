//! `low_stock`: which items are low (available below their reorder point),
//! from each item's last low-stock alert, and since when.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper;
use rustc_hash::FxHashMap as HashMap;
use tokio_postgres::Client;

use crate::domain::alerts;
use crate::read_model::{Diffs, Model, Rows, StreamSeen};
use crate::store::StoreError;

pub struct LowStock;

pub static LOW_STOCK: Model<LowStock> = Model {
    name: "low_stock",
    tables: &["low_stock"],
    schema: include_str!("../../projections/low_stock/schema.sql"),
    apply: &[include_str!(
        "../../projections/low_stock/apply_1_alerts.sql"
    )],
    batch: None,
    rows: PhantomData,
};

/// One item's row: what its last alert said, and where it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowRow {
    pub low: bool,
    pub available: i64,
    pub reorder_point: Option<i64>,
    pub position: i64,
    pub since: DateTime<Utc>,
}

/// Rows by (sku, location).
type ByItem = HashMap<(String, String), LowRow>;

/// The label of its differences: the model's name.
const LABEL: &str = LOW_STOCK.name;

impl Rows for LowStock {
    type Expected = ByItem;
    type Actual = ByItem;

    /// Each alert is a stream of its own; the latest by position holds.
    fn fold(expected: &mut ByItem, seen: &StreamSeen<'_>) {
        for e in seen.events {
            let Some(a) = alerts::said(e.event) else {
                continue;
            };
            let row = LowRow {
                low: a.low,
                available: a.available,
                reorder_point: a.reorder_point.map(i64::from),
                position: e.position,
                since: e.recorded_at,
            };
            let key = (a.item.sku.to_string(), a.item.location.to_string());
            keep_later(expected, key, row);
        }
    }

    fn merge(into: &mut ByItem, other: ByItem) {
        for (key, row) in other {
            keep_later(into, key, row);
        }
    }

    async fn load(client: &Client, schema: &str) -> Result<ByItem, StoreError> {
        let sql = format!(
            "SELECT sku, location, low, available, reorder_point, position, since
             FROM {schema}.low_stock"
        );
        let rows = client.query(&sql, &[]).await?;
        Ok(rows
            .iter()
            .map(|r| ((r.get(0), r.get(1)), low_row(r)))
            .collect())
    }

    fn compare(expected: ByItem, mut actual: ByItem, diffs: &mut Diffs) {
        for ((sku, location), want) in expected {
            let key = format!("{sku}@{location}");
            match actual.remove(&(sku, location)) {
                None => diffs.push(LABEL, key, "row", "present", "missing"),
                Some(got) if got != want => {
                    diffs.push(LABEL, key, "row", format!("{want:?}"), format!("{got:?}"))
                }
                Some(_) => {}
            }
        }
        for (sku, location) in actual.keys() {
            diffs.push(
                LABEL,
                format!("{sku}@{location}"),
                "row",
                "absent",
                "present",
            );
        }
    }
}

/// Puts `row` under `key` unless a row from a later position is there.
fn keep_later(rows: &mut ByItem, key: (String, String), row: LowRow) {
    match rows.get(&key) {
        Some(have) if have.position > row.position => {}
        _ => {
            rows.insert(key, row);
        }
    }
}

/// The items low now in the live copy, by (location, sku), at most `limit`.
pub(crate) async fn low_items(
    client: &ClientWrapper,
    limit: i64,
) -> Result<Vec<(String, String, LowRow)>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT sku, location, low, available, reorder_point, position, since
             FROM low_stock WHERE low ORDER BY location, sku LIMIT $1",
        )
        .await?;
    let rows = client.query(&stmt, &[&limit]).await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1), low_row(r)))
        .collect())
}

/// A row read as `SELECT sku, location, low, available, reorder_point,
/// position, since`.
fn low_row(r: &tokio_postgres::Row) -> LowRow {
    LowRow {
        low: r.get(2),
        available: r.get(3),
        reorder_point: r.get(4),
        position: r.get(5),
        since: r.get(6),
    }
}
