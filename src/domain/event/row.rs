//! How an event is laid out in its log row (`schema/0007_typed_log.sql`):
//! the order and the item lines as typed columns, which every writer index
//! and every fold reads, and the rest of the event as a small `data` object.
//! Each event's module writes and reads its own row with these
//! (`Fact::write_row`, `FactType::read_row`); `store::log_row` runs them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::ids::{
    ChangeId, ConfirmationId, ExtensionId, Item, Location, OrderId, ReceiptId, ReleaseId, Sku,
};

/// One event as its log row stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRow<'a> {
    pub order_id: Option<&'a str>,
    pub skus: Vec<&'a str>,
    pub locations: Vec<&'a str>,
    /// A receipt's quantity, an adjustment's signed delta, or a line's quantity.
    pub quantities: Vec<i64>,
    /// Everything the typed columns do not hold.
    pub data: serde_json::Value,
}

/// The `data` column: the fields of an event that have no column of their own.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) request_hash: Option<String>,
    /// A stock count's counted units (its line's quantity is the change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) counted: Option<u32>,
    /// The caller's id of a partial step or an extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) confirmation_id: Option<ConfirmationId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) release_id: Option<ReleaseId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) extension_id: Option<ExtensionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ttl_seconds: Option<u32>,
    /// A per-order limit, `null` when it was lifted: written out either way,
    /// so a limit event whose data lost it is named, not read as "no limit".
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub(crate) max_per_order: Option<Option<u32>>,
    /// A reorder point, `null` when it was removed (as `max_per_order`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub(crate) reorder_point: Option<Option<u32>>,
    /// An alert's available units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) available: Option<i64>,
    /// An expected receipt's date (its line's quantity is what is still
    /// expected after the event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expected_on: Option<chrono::NaiveDate>,
    /// The units a change expects in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expected: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) change_id: Option<ChangeId>,
    /// The receipt a delivery came with, and the units it brought.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) receipt_id: Option<ReceiptId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) delivered: Option<u32>,
    /// The units a cancellation withdrew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) withdrawn: Option<u32>,
    /// The latest date a backorder accepted stock to arrive by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) latest_arrival: Option<chrono::NaiveDate>,
}

/// A field that is there, `null` or not: `Some(None)` for a `null`, and
/// (with `default`) `None` when it is missing.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The typed columns of a row, as read back.
pub struct Columns<'a> {
    pub order_id: Option<&'a str>,
    pub skus: Vec<&'a str>,
    pub locations: Vec<&'a str>,
    pub quantities: Vec<i64>,
}

/// A row being laid out: its typed columns, and the rest of the event.
pub struct RowWriter<'a> {
    row: LogRow<'a>,
    pub(crate) rest: Rest,
}

impl Default for RowWriter<'_> {
    fn default() -> Self {
        RowWriter::new()
    }
}

impl<'a> RowWriter<'a> {
    /// An empty row (the store's encoding starts from it).
    pub fn new() -> RowWriter<'a> {
        RowWriter {
            row: LogRow {
                order_id: None,
                skus: Vec::new(),
                locations: Vec::new(),
                quantities: Vec::new(),
                data: serde_json::Value::Object(Default::default()),
            },
            rest: Rest::default(),
        }
    }

    /// The order the event is about, if any.
    pub(crate) fn order(&mut self, order_id: Option<&'a OrderId>) {
        self.row.order_id = order_id.map(OrderId::as_str);
    }

    /// One item line: `quantity` as the event's type reads it (its line
    /// effect, `event_type.rs`, says how it moves stock).
    pub(crate) fn item(&mut self, sku: &'a Sku, location: &'a Location, quantity: i64) {
        self.row.skus.push(sku.as_str());
        self.row.locations.push(location.as_str());
        self.row.quantities.push(quantity);
    }

    /// The order a reservation's event is about, and its lines.
    pub(crate) fn order_lines(&mut self, order_id: &'a OrderId, lines: &'a [Line]) {
        self.order(Some(order_id));
        self.lines(lines);
    }

    /// An item line for each of `lines`.
    pub(crate) fn lines(&mut self, lines: &'a [Line]) {
        for l in lines {
            self.item(&l.item.sku, &l.item.location, i64::from(l.quantity));
        }
    }

    /// The row, `data` written from the rest.
    pub fn finish(mut self) -> LogRow<'a> {
        self.row.data = serde_json::to_value(&self.rest).expect("the rest of an event serialises");
        self.row
    }
}

/// A field the row must hold.
pub(crate) fn need<T>(v: Option<T>, what: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("without {what}"))
}

impl Columns<'_> {
    /// The item of line `i`.
    pub(crate) fn item(&self, i: usize) -> Result<Item, String> {
        let (Some(sku), Some(location)) = (self.skus.get(i), self.locations.get(i)) else {
            return Err(format!("line {i} has no item"));
        };
        Ok(Item {
            sku: Sku::parse("sku", sku).map_err(|r| r.to_string())?,
            location: Location::parse("location", location).map_err(|r| r.to_string())?,
        })
    }

    /// The one item line of an event about one item, and its quantity.
    pub(crate) fn one_item(&self) -> Result<(Item, i64), String> {
        if self.skus.len() != 1 || self.quantities.len() != 1 {
            return Err(format!("with {} items", self.skus.len()));
        }
        Ok((self.item(0)?, self.quantities[0]))
    }

    /// The one item line of a setting or an alert, which moves nothing.
    pub(crate) fn item_moving_nothing(&self) -> Result<Item, String> {
        let (item, quantity) = self.one_item()?;
        if quantity != 0 {
            return Err(format!("with a line of {quantity}, not 0"));
        }
        Ok(item)
    }

    /// The one item line of an expected receipt's event: the units still
    /// expected after it.
    pub(crate) fn item_expecting(&self) -> Result<(Item, u32), String> {
        let (item, line) = self.one_item()?;
        let units = u32::try_from(line).map_err(|_| format!("with a line of {line}"))?;
        Ok((item, units))
    }

    /// The order the row is about, if it names one.
    pub(crate) fn order_id(&self) -> Result<Option<OrderId>, String> {
        self.order_id
            .map(|o| OrderId::parse("order_id", o).map_err(|r| r.to_string()))
            .transpose()
    }

    /// The order the row must be about.
    pub(crate) fn the_order(&self) -> Result<OrderId, String> {
        need(self.order_id()?, "order_id")
    }

    /// The row's item lines, as an order's lines.
    pub(crate) fn lines(&self) -> Result<Vec<Line>, String> {
        if self.skus.len() != self.locations.len() || self.skus.len() != self.quantities.len() {
            return Err("item columns of different lengths".into());
        }
        (0..self.skus.len())
            .map(|i| {
                let q = self.quantities[i];
                Ok(Line {
                    item: self.item(i)?,
                    quantity: u32::try_from(q).map_err(|_| format!("line {i} quantity {q}"))?,
                })
            })
            .collect()
    }
}
