//! Differences between what the log says and what a table holds, and the
//! figures comparison that the write-side balances and `stock_levels` share.

use std::fmt;

use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;
use tokio_postgres::Client;

use crate::domain::{Balance, Event, Item};
use crate::limits::MAX_REPORTED_DIFFERENCES;
use crate::store::StoreError;

/// One disagreement between the log and a table (or a rule the log breaks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// `events` for a broken rule, `item_balances`, or a projection's table.
    pub table: String,
    /// The item (`sku@location`), order, reservation or stream concerned.
    pub key: String,
    pub field: String,
    pub expected: String,
    pub actual: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}: expected {}, found {}",
            self.table, self.key, self.field, self.expected, self.actual
        )
    }
}

/// Differences, counted in full and kept up to a limit.
#[derive(Debug, Default)]
pub struct Diffs {
    pub count: u64,
    pub kept: Vec<Difference>,
}

impl Diffs {
    pub fn push(
        &mut self,
        table: &str,
        key: impl Into<String>,
        field: &str,
        expected: impl ToString,
        actual: impl ToString,
    ) {
        self.count += 1;
        if self.kept.len() < MAX_REPORTED_DIFFERENCES {
            self.kept.push(Difference {
                table: table.to_owned(),
                key: key.into(),
                field: field.to_owned(),
                expected: expected.to_string(),
                actual: actual.to_string(),
            });
        }
    }

    /// Adds the differences found in another partition.
    pub fn merge(&mut self, other: Diffs) {
        self.count += other.count;
        for d in other.kept {
            if self.kept.len() < MAX_REPORTED_DIFFERENCES {
                self.kept.push(d);
            }
        }
    }
}

/// Figures per item, as the log says they should be.
pub(crate) type Figures = HashMap<Item, Balance>;

/// Figures per (sku, location) as a table holds them.
pub(crate) type ActualFigures = HashMap<(String, String), Balance>;

/// Adds an event's stock effects to `map`, cloning an item key only the first
/// time the item is seen.
pub(crate) fn add_effects(map: &mut Figures, e: &Event) {
    e.for_each_effect(|item, d| match map.get_mut(item) {
        Some(b) => b.apply(d),
        None => {
            let mut b = Balance::default();
            b.apply(d);
            map.insert(item.clone(), b);
        }
    });
}

/// Adds figures folded from another partition.
pub(crate) fn merge_figures(into: &mut Figures, other: Figures) {
    for (item, d) in other {
        let m = into.entry(item).or_default();
        m.on_hand += d.on_hand;
        m.reserved += d.reserved;
        m.confirmed += d.confirmed;
        m.backordered += d.backordered;
    }
}

/// `table` is a trusted, schema-qualified name of ours, never input.
pub(crate) async fn load_figures(
    client: &Client,
    table: &str,
) -> Result<ActualFigures, StoreError> {
    let rows = client
        .query(
            &format!(
                "SELECT sku, location, on_hand, reserved, confirmed, backordered FROM {table}"
            ),
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let balance = Balance {
                on_hand: r.get(2),
                reserved: r.get(3),
                confirmed: r.get(4),
                backordered: r.get(5),
            };
            ((r.get(0), r.get(1)), balance)
        })
        .collect())
}

fn item_key(sku: &str, location: &str) -> String {
    format!("{sku}@{location}")
}

pub(crate) fn compare_figures(
    label: &str,
    expected: &Figures,
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
