//! The items' settings and alerts as the log says they are. For each item:
//! the last event that set its per-order limit and its reorder point,
//! compared with the values its balance row holds (the ones the command path
//! decides by); and its last low-stock alert, which must say what the
//! item's figures and point say now: low exactly when available stock is
//! below the point.
//!
//! The audit reads the log unsorted and in partitions, so "last" is the
//! highest position: each partition keeps its latest per item, and merging
//! keeps the later of two.

use rustc_hash::FxHashMap as HashMap;
use tokio_postgres::Client;

use crate::domain::{Event, Item, ItemSettings, Setting};
use crate::read_model::{Diffs, Figures};
use crate::store::StoreError;

/// The table the settings are kept in, as the report names it.
const TABLE: &str = "item_balances";

/// What an item's latest events of each kind said, with their positions.
#[derive(Clone, Copy, Default)]
struct Latest {
    max_per_order: Option<(i64, Option<u32>)>,
    reorder_point: Option<(i64, Option<u32>)>,
    /// Whether the last alert said low.
    low: Option<(i64, bool)>,
}

/// Keeps `(position, value)` in `slot` if it is later than what is there.
fn keep<T>(slot: &mut Option<(i64, T)>, position: i64, value: T) {
    if slot.as_ref().is_none_or(|(p, _)| position > *p) {
        *slot = Some((position, value));
    }
}

#[derive(Default)]
pub(crate) struct Settings {
    latest: HashMap<Item, Latest>,
}

/// The settings the table holds, by (sku, location): only rows that have one.
pub(crate) type ActualSettings = HashMap<(String, String), ItemSettings>;

impl Settings {
    /// Takes in one event of the log, at `position`.
    pub fn fold(&mut self, event: &Event, position: i64) {
        if let Some((item, setting)) = event.setting() {
            let l = self.latest.entry(item).or_default();
            match setting {
                Setting::MaxPerOrder(m) => keep(&mut l.max_per_order, position, m),
                Setting::ReorderPoint(p) => keep(&mut l.reorder_point, position, p),
                Setting::AlertedLow(low) => keep(&mut l.low, position, low),
            }
        }
    }

    /// Adds what another partition of the same log folded.
    pub fn merge(&mut self, other: Settings) {
        for (item, theirs) in other.latest {
            let mine = self.latest.entry(item).or_default();
            if let Some((p, v)) = theirs.max_per_order {
                keep(&mut mine.max_per_order, p, v);
            }
            if let Some((p, v)) = theirs.reorder_point {
                keep(&mut mine.reorder_point, p, v);
            }
            if let Some((p, v)) = theirs.low {
                keep(&mut mine.low, p, v);
            }
        }
    }

    /// Names every item whose settings differ from the log's (also one the
    /// table holds that no event set), and every item whose last alert
    /// does not say what its `balances` (folded from the same log) and
    /// point say.
    pub fn compare(&self, balances: &Figures, mut actual: ActualSettings, diffs: &mut Diffs) {
        for (item, latest) in &self.latest {
            let want = ItemSettings {
                max_per_order: latest.max_per_order.and_then(|(_, v)| v),
                reorder_point: latest.reorder_point.and_then(|(_, v)| v),
                alerted_low: latest.low.is_some_and(|(_, low)| low),
            };
            let key = (item.sku.to_string(), item.location.to_string());
            let got = actual.remove(&key).unwrap_or_default();
            compare_settings(&item.to_string(), want, got, diffs);
            let available = balances.get(item).copied().unwrap_or_default().available();
            let low = want.is_low(available);
            let alerted = want.alerted_low;
            if low != alerted {
                diffs.push(
                    "events",
                    item.to_string(),
                    "last alert",
                    low_word(low),
                    low_word(alerted),
                );
            }
        }
        for ((sku, location), got) in actual {
            let item = format!("{sku}@{location}");
            compare_settings(&item, ItemSettings::default(), got, diffs);
        }
    }
}

/// Names each setting of `item` that the table holds otherwise than the log.
fn compare_settings(item: &str, want: ItemSettings, got: ItemSettings, diffs: &mut Diffs) {
    for (field, w, g) in [
        ("max_per_order", want.max_per_order, got.max_per_order),
        ("reorder_point", want.reorder_point, got.reorder_point),
    ] {
        if w != g {
            diffs.push(TABLE, item, field, show(w), show(g));
        }
    }
    if want.alerted_low != got.alerted_low {
        diffs.push(
            TABLE,
            item,
            "alerted_low",
            want.alerted_low,
            got.alerted_low,
        );
    }
}

fn show(v: Option<u32>) -> String {
    v.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

/// What an item's last alert said, in words.
fn low_word(low: bool) -> &'static str {
    if low {
        "low"
    } else {
        "not low (recovered, or no alert)"
    }
}

