//! Deliveries against expected receipts, checked across streams: every
//! delivery (`expectation::delivery`) names a receipt that exists, of the same item
//! and units, written in the same transaction, and no receipt is delivered
//! twice. The command path writes
//! both events in one transaction; this finds a log where they part.
//!
//! It keeps every receipt's item and units in memory while the log is read:
//! receipts are a small share of a log (deliveries of stock, not orders).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::domain::{expectation, Event, Item, ReceiptId, StreamId};
use crate::read_model::Diffs;

/// A delivery as its expected receipt's stream records it.
struct Delivery {
    expected: String,
    receipt: ReceiptId,
    item: Item,
    units: u32,
    tx_id: i64,
}

#[derive(Default)]
pub(crate) struct Deliveries {
    /// Each receipt's item, units and writing transaction, by receipt id.
    receipts: HashMap<ReceiptId, (Item, u32, i64)>,
    delivered: Vec<Delivery>,
}

impl Deliveries {
    /// Notes what `event`, in `stream` and written by transaction `tx_id`,
    /// says of receipts and deliveries.
    pub fn fold(&mut self, stream: &StreamId, event: &Event, tx_id: i64) {
        // A receipt's stream holds one event, which brings its units on
        // hand (read from its effect, whatever its type is named).
        if let StreamId::Receipt(id) = stream {
            event.for_each_effect(|item, d| {
                let units = u32::try_from(d.on_hand).unwrap_or(0);
                self.receipts
                    .insert(id.clone(), (item.clone(), units, tx_id));
            });
        }
        if let Some((receipt, item, units)) = expectation::delivery(event) {
            self.delivered.push(Delivery {
                expected: stream.to_string(),
                receipt: receipt.clone(),
                item,
                units,
                tx_id,
            });
        }
    }

    /// Adds what another partition of the same log noted.
    pub fn merge(&mut self, other: Deliveries) {
        self.receipts.extend(other.receipts);
        self.delivered.extend(other.delivered);
    }

    /// Names every delivery without its receipt, of other units or another
    /// item than its receipt, written apart from it, or of a receipt
    /// delivered before.
    pub fn check(self, diffs: &mut Diffs) {
        let mut seen: HashSet<&ReceiptId> = HashSet::default();
        for d in &self.delivered {
            let receipt = StreamId::Receipt(d.receipt.clone());
            let want = format!("{receipt} of {} × {}", d.units, d.item);
            if !seen.insert(&d.receipt) {
                diffs.push(
                    "events",
                    &d.expected,
                    "delivery",
                    want,
                    "a receipt delivered before",
                );
                continue;
            }
            match self.receipts.get(&d.receipt) {
                None => diffs.push("events", &d.expected, "delivery", want, "no such receipt"),
                Some((item, units, _)) if (item, *units) != (&d.item, d.units) => {
                    let got = format!("{receipt} of {units} × {item}");
                    diffs.push("events", &d.expected, "delivery", want, got)
                }
                Some((_, _, tx)) if *tx != d.tx_id => {
                    let (want, got) = ("in the receipt's transaction", "in another one");
                    diffs.push("events", &d.expected, "delivery", want, got)
                }
                Some(_) => {}
            }
        }
    }
}
