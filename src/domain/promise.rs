//! Available to promise: what can still be promised of an item now, and by
//! each date on which expected stock is due. A pure rule over the item's
//! figures and what its open expected receipts still bring; the read path
//! hands both in from the read models.
//!
//! now = on hand − reserved − backordered (what waits for stock is promised
//! already); by a date = now + every unit still expected on
//! or before it. A date in the past counts as late, not gone: its units are
//! still coming, so they count from their date on like any other.

use chrono::NaiveDate;
use serde::Serialize;

use crate::domain::event::Balance;

/// What can be promised of one item, now and by each date stock is due.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Promise {
    /// On hand less reserved, less what waits for stock (backorders): negative
    /// while more waits than is on the shelf.
    pub available_now: i64,
    /// Every unit still expected, on any date.
    pub incoming: i64,
    /// One entry per date on which stock is due, earliest first.
    pub dates: Vec<PromiseDate>,
}

/// What can be promised by one date.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromiseDate {
    pub date: NaiveDate,
    /// The units due on this date.
    pub arriving: i64,
    /// What can be promised by this date: available now plus every unit due
    /// on or before it.
    pub available: i64,
}

/// The promise for an item with `balance`, given the units still expected
/// and when (any order, dates may repeat; zero units are left out).
pub fn promise(balance: Balance, due: &[(NaiveDate, i64)]) -> Promise {
    let mut by_date: std::collections::BTreeMap<NaiveDate, i64> = Default::default();
    for &(date, units) in due.iter().filter(|(_, u)| *u > 0) {
        *by_date.entry(date).or_default() += units;
    }
    let available_now = balance.available();
    let mut running = available_now;
    let dates = by_date
        .into_iter()
        .map(|(date, arriving)| {
            running += arriving;
            PromiseDate {
                date,
                arriving,
                available: running,
            }
        })
        .collect();
    Promise {
        available_now,
        incoming: running - available_now,
        dates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 12, day).unwrap()
    }

    fn balance(on_hand: i64, reserved: i64) -> Balance {
        Balance {
            on_hand,
            reserved,
            confirmed: 0,
            backordered: 0,
        }
    }

    /// One row per case of the rule (docs/domain.md, "Available to promise").
    #[test]
    fn the_promise_table() {
        // Nothing expected: only what is available now.
        let p = promise(balance(10, 4), &[]);
        assert_eq!((p.available_now, p.incoming, p.dates.len()), (6, 0, 0));
        // Two dates: each adds its units to every later date.
        let p = promise(balance(10, 4), &[(d(10), 5), (d(3), 2)]);
        assert_eq!(p.incoming, 7);
        assert_eq!(
            p.dates,
            vec![
                PromiseDate {
                    date: d(3),
                    arriving: 2,
                    available: 8
                },
                PromiseDate {
                    date: d(10),
                    arriving: 5,
                    available: 13
                },
            ]
        );
        // Two expected receipts on one date are one date.
        let p = promise(balance(0, 0), &[(d(5), 3), (d(5), 4)]);
        assert_eq!(
            p.dates,
            vec![PromiseDate {
                date: d(5),
                arriving: 7,
                available: 7
            }]
        );
        // Nothing outstanding is no date.
        let p = promise(balance(1, 0), &[(d(5), 0)]);
        assert!(p.dates.is_empty());
        // Everything reserved: what comes is all there is to promise.
        let p = promise(balance(5, 5), &[(d(7), 2)]);
        assert_eq!((p.available_now, p.dates[0].available), (0, 2));
    }
}