/// The settings the write side holds, in the snapshot the audit compares in.
pub(crate) async fn load(client: &Client) -> Result<ActualSettings, StoreError> {
    let rows = client
        .query(
            "SELECT sku, location, max_per_order, reorder_point, alerted_low
             FROM public.item_balances
             WHERE max_per_order IS NOT NULL OR reorder_point IS NOT NULL OR alerted_low",
            &[],
        )
        .await?;
    let units = |v: Option<i64>| v.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    Ok(rows
        .iter()
        .map(|r| {
            let settings = ItemSettings {
                max_per_order: units(r.get(2)),
                reorder_point: units(r.get(3)),
                alerted_low: r.get(4),
            };
            ((r.get(0), r.get(1)), settings)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::{OrderLimitSet, ReorderPointSet, StockLow, StockRecovered};
    use crate::domain::{Balance, Location, Sku};

    fn apple() -> Item {
        Item {
            sku: Sku::parse("sku", "a").unwrap(),
            location: Location::parse("location", "l").unwrap(),
        }
    }

    fn limit(max: Option<u32>) -> Event {
        Event::OrderLimitSet(OrderLimitSet {
            sku: apple().sku,
            location: apple().location,
            max_per_order: max,
        })
    }

    fn point(p: Option<u32>) -> Event {
        Event::ReorderPointSet(ReorderPointSet {
            sku: apple().sku,
            location: apple().location,
            reorder_point: p,
        })
    }

    fn low(is_low: bool) -> Event {
        match is_low {
            true => Event::StockLow(StockLow {
                sku: apple().sku,
                location: apple().location,
                available: 1,
                reorder_point: 2,
            }),
            false => Event::StockRecovered(StockRecovered {
                sku: apple().sku,
                location: apple().location,
                available: 5,
                reorder_point: Some(2),
            }),
        }
    }

    /// The differences found against a table holding `max` and `point`,
    /// with `available` units folded from the log.
    fn differences(s: &Settings, max: Option<u32>, point: Option<u32>, available: i64) -> u64 {
        let mut diffs = Diffs::default();
        let mut actual = ActualSettings::default();
        // The table says what the last alert said: these tests are about
        // the other columns and the figures.
        let alerted_low = s
            .latest
            .get(&apple())
            .is_some_and(|l| l.low.is_some_and(|(_, b)| b));
        let settings = ItemSettings {
            max_per_order: max,
            reorder_point: point,
            alerted_low,
        };
        if settings != ItemSettings::default() {
            actual.insert(("a".to_owned(), "l".to_owned()), settings);
        }
        let balances: Figures = [(
            apple(),
            Balance {
                on_hand: available,
                reserved: 0,
                confirmed: 0,
                backordered: 0,
            },
        )]
        .into_iter()
        .collect();
        s.compare(&balances, actual, &mut diffs);
        diffs.count
    }

    /// Read in any order and in any partitions, the latest of each holds.
    #[test]
    fn the_latest_setting_holds_whatever_the_order_read() {
        let mut first = Settings::default();
        first.fold(&limit(Some(5)), 9);
        first.fold(&limit(Some(2)), 3);
        first.fold(&point(None), 4);
        let mut second = Settings::default();
        second.fold(&limit(None), 7);
        second.fold(&point(Some(3)), 8);
        second.fold(&low(false), 10);
        first.merge(second);
        assert_eq!(differences(&first, Some(5), Some(3), 9), 0);
        assert_eq!(differences(&first, Some(2), Some(3), 9), 1);
        assert_eq!(
            differences(&first, None, Some(3), 9),
            1,
            "a limit lost from the table"
        );
    }

    #[test]
    fn a_cleared_setting_is_none_and_a_stray_one_is_named() {
        let mut s = Settings::default();
        s.fold(&limit(Some(5)), 1);
        s.fold(&limit(None), 2);
        assert_eq!(differences(&s, None, None, 9), 0);
        assert_eq!(differences(&s, Some(5), None, 9), 1);
        assert_eq!(differences(&Settings::default(), Some(4), None, 9), 1);
    }

    /// The last alert must say what the figures say: low below the point.
    #[test]
    fn the_last_alert_must_agree_with_the_figures() {
        let mut s = Settings::default();
        s.fold(&point(Some(3)), 1);
        s.fold(&low(true), 2);
        assert_eq!(differences(&s, None, Some(3), 2), 0, "low, and alerted");
        assert_eq!(
            differences(&s, None, Some(3), 3),
            1,
            "recovered without an alert"
        );
        s.fold(&low(false), 3);
        assert_eq!(
            differences(&s, None, Some(3), 3),
            0,
            "recovered, and alerted"
        );
        assert_eq!(differences(&s, None, Some(3), 1), 1, "low without an alert");
    }
}
