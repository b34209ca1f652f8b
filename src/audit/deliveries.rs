//! Deliveries against expected receipts, checked across streams: every
//! `ExpectedReceiptDelivered` names a receipt that exists, of the same item
//! and units, and no receipt is delivered twice. The command path writes
//! both events in one transaction; this finds a log where they part.
//!
//! It keeps every receipt's item and units in memory while the log is read:
//! receipts are a small share of a log (deliveries of stock, not orders).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::domain::{Event, Item, ReceiptId, StreamId};
use crate::read_model::Diffs;

/// A delivery as its expected receipt's stream records it.
struct Delivery {
    expected: String,
    receipt: ReceiptId,
    item: Item,
    units: u32,
}

#[derive(Default)]
pub(crate) struct Deliveries {
    /// Each receipt's item and units, by receipt id.
    receipts: HashMap<ReceiptId, (Item, u32)>,
    delivered: Vec<Delivery>,
}

impl Deliveries {
    /// Notes what `event`, in `stream`, says of receipts and deliveries.
    pub fn fold(&mut self, stream: &StreamId, event: &Event) {
        if let (
            StreamId::Receipt(id),
            Event::StockReceived {
                sku,
                location,
                quantity,
            },
        ) = (stream, event)
        {
            let item = Item {
                sku: sku.clone(),
                location: location.clone(),
            };
            self.receipts.insert(id.clone(), (item, *quantity));
        }
        if let Event::ExpectedReceiptDelivered {
            receipt_id,
            sku,
            location,
            quantity,
            ..
        } = event
        {
            self.delivered.push(Delivery {
                expected: stream.to_string(),
                receipt: receipt_id.clone(),
                item: Item {
                    sku: sku.clone(),
                    location: location.clone(),
                },
                units: *quantity,
            });
        }
    }

    /// Adds what another partition of the same log noted.
    pub fn merge(&mut self, other: Deliveries) {
        self.receipts.extend(other.receipts);
        self.delivered.extend(other.delivered);
    }

    /// Names every delivery without its receipt, of other units or another
    /// item than its receipt, or of a receipt delivered before.
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
                Some((item, units)) if (item, *units) != (&d.item, d.units) => {
                    let got = format!("{receipt} of {units} × {item}");
                    diffs.push("events", &d.expected, "delivery", want, got)
                }
                Some(_) => {}
            }
        }
    }
}
