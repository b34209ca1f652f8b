//! The items' settings as the log says they are: for each item, the last
//! event that set its per-order limit, compared with the limit its balance
//! row holds (the one the command path decides by).
//!
//! The audit reads the log unsorted and in partitions, so "last" is the
//! highest position: each partition keeps its latest per item, and merging
//! keeps the later of two.

use rustc_hash::FxHashMap as HashMap;
use tokio_postgres::Client;

use crate::domain::{Event, Item, Setting};
use crate::read_model::Diffs;
use crate::store::StoreError;

/// The table the settings are kept in, as the report names it.
const TABLE: &str = "item_balances";

/// Per item, the position of the latest limit event and the limit it set.
#[derive(Default)]
pub(crate) struct Settings {
    max_per_order: HashMap<Item, (i64, Option<u32>)>,
}

/// The limits the table holds, by (sku, location): only rows that have one.
pub(crate) type ActualSettings = HashMap<(String, String), i64>;

impl Settings {
    /// Takes in one event of the log, at `position`.
    pub fn fold(&mut self, event: &Event, position: i64) {
        let Some((item, Setting::MaxPerOrder(max))) = event.setting() else {
            return;
        };
        let slot = self.max_per_order.entry(item).or_insert((position, max));
        if position >= slot.0 {
            *slot = (position, max);
        }
    }

    /// Adds what another partition of the same log folded.
    pub fn merge(&mut self, other: Settings) {
        for (item, (position, max)) in other.max_per_order {
            let slot = self.max_per_order.entry(item).or_insert((position, max));
            if position > slot.0 {
                *slot = (position, max);
            }
        }
    }

    /// Names every item whose limit differs from the log's, also a limit in
    /// the table that no event set.
    pub fn compare(&self, mut actual: ActualSettings, diffs: &mut Diffs) {
        for (item, (_, want)) in &self.max_per_order {
            let key = (item.sku.to_string(), item.location.to_string());
            let got = actual.remove(&key);
            if got != want.map(i64::from) {
                diffs.push(
                    TABLE,
                    item.to_string(),
                    "max_per_order",
                    show(*want),
                    show(got),
                );
            }
        }
        for ((sku, location), got) in actual {
            let item = format!("{sku}@{location}");
            diffs.push(TABLE, item, "max_per_order", "null", got);
        }
    }
}

fn show(v: Option<impl ToString>) -> String {
    v.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

/// The limits the write side holds, in the snapshot the audit compares in.
pub(crate) async fn load(client: &Client) -> Result<ActualSettings, StoreError> {
    let rows = client
        .query(
            "SELECT sku, location, max_per_order FROM public.item_balances
             WHERE max_per_order IS NOT NULL",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| ((r.get(0), r.get(1)), r.get(2)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Location, Sku};

    fn limit(max: Option<u32>) -> Event {
        Event::OrderLimitSet {
            sku: Sku::parse("sku", "a").unwrap(),
            location: Location::parse("location", "l").unwrap(),
            max_per_order: max,
        }
    }

    fn differences(s: &Settings, actual: &[i64]) -> u64 {
        let mut diffs = Diffs::default();
        let actual = actual
            .iter()
            .map(|m| (("a".to_owned(), "l".to_owned()), *m))
            .collect();
        s.compare(actual, &mut diffs);
        diffs.count
    }

    /// Read in any order and in any partitions, the latest limit holds.
    #[test]
    fn the_latest_limit_holds_whatever_the_order_read() {
        let mut first = Settings::default();
        first.fold(&limit(Some(5)), 9);
        first.fold(&limit(Some(2)), 3);
        let mut second = Settings::default();
        second.fold(&limit(None), 7);
        first.merge(second);
        assert_eq!(differences(&first, &[5]), 0);
        assert_eq!(differences(&first, &[2]), 1);
        assert_eq!(differences(&first, &[]), 1, "a limit lost from the table");
    }

    #[test]
    fn a_lifted_limit_is_no_limit_and_a_stray_one_is_named() {
        let mut s = Settings::default();
        s.fold(&limit(Some(5)), 1);
        s.fold(&limit(None), 2);
        assert_eq!(differences(&s, &[]), 0);
        assert_eq!(differences(&s, &[5]), 1);
        assert_eq!(differences(&Settings::default(), &[4]), 1);
    }
}
