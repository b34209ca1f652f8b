//! How an event is laid out in its log row (`schema/0007_typed_log.sql`):
//! the order and the item lines as typed columns, which every writer index
//! and every fold reads, and the rest of the event as a small `data` object.
//!
//! `encode` and `decode` are each other's inverse; a test below holds them to
//! that for every event type, and the migration test checks that rows the old
//! schema wrote decode to the events they were written from.

use crate::domain::event::{
    BackorderDropped, BackorderFilled, BackorderPlaced, ExpectedReceiptCancelled,
    ExpectedReceiptChanged, ExpectedReceiptDelivered, OrderLimitSet, ReceiptExpected,
    ReorderPointSet, ReservationConfirmed, ReservationCreated, ReservationExpired,
    ReservationExtended, ReservationLinesConfirmed, ReservationLinesReleased, ReservationReleased,
    StockAdjusted, StockCounted, StockLow, StockReceived, StockRecovered, StockTransferred,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::command::Line;
use crate::domain::event::{expected_receipt_events, outside_reservations, DropReason};
use crate::domain::expectation::outside_expectations;
use crate::domain::shape;
use crate::domain::{
    ChangeId, ConfirmationId, Event, EventMetadata, EventType, ExtensionId, Item, Location,
    OrderId, ReceiptId, ReleaseId, Sku,
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
pub(crate) struct Rest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request_hash: Option<String>,
    /// A stock count's counted units (its line's quantity is the change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    counted: Option<u32>,
    /// The caller's id of a partial step or an extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    confirmation_id: Option<ConfirmationId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    release_id: Option<ReleaseId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extension_id: Option<ExtensionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ttl_seconds: Option<u32>,
    /// A per-order limit, `null` when it was lifted: written out either way,
    /// so a limit event whose data lost it is named, not read as "no limit".
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    max_per_order: Option<Option<u32>>,
    /// A reorder point, `null` when it was removed (as `max_per_order`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    reorder_point: Option<Option<u32>>,
    /// An alert's available units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    available: Option<i64>,
    /// An expected receipt's date (its line's quantity is what is still
    /// expected after the event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expected_on: Option<chrono::NaiveDate>,
    /// The units a change expects in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expected: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    change_id: Option<ChangeId>,
    /// The receipt a delivery came with, and the units it brought.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    receipt_id: Option<ReceiptId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delivered: Option<u32>,
    /// The units a cancellation withdrew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    withdrawn: Option<u32>,
    /// The latest date a backorder accepted stock to arrive by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latest_arrival: Option<chrono::NaiveDate>,
}

/// A field that is there, `null` or not: `Some(None)` for a `null`, and
/// (with `default`) `None` when it is missing.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The typed columns of a row, as read back.
pub(crate) struct Columns<'a> {
    pub order_id: Option<&'a str>,
    pub skus: Vec<&'a str>,
    pub locations: Vec<&'a str>,
    pub quantities: Vec<i64>,
}

/// Lays `event` out as its row would have been in `version` of its type's
/// shape: without the fields later versions added (`shape::CHANGES`). For
/// logs written as an older release wrote them: fixtures and upgrade tests.
pub fn encode_in(event: &Event, version: shape::Version) -> LogRow<'_> {
    let mut row = encode(event);
    if let serde_json::Value::Object(data) = &mut row.data {
        shape::remove_later_fields(event.event_type(), version, data);
    }
    row
}

/// Lays `event` out as its row, in its type's current shape.
pub fn encode(event: &Event) -> LogRow<'_> {
    let mut row = LogRow {
        order_id: None,
        skus: Vec::new(),
        locations: Vec::new(),
        quantities: Vec::new(),
        data: serde_json::Value::Object(Default::default()),
    };
    let mut rest = Rest::default();
    match event {
        Event::StockReceived(StockReceived {
            sku,
            location,
            quantity,
        }) => push(&mut row, sku, location, i64::from(*quantity)),
        Event::StockAdjusted(StockAdjusted {
            sku,
            location,
            delta,
            reason,
        }) => {
            push(&mut row, sku, location, i64::from(*delta));
            rest.reason = Some(reason.clone());
        }
        // Two item lines: what leaves the source, what arrives at the
        // destination, as signed changes of on-hand stock.
        Event::StockTransferred(StockTransferred {
            sku,
            from_location,
            to_location,
            quantity,
        }) => {
            push(&mut row, sku, from_location, -i64::from(*quantity));
            push(&mut row, sku, to_location, i64::from(*quantity));
        }
        Event::StockCounted(StockCounted {
            sku,
            location,
            counted,
            books,
        }) => {
            push(&mut row, sku, location, i64::from(*counted) - books);
            rest.counted = Some(*counted);
        }
        Event::OrderLimitSet(OrderLimitSet { .. })
        | Event::ReorderPointSet(ReorderPointSet { .. })
        | Event::StockLow(StockLow { .. })
        | Event::StockRecovered(StockRecovered { .. }) => {
            setting_or_alert_row(event, &mut row, &mut rest)
        }
        expected_receipt_events!() => expected_row(event, &mut row, &mut rest),
        Event::ReservationCreated(ReservationCreated { .. })
        | Event::ReservationConfirmed(ReservationConfirmed { .. })
        | Event::ReservationReleased(ReservationReleased { .. })
        | Event::ReservationLinesConfirmed(ReservationLinesConfirmed { .. })
        | Event::ReservationLinesReleased(ReservationLinesReleased { .. })
        | Event::ReservationExtended(ReservationExtended { .. })
        | Event::ReservationExpired(ReservationExpired { .. })
        | Event::BackorderPlaced(BackorderPlaced { .. })
        | Event::BackorderFilled(BackorderFilled { .. })
        | Event::BackorderDropped(BackorderDropped { .. }) => {
            reservation_row(event, &mut row, &mut rest)
        }
    }
    row.data = serde_json::to_value(&rest).expect("the rest of an event serialises");
    row
}

/// Lays a setting or an alert out: its item as a line that moves nothing
/// (its type's line effect is zero), so the item's history and every fold
/// find it, and its values in `data`.
fn setting_or_alert_row<'a>(event: &'a Event, row: &mut LogRow<'a>, rest: &mut Rest) {
    match event {
        Event::OrderLimitSet(OrderLimitSet {
            sku,
            location,
            max_per_order,
        }) => {
            push(row, sku, location, 0);
            rest.max_per_order = Some(*max_per_order);
        }
        Event::ReorderPointSet(ReorderPointSet {
            sku,
            location,
            reorder_point,
        }) => {
            push(row, sku, location, 0);
            rest.reorder_point = Some(*reorder_point);
        }
        Event::StockLow(StockLow {
            sku,
            location,
            available,
            reorder_point,
        }) => {
            push(row, sku, location, 0);
            rest.available = Some(*available);
            rest.reorder_point = Some(Some(*reorder_point));
        }
        Event::StockRecovered(StockRecovered {
            sku,
            location,
            available,
            reorder_point,
        }) => {
            push(row, sku, location, 0);
            rest.available = Some(*available);
            rest.reorder_point = Some(*reorder_point);
        }
        Event::StockReceived(StockReceived { .. })
        | Event::StockAdjusted(StockAdjusted { .. })
        | Event::StockTransferred(StockTransferred { .. })
        | Event::StockCounted(StockCounted { .. })
        | Event::ReceiptExpected(ReceiptExpected { .. })
        | Event::ExpectedReceiptChanged(ExpectedReceiptChanged { .. })
        | Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered { .. })
        | Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled { .. })
        | Event::ReservationCreated(ReservationCreated { .. })
        | Event::ReservationConfirmed(ReservationConfirmed { .. })
        | Event::ReservationReleased(ReservationReleased { .. })
        | Event::ReservationLinesConfirmed(ReservationLinesConfirmed { .. })
        | Event::ReservationLinesReleased(ReservationLinesReleased { .. })
        | Event::ReservationExtended(ReservationExtended { .. })
        | Event::ReservationExpired(ReservationExpired { .. })
        | Event::BackorderPlaced(BackorderPlaced { .. })
        | Event::BackorderFilled(BackorderFilled { .. })
        | Event::BackorderDropped(BackorderDropped { .. }) => {
            unreachable!("encode lays these out elsewhere")
        }
    }
}

/// Lays a reservation event out: its order, its lines, its ids and times.
fn reservation_row<'a>(event: &'a Event, row: &mut LogRow<'a>, rest: &mut Rest) {
    row.order_id = event.order_id().map(OrderId::as_str);
    match event {
        Event::ReservationCreated(ReservationCreated {
            lines,
            expires_at,
            ttl_seconds,
            request_hash,
            ..
        }) => {
            push_lines(row, lines);
            rest.expires_at = Some(*expires_at);
            rest.ttl_seconds = Some(*ttl_seconds);
            rest.request_hash = Some(request_hash.clone());
        }
        Event::ReservationConfirmed(ReservationConfirmed {
            lines,
            confirmation_id,
            ..
        }) => {
            push_lines(row, lines);
            rest.confirmation_id = confirmation_id.clone();
        }
        Event::ReservationExpired(ReservationExpired { lines, .. }) => {
            push_lines(row, lines);
        }
        Event::ReservationReleased(ReservationReleased {
            lines,
            reason,
            release_id,
            ..
        }) => {
            push_lines(row, lines);
            rest.reason = Some(reason.clone());
            rest.release_id = release_id.clone();
        }
        Event::ReservationLinesConfirmed(ReservationLinesConfirmed {
            confirmation_id,
            lines,
            ..
        }) => {
            push_lines(row, lines);
            rest.confirmation_id = Some(confirmation_id.clone());
        }
        Event::ReservationLinesReleased(ReservationLinesReleased {
            release_id,
            lines,
            reason,
            ..
        }) => {
            push_lines(row, lines);
            rest.release_id = Some(release_id.clone());
            rest.reason = Some(reason.clone());
        }
        Event::BackorderPlaced(BackorderPlaced { .. })
        | Event::BackorderFilled(BackorderFilled { .. })
        | Event::BackorderDropped(BackorderDropped { .. }) => backorder_row(event, row, rest),
        // No lines: an extension moves no stock.
        Event::ReservationExtended(ReservationExtended {
            extension_id,
            ttl_seconds,
            expires_at,
            ..
        }) => {
            rest.extension_id = Some(extension_id.clone());
            rest.ttl_seconds = Some(*ttl_seconds);
            rest.expires_at = Some(*expires_at);
        }
        outside_reservations!() => unreachable!("encode lays out stock events itself"),
    }
}

/// Lays a backorder's event out: its lines (placed, filled or dropped),
/// the latest arrival it accepted, why it was dropped.
fn backorder_row<'a>(event: &'a Event, row: &mut LogRow<'a>, rest: &mut Rest) {
    match event {
        Event::BackorderPlaced(BackorderPlaced {
            lines,
            latest_arrival,
            ..
        }) => {
            push_lines(row, lines);
            rest.latest_arrival = *latest_arrival;
        }
        Event::BackorderFilled(BackorderFilled { lines, .. }) => push_lines(row, lines),
        Event::BackorderDropped(BackorderDropped { lines, reason, .. }) => {
            push_lines(row, lines);
            rest.reason = Some(reason.as_str().to_owned());
        }
        outside_reservations!()
        | Event::ReservationCreated(ReservationCreated { .. })
        | Event::ReservationConfirmed(ReservationConfirmed { .. })
        | Event::ReservationReleased(ReservationReleased { .. })
        | Event::ReservationLinesConfirmed(ReservationLinesConfirmed { .. })
        | Event::ReservationLinesReleased(ReservationLinesReleased { .. })
        | Event::ReservationExtended(ReservationExtended { .. })
        | Event::ReservationExpired(ReservationExpired { .. }) => {
            unreachable!("encode lays these out elsewhere")
        }
    }
}

/// Lays an expected receipt's event out: its item as a line whose quantity
/// is what is still expected after it (its type's line effect is zero, so
/// it moves no stock; the `incoming` read model reads it), and the rest in
/// `data`.
fn expected_row<'a>(event: &'a Event, row: &mut LogRow<'a>, rest: &mut Rest) {
    match event {
        Event::ReceiptExpected(ReceiptExpected {
            sku,
            location,
            quantity,
            expected_on,
        }) => {
            push(row, sku, location, i64::from(*quantity));
            rest.expected_on = Some(*expected_on);
        }
        Event::ExpectedReceiptChanged(ExpectedReceiptChanged {
            change_id,
            sku,
            location,
            quantity,
            expected_on,
            outstanding,
        }) => {
            push(row, sku, location, i64::from(*outstanding));
            rest.change_id = Some(change_id.clone());
            rest.expected = Some(*quantity);
            rest.expected_on = Some(*expected_on);
        }
        Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
            receipt_id,
            sku,
            location,
            quantity,
            expected_on,
            outstanding,
        }) => {
            push(row, sku, location, i64::from(*outstanding));
            rest.receipt_id = Some(receipt_id.clone());
            rest.delivered = Some(*quantity);
            rest.expected_on = Some(*expected_on);
        }
        Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled {
            sku,
            location,
            expected_on,
            withdrawn,
        }) => {
            push(row, sku, location, 0);
            rest.withdrawn = Some(*withdrawn);
            rest.expected_on = Some(*expected_on);
        }
        outside_expectations!() => unreachable!("encode lays these out elsewhere"),
    }
}

fn push<'a>(row: &mut LogRow<'a>, sku: &'a Sku, location: &'a Location, quantity: i64) {
    row.skus.push(sku.as_str());
    row.locations.push(location.as_str());
    row.quantities.push(quantity);
}

fn push_lines<'a>(row: &mut LogRow<'a>, lines: &'a [Line]) {
    for l in lines {
        push(row, &l.item.sku, &l.item.location, i64::from(l.quantity));
    }
}

/// Parses the `data` column as JSON text (the audit's fast path).
pub(crate) fn rest_from_str(data: &str) -> Result<Rest, String> {
    serde_json::from_str(data).map_err(|e| format!("data: {e}"))
}

/// Parses the `data` column as read into a JSON value.
pub(crate) fn rest_from_value(data: serde_json::Value) -> Result<Rest, String> {
    serde_json::from_value(data).map_err(|e| format!("data: {e}"))
}

/// What a row says of how it was written: its shape's version (the
/// `version` column) and when (`recorded_at`), which an upcast may need.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Written {
    pub version: i64,
    pub recorded_at: DateTime<Utc>,
}

/// The field of the metadata a reservation's row leaves out.
const FINGERPRINT: &str = "fingerprint";

/// Whether `event`'s row leaves its fingerprint out of `metadata`: a
/// reservation written from version 2 of its shape on, whose `request_hash`
/// (in `data`) is the same 64 characters. Rows written before keep both, and
/// read as they always did.
fn fingerprint_in_data(event: &Event, version: shape::Version) -> Option<&str> {
    match event {
        Event::ReservationCreated(ReservationCreated { request_hash, .. }) if version >= 2 => {
            Some(request_hash)
        }
        _ => None,
    }
}

/// The `metadata` column of `event`'s row, written in `version`: the
/// metadata, without a fingerprint its data already holds (about 80 bytes a
/// reservation). A reservation with no fingerprint, which the command path
/// never writes, says so with `null`, so that it cannot read as one.
pub fn metadata_row(
    event: &Event,
    version: shape::Version,
    metadata: &EventMetadata,
) -> serde_json::Value {
    let mut row = serde_json::to_value(metadata).expect("metadata serialises");
    if let (Some(hash), serde_json::Value::Object(fields)) =
        (fingerprint_in_data(event, version), &mut row)
    {
        match metadata.fingerprint.as_deref() {
            Some(f) if f == hash => fields.remove(FINGERPRINT),
            Some(_) => None,
            None => fields.insert(FINGERPRINT.to_owned(), serde_json::Value::Null),
        };
    }
    row
}

/// The metadata of `event` from its row's `metadata` column (the inverse
/// of `metadata_row`).
pub(crate) fn metadata_from_row(
    event: &Event,
    version: shape::Version,
    row: serde_json::Value,
) -> Result<EventMetadata, serde_json::Error> {
    let left_out = row.get(FINGERPRINT).is_none();
    let mut metadata: EventMetadata = serde_json::from_value(row)?;
    if let Some(hash) = fingerprint_in_data(event, version).filter(|_| left_out) {
        metadata.fingerprint = Some(hash.to_owned());
    }
    Ok(metadata)
}

/// Decodes `row` as the log would give it back for `e` (its version and
/// its recording): what a fixture of an older release checks its rows by.
pub fn decode_row(row: &LogRow<'_>, e: &crate::domain::RecordedEvent) -> Result<Event, String> {
    let written = Written {
        version: i64::from(e.version),
        recorded_at: e.recorded_at,
    };
    let columns = Columns {
        order_id: row.order_id,
        skus: row.skus.clone(),
        locations: row.locations.clone(),
        quantities: row.quantities.clone(),
    };
    decode(
        e.event.type_name(),
        written,
        columns,
        rest_from_value(row.data.clone())?,
    )
}

/// Brings a row written in an older shape up to the current one: the
/// row's side of `shape::upcast_data`, one arm per row of `shape::CHANGES`,
/// and the same rule: a field a later version added is always derived, even
/// where an older row holds one (which no release wrote), since the event
/// is shown and hashed without it.
fn upcast(kind: EventType, version: shape::Version, rest: &mut Rest, written: Written) {
    if kind == EventType::ReservationCreated && version < 2 {
        rest.ttl_seconds = rest
            .expires_at
            .map(|expires_at| shape::hold_of_version_1(expires_at, written.recorded_at));
    }
}

/// Rebuilds the event a row holds, in the current shape; says what is wrong
/// with a row that holds none.
pub(crate) fn decode(
    type_name: &str,
    written: Written,
    c: Columns<'_>,
    mut rest: Rest,
) -> Result<Event, String> {
    let kind = EventType::parse(type_name).ok_or_else(|| format!("unknown type {type_name}"))?;
    let version = shape::check(kind, written.version).map_err(|e| e.to_string())?;
    upcast(kind, version, &mut rest, written);
    let need =
        |v: Option<String>, what: &str| v.ok_or_else(|| format!("{type_name} without {what}"));
    let event = match kind {
        EventType::StockReceived => {
            let (item, quantity) = one_item(&c, type_name)?;
            let quantity = u32::try_from(quantity).map_err(|_| format!("quantity {quantity}"))?;
            Event::StockReceived(StockReceived {
                sku: item.sku,
                location: item.location,
                quantity,
            })
        }
        EventType::StockAdjusted => {
            let (item, delta) = one_item(&c, type_name)?;
            let delta = i32::try_from(delta).map_err(|_| format!("delta {delta}"))?;
            Event::StockAdjusted(StockAdjusted {
                sku: item.sku,
                location: item.location,
                delta,
                reason: need(rest.reason, "reason")?,
            })
        }
        EventType::StockTransferred => transferred(&c)?,
        EventType::StockCounted => {
            let (item, change) = one_item(&c, type_name)?;
            let counted = rest
                .counted
                .ok_or_else(|| format!("{type_name} without counted"))?;
            Event::StockCounted(StockCounted {
                sku: item.sku,
                location: item.location,
                counted,
                books: i64::from(counted) - change,
            })
        }
        EventType::OrderLimitSet
        | EventType::ReorderPointSet
        | EventType::StockLow
        | EventType::StockRecovered => setting_or_alert(kind, &c, rest)?,
        EventType::ReceiptExpected
        | EventType::ExpectedReceiptChanged
        | EventType::ExpectedReceiptDelivered
        | EventType::ExpectedReceiptCancelled => expected_event(kind, &c, rest)?,
        EventType::ReservationCreated
        | EventType::ReservationConfirmed
        | EventType::ReservationReleased
        | EventType::ReservationLinesConfirmed
        | EventType::ReservationLinesReleased
        | EventType::ReservationExtended
        | EventType::ReservationExpired
        | EventType::BackorderPlaced
        | EventType::BackorderFilled
        | EventType::BackorderDropped => reservation_event(kind, &c, rest)?,
    };
    Ok(event)
}

/// A reservation event from its row.
fn reservation_event(kind: EventType, c: &Columns<'_>, rest: Rest) -> Result<Event, String> {
    let type_name = kind.as_str();
    fn need<T>(v: Option<T>, type_name: &str, what: &str) -> Result<T, String> {
        v.ok_or_else(|| format!("{type_name} without {what}"))
    }
    let order_id = c
        .order_id
        .map(|o| OrderId::parse("order_id", o).map_err(|r| r.to_string()))
        .transpose()?;
    let need_order = |o: Option<OrderId>| need(o, type_name, "order_id");
    let event = match kind {
        EventType::ReservationCreated => Event::ReservationCreated(ReservationCreated {
            order_id: need_order(order_id)?,
            lines: lines(c)?,
            expires_at: need(rest.expires_at, type_name, "expires_at")?,
            ttl_seconds: need(rest.ttl_seconds, type_name, "ttl_seconds")?,
            request_hash: need(rest.request_hash, type_name, "request_hash")?,
        }),
        EventType::ReservationConfirmed => Event::ReservationConfirmed(ReservationConfirmed {
            order_id: need_order(order_id)?,
            lines: lines(c)?,
            confirmation_id: rest.confirmation_id,
        }),
        EventType::ReservationReleased => Event::ReservationReleased(ReservationReleased {
            order_id,
            lines: lines(c)?,
            reason: need(rest.reason, type_name, "reason")?,
            release_id: rest.release_id,
        }),
        EventType::ReservationLinesConfirmed => {
            Event::ReservationLinesConfirmed(ReservationLinesConfirmed {
                order_id: need_order(order_id)?,
                confirmation_id: need(rest.confirmation_id, type_name, "confirmation_id")?,
                lines: lines(c)?,
            })
        }
        EventType::ReservationLinesReleased => {
            Event::ReservationLinesReleased(ReservationLinesReleased {
                order_id: need_order(order_id)?,
                release_id: need(rest.release_id, type_name, "release_id")?,
                lines: lines(c)?,
                reason: need(rest.reason, type_name, "reason")?,
            })
        }
        EventType::ReservationExtended => Event::ReservationExtended(ReservationExtended {
            order_id: need_order(order_id)?,
            extension_id: need(rest.extension_id, type_name, "extension_id")?,
            ttl_seconds: need(rest.ttl_seconds, type_name, "ttl_seconds")?,
            expires_at: need(rest.expires_at, type_name, "expires_at")?,
        }),
        EventType::ReservationExpired => Event::ReservationExpired(ReservationExpired {
            order_id: need_order(order_id)?,
            lines: lines(c)?,
        }),
        EventType::BackorderPlaced | EventType::BackorderFilled | EventType::BackorderDropped => {
            backorder_event(kind, need_order(order_id)?, lines(c)?, rest)?
        }
        EventType::StockReceived
        | EventType::StockAdjusted
        | EventType::StockTransferred
        | EventType::StockCounted
        | EventType::OrderLimitSet
        | EventType::ReorderPointSet
        | EventType::StockLow
        | EventType::StockRecovered
        | EventType::ReceiptExpected
        | EventType::ExpectedReceiptChanged
        | EventType::ExpectedReceiptDelivered
        | EventType::ExpectedReceiptCancelled => {
            return Err(format!("{type_name} is no reservation event"))
        }
    };
    Ok(event)
}

/// A setting or an alert from its row: one item line that moves nothing,
/// the rest in `data`.
fn setting_or_alert(kind: EventType, c: &Columns<'_>, rest: Rest) -> Result<Event, String> {
    let type_name = kind.as_str();
    fn need<T>(v: Option<T>, type_name: &str, what: &str) -> Result<T, String> {
        v.ok_or_else(|| format!("{type_name} without {what}"))
    }
    let (item, quantity) = one_item(c, type_name)?;
    if quantity != 0 {
        return Err(format!("{type_name} with a line of {quantity}, not 0"));
    }
    let (sku, location) = (item.sku, item.location);
    let event = match kind {
        EventType::OrderLimitSet => Event::OrderLimitSet(OrderLimitSet {
            sku,
            location,
            max_per_order: need(rest.max_per_order, type_name, "max_per_order")?,
        }),
        EventType::ReorderPointSet => Event::ReorderPointSet(ReorderPointSet {
            sku,
            location,
            reorder_point: need(rest.reorder_point, type_name, "reorder_point")?,
        }),
        EventType::StockLow => Event::StockLow(StockLow {
            sku,
            location,
            available: need(rest.available, type_name, "available")?,
            reorder_point: need(rest.reorder_point.flatten(), type_name, "reorder_point")?,
        }),
        EventType::StockRecovered => Event::StockRecovered(StockRecovered {
            sku,
            location,
            available: need(rest.available, type_name, "available")?,
            reorder_point: need(rest.reorder_point, type_name, "reorder_point")?,
        }),
        EventType::StockReceived
        | EventType::StockAdjusted
        | EventType::StockTransferred
        | EventType::StockCounted
        | EventType::ReceiptExpected
        | EventType::ExpectedReceiptChanged
        | EventType::ExpectedReceiptDelivered
        | EventType::ExpectedReceiptCancelled
        | EventType::ReservationCreated
        | EventType::ReservationConfirmed
        | EventType::ReservationReleased
        | EventType::ReservationLinesConfirmed
        | EventType::ReservationLinesReleased
        | EventType::ReservationExtended
        | EventType::ReservationExpired
        | EventType::BackorderPlaced
        | EventType::BackorderFilled
        | EventType::BackorderDropped => return Err(format!("{type_name} is no setting or alert")),
    };
    Ok(event)
}

/// An expected receipt's event from its row: one item line of the units
/// still expected after it, the rest in `data`.
fn expected_event(kind: EventType, c: &Columns<'_>, rest: Rest) -> Result<Event, String> {
    let type_name = kind.as_str();
    fn need<T>(v: Option<T>, type_name: &str, what: &str) -> Result<T, String> {
        v.ok_or_else(|| format!("{type_name} without {what}"))
    }
    let (item, line) = one_item(c, type_name)?;
    let units = u32::try_from(line).map_err(|_| format!("{type_name} with a line of {line}"))?;
    let (sku, location) = (item.sku, item.location);
    let expected_on = need(rest.expected_on, type_name, "expected_on")?;
    let event = match kind {
        EventType::ReceiptExpected => Event::ReceiptExpected(ReceiptExpected {
            sku,
            location,
            quantity: units,
            expected_on,
        }),
        EventType::ExpectedReceiptChanged => {
            Event::ExpectedReceiptChanged(ExpectedReceiptChanged {
                change_id: need(rest.change_id, type_name, "change_id")?,
                sku,
                location,
                quantity: need(rest.expected, type_name, "expected")?,
                expected_on,
                outstanding: units,
            })
        }
        EventType::ExpectedReceiptDelivered => {
            Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
                receipt_id: need(rest.receipt_id, type_name, "receipt_id")?,
                sku,
                location,
                quantity: need(rest.delivered, type_name, "delivered")?,
                expected_on,
                outstanding: units,
            })
        }
        EventType::ExpectedReceiptCancelled if units == 0 => {
            Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled {
                sku,
                location,
                expected_on,
                withdrawn: need(rest.withdrawn, type_name, "withdrawn")?,
            })
        }
        EventType::ExpectedReceiptCancelled => {
            return Err(format!("{type_name} with a line of {units}, not 0"))
        }
        EventType::StockReceived
        | EventType::StockAdjusted
        | EventType::StockTransferred
        | EventType::StockCounted
        | EventType::OrderLimitSet
        | EventType::ReorderPointSet
        | EventType::StockLow
        | EventType::StockRecovered
        | EventType::ReservationCreated
        | EventType::ReservationConfirmed
        | EventType::ReservationReleased
        | EventType::ReservationLinesConfirmed
        | EventType::ReservationLinesReleased
        | EventType::ReservationExtended
        | EventType::ReservationExpired
        | EventType::BackorderPlaced
        | EventType::BackorderFilled
        | EventType::BackorderDropped => {
            return Err(format!("{type_name} is no expected receipt's event"))
        }
    };
    Ok(event)
}

/// A backorder's event from its order, its lines and the rest of its row.
fn backorder_event(
    kind: EventType,
    order_id: OrderId,
    lines: Vec<Line>,
    rest: Rest,
) -> Result<Event, String> {
    let type_name = kind.as_str();
    Ok(match kind {
        EventType::BackorderPlaced => Event::BackorderPlaced(BackorderPlaced {
            order_id,
            lines,
            latest_arrival: rest.latest_arrival,
        }),
        EventType::BackorderFilled => Event::BackorderFilled(BackorderFilled { order_id, lines }),
        EventType::BackorderDropped => Event::BackorderDropped(BackorderDropped {
            order_id,
            lines,
            reason: drop_reason(
                rest.reason
                    .ok_or_else(|| format!("{type_name} without reason"))?,
            )?,
        }),
        EventType::StockReceived
        | EventType::StockAdjusted
        | EventType::StockTransferred
        | EventType::StockCounted
        | EventType::OrderLimitSet
        | EventType::ReorderPointSet
        | EventType::StockLow
        | EventType::StockRecovered
        | EventType::ReceiptExpected
        | EventType::ExpectedReceiptChanged
        | EventType::ExpectedReceiptDelivered
        | EventType::ExpectedReceiptCancelled
        | EventType::ReservationCreated
        | EventType::ReservationConfirmed
        | EventType::ReservationReleased
        | EventType::ReservationExpired
        | EventType::ReservationLinesConfirmed
        | EventType::ReservationLinesReleased
        | EventType::ReservationExtended => {
            return Err(format!("{type_name} is no backorder event"))
        }
    })
}

/// A dropped backorder's reason, as `DropReason::as_str` wrote it.
fn drop_reason(text: String) -> Result<DropReason, String> {
    [
        DropReason::Released,
        DropReason::Expired,
        DropReason::Unfillable,
    ]
    .into_iter()
    .find(|r| r.as_str() == text)
    .ok_or_else(|| format!("BackorderDropped for no known reason: {text}"))
}

fn item(c: &Columns<'_>, i: usize) -> Result<Item, String> {
    let (Some(sku), Some(location)) = (c.skus.get(i), c.locations.get(i)) else {
        return Err(format!("line {i} has no item"));
    };
    Ok(Item {
        sku: Sku::parse("sku", sku).map_err(|r| r.to_string())?,
        location: Location::parse("location", location).map_err(|r| r.to_string())?,
    })
}

/// A transfer's two lines: the same SKU, leaving one location and arriving
/// at another, by the same quantity.
fn transferred(c: &Columns<'_>) -> Result<Event, String> {
    if c.skus.len() != 2 || c.locations.len() != 2 || c.quantities.len() != 2 {
        return Err(format!("StockTransferred with {} items", c.skus.len()));
    }
    let (from, to) = (item(c, 0)?, item(c, 1)?);
    let quantity =
        u32::try_from(c.quantities[1]).map_err(|_| "a transfer of nothing".to_owned())?;
    if from.sku != to.sku || c.quantities[0] != -c.quantities[1] || quantity == 0 {
        return Err("StockTransferred lines that do not mirror each other".into());
    }
    Ok(Event::StockTransferred(StockTransferred {
        sku: from.sku,
        from_location: from.location,
        to_location: to.location,
        quantity,
    }))
}

fn one_item(c: &Columns<'_>, type_name: &str) -> Result<(Item, i64), String> {
    if c.skus.len() != 1 || c.quantities.len() != 1 {
        return Err(format!("{type_name} with {} items", c.skus.len()));
    }
    Ok((item(c, 0)?, c.quantities[0]))
}

fn lines(c: &Columns<'_>) -> Result<Vec<Line>, String> {
    if c.skus.len() != c.locations.len() || c.skus.len() != c.quantities.len() {
        return Err("item columns of different lengths".into());
    }
    (0..c.skus.len())
        .map(|i| {
            let q = c.quantities[i];
            Ok(Line {
                item: item(c, i)?,
                quantity: u32::try_from(q).map_err(|_| format!("line {i} quantity {q}"))?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::TOMBSTONE_REASON;
    use crate::domain::StockDelta;

    fn line(sku: &str, location: &str, quantity: u32) -> Line {
        Line {
            item: Item {
                sku: Sku::parse("sku", sku).unwrap(),
                location: Location::parse("location", location).unwrap(),
            },
            quantity,
        }
    }

    fn every_type() -> Vec<Event> {
        let mut all = stock_events();
        all.extend(expected_events());
        all.extend(reservation_events());
        all.extend(backorder_events());
        all
    }

    fn backorder_events() -> Vec<Event> {
        let lines = vec![line("a", "x", 2), line("b", "y", 1)];
        let order = OrderId::parse("order_id", "o-1").unwrap();
        vec![
            Event::BackorderPlaced(BackorderPlaced {
                order_id: order.clone(),
                lines: lines.clone(),
                latest_arrival: chrono::NaiveDate::from_ymd_opt(2026, 12, 10),
            }),
            Event::BackorderPlaced(BackorderPlaced {
                order_id: order.clone(),
                lines: lines.clone(),
                latest_arrival: None,
            }),
            Event::BackorderFilled(BackorderFilled {
                order_id: order.clone(),
                lines: lines.clone(),
            }),
            Event::BackorderDropped(BackorderDropped {
                order_id: order.clone(),
                lines: lines.clone(),
                reason: DropReason::Unfillable,
            }),
            Event::BackorderDropped(BackorderDropped {
                order_id: order.clone(),
                lines: lines.clone(),
                reason: DropReason::Expired,
            }),
        ]
    }

    fn stock_events() -> Vec<Event> {
        vec![
            Event::StockReceived(StockReceived {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                quantity: 7,
            }),
            Event::StockAdjusted(StockAdjusted {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                delta: -3,
                reason: "count".into(),
            }),
            Event::StockTransferred(StockTransferred {
                sku: Sku::parse("sku", "a").unwrap(),
                from_location: Location::parse("location", "x").unwrap(),
                to_location: Location::parse("location", "y").unwrap(),
                quantity: 4,
            }),
            Event::StockCounted(StockCounted {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                counted: 6,
                books: 8,
            }),
            Event::OrderLimitSet(OrderLimitSet {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                max_per_order: Some(3),
            }),
            Event::OrderLimitSet(OrderLimitSet {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                max_per_order: None,
            }),
            Event::ReorderPointSet(ReorderPointSet {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                reorder_point: Some(4),
            }),
            Event::ReorderPointSet(ReorderPointSet {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                reorder_point: None,
            }),
            Event::StockLow(StockLow {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                available: 3,
                reorder_point: 4,
            }),
            Event::StockRecovered(StockRecovered {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                available: 3,
                reorder_point: None,
            }),
        ]
    }

    fn expected_events() -> Vec<Event> {
        vec![
            Event::ReceiptExpected(ReceiptExpected {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                quantity: 10,
                expected_on: day(10),
            }),
            Event::ExpectedReceiptChanged(ExpectedReceiptChanged {
                change_id: ChangeId::parse("change_id", "c1").unwrap(),
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                quantity: 12,
                expected_on: day(11),
                outstanding: 8,
            }),
            Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
                receipt_id: ReceiptId::parse("receipt_id", "r1").unwrap(),
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                quantity: 4,
                expected_on: day(11),
                outstanding: 0,
            }),
            Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled {
                sku: Sku::parse("sku", "a").unwrap(),
                location: Location::parse("location", "x").unwrap(),
                expected_on: day(11),
                withdrawn: 3,
            }),
        ]
    }

    fn day(d: u32) -> chrono::NaiveDate {
        chrono::NaiveDate::from_ymd_opt(2026, 12, d).unwrap()
    }

    fn reservation_events() -> Vec<Event> {
        let lines = vec![line("a", "x", 2), line("b", "y", 1)];
        let order = OrderId::parse("order_id", "o-1").unwrap();
        vec![
            Event::ReservationCreated(ReservationCreated {
                order_id: order.clone(),
                lines: lines.clone(),
                expires_at: Utc::now(),
                ttl_seconds: 600,
                request_hash: "h".into(),
            }),
            Event::ReservationConfirmed(ReservationConfirmed {
                order_id: order.clone(),
                lines: lines.clone(),
                confirmation_id: None,
            }),
            Event::ReservationConfirmed(ReservationConfirmed {
                order_id: order.clone(),
                lines: lines.clone(),
                confirmation_id: Some(ConfirmationId::parse("id", "ship-2").unwrap()),
            }),
            Event::ReservationReleased(ReservationReleased {
                order_id: Some(order.clone()),
                lines: lines.clone(),
                reason: "cancelled".into(),
                release_id: None,
            }),
            Event::ReservationReleased(ReservationReleased {
                order_id: Some(order.clone()),
                lines: lines.clone(),
                reason: "cancelled".into(),
                release_id: Some(ReleaseId::parse("id", "drop-b").unwrap()),
            }),
            Event::ReservationReleased(ReservationReleased {
                order_id: None,
                lines: vec![],
                reason: TOMBSTONE_REASON.into(),
                release_id: None,
            }),
            Event::ReservationLinesConfirmed(ReservationLinesConfirmed {
                order_id: order.clone(),
                confirmation_id: ConfirmationId::parse("id", "ship-1").unwrap(),
                lines: lines.clone(),
            }),
            Event::ReservationLinesReleased(ReservationLinesReleased {
                order_id: order.clone(),
                release_id: ReleaseId::parse("id", "drop-a").unwrap(),
                lines: lines.clone(),
                reason: "out of stock".into(),
            }),
            Event::ReservationExtended(ReservationExtended {
                order_id: order.clone(),
                extension_id: ExtensionId::parse("id", "more-time").unwrap(),
                ttl_seconds: 600,
                expires_at: Utc::now(),
            }),
            Event::ReservationExpired(ReservationExpired {
                order_id: order,
                lines,
            }),
        ]
    }

    /// How the store writes `e` today: in its type's current shape.
    fn now_written(e: &Event) -> Written {
        Written {
            version: i64::from(shape::current(e.event_type())),
            recorded_at: chrono::DateTime::UNIX_EPOCH,
        }
    }

    fn round_trip(e: &Event) -> Result<Event, String> {
        let row = encode(e);
        let columns = Columns {
            order_id: row.order_id,
            skus: row.skus,
            locations: row.locations,
            quantities: row.quantities,
        };
        decode(
            e.type_name(),
            now_written(e),
            columns,
            rest_from_value(row.data)?,
        )
    }

    /// `line_effect` over a row's lines moves every item exactly as the
    /// domain's one definition of an event's effects says.
    #[test]
    fn line_effects_are_the_events_effects() {
        let every = stock_events()
            .into_iter()
            .chain(expected_events())
            .chain(reservation_events())
            .chain(backorder_events());
        for e in every {
            let row = encode(&e);
            let sign = e.event_type().line_effect();
            let mut by_lines = std::collections::BTreeMap::new();
            for ((sku, location), q) in row.skus.iter().zip(&row.locations).zip(&row.quantities) {
                let d: &mut StockDelta = by_lines
                    .entry((sku.to_string(), location.to_string()))
                    .or_default();
                d.on_hand += sign.on_hand * q;
                d.reserved += sign.reserved * q;
                d.confirmed += sign.confirmed * q;
                d.backordered += sign.backordered * q;
            }
            let mut by_effects = std::collections::BTreeMap::new();
            e.for_each_effect(|item, delta| {
                let d: &mut StockDelta = by_effects
                    .entry((
                        item.sku.as_str().to_owned(),
                        item.location.as_str().to_owned(),
                    ))
                    .or_default();
                d.on_hand += delta.on_hand;
                d.reserved += delta.reserved;
                d.confirmed += delta.confirmed;
                d.backordered += delta.backordered;
            });
            by_lines.retain(|_, d| *d != StockDelta::default());
            by_effects.retain(|_, d| *d != StockDelta::default());
            assert_eq!(by_lines, by_effects, "{e:?}");
        }
    }

    #[test]
    fn every_event_type_decodes_to_what_was_encoded() {
        let all = every_type();
        for t in EventType::ALL {
            assert!(all.iter().any(|e| e.event_type() == *t), "{t} untested");
        }
        for e in &all {
            assert_eq!(round_trip(e).as_ref(), Ok(e));
        }
    }

    /// A version-1 reservation's hold is always derived, from its row as
    /// from its JSON, even where the row holds one (which no release wrote):
    /// it is shown and hashed without it, so nothing may read it.
    #[test]
    fn a_version_1_hold_is_derived_the_same_way_from_a_row_and_from_json() {
        let created = reservation_events()[0].clone();
        let Event::ReservationCreated(ReservationCreated { expires_at, .. }) = created else {
            unreachable!()
        };
        let recorded_at = expires_at - chrono::Duration::seconds(900);
        let row = encode(&created);
        assert!(row.data.get("ttl_seconds").is_some(), "the row holds one");
        let e = crate::domain::RecordedEvent {
            position: 1,
            stream: crate::domain::StreamId::parse("s", "reservation:r").unwrap(),
            seq: 1,
            event: created.clone(),
            version: 1,
            metadata: EventMetadata::default(),
            recorded_at,
            tx_id: 1,
        };
        let from_row = decode_row(&row, &e).unwrap();
        let from_json =
            Event::from_written("ReservationCreated", 1, created.data(), recorded_at).unwrap();
        assert_eq!(from_row, from_json);
        assert!(matches!(
            from_row,
            Event::ReservationCreated(ReservationCreated {
                ttl_seconds: 900,
                ..
            })
        ));
    }

    /// A reservation's row from version 2 on leaves out the fingerprint its
    /// `request_hash` repeats, and reads it back; nothing else is left out,
    /// and a version 1 row reads as it was written.
    #[test]
    fn a_reservations_fingerprint_is_stored_once() {
        let created = &reservation_events()[0];
        let hash = "h".to_owned();
        let with = |fingerprint: Option<&str>| EventMetadata {
            command_id: uuid::Uuid::nil(),
            actor: "t".into(),
            fingerprint: fingerprint.map(str::to_owned),
            ..Default::default()
        };
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        let cases = [
            // (version, fingerprint, its row's keys)
            (2, Some(hash.as_str()), vec!["actor", "command_id"]),
            (2, Some("other"), vec!["actor", "command_id", "fingerprint"]),
            (2, None, vec!["actor", "command_id", "fingerprint"]),
            (
                1,
                Some(hash.as_str()),
                vec!["actor", "command_id", "fingerprint"],
            ),
            (1, None, vec!["actor", "command_id"]),
        ];
        for (version, fingerprint, stored) in cases {
            let m = with(fingerprint);
            let row = metadata_row(created, version, &m);
            assert_eq!(keys(&row), stored, "{version} {fingerprint:?}");
            assert_eq!(metadata_from_row(created, version, row).unwrap(), m);
        }
        let received = &stock_events()[0];
        let m = with(Some("x"));
        let row = metadata_row(received, 1, &m);
        assert_eq!(row["fingerprint"], "x");
        assert_eq!(metadata_from_row(received, 1, row).unwrap(), m);
    }

    #[test]
    fn data_holds_only_what_has_no_column() {
        let all = every_type();
        let created = all
            .iter()
            .find(|e| e.event_type() == EventType::ReservationCreated)
            .unwrap();
        let row = encode(created);
        let keys: Vec<&String> = row.data.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["expires_at", "request_hash", "ttl_seconds"]);
        assert_eq!(row.skus, ["a", "b"]);
        assert_eq!(row.quantities, [2, 1]);
    }

    #[test]
    fn a_row_that_holds_no_valid_event_is_named() {
        let bad = |type_name: &str, skus: Vec<&'static str>, quantities: Vec<i64>, data: &str| {
            let columns = Columns {
                order_id: None,
                locations: skus.clone(),
                skus,
                quantities,
            };
            let written = Written {
                version: 1,
                recorded_at: chrono::DateTime::UNIX_EPOCH,
            };
            rest_from_str(data).and_then(|r| decode(type_name, written, columns, r))
        };
        assert!(bad("StockReceived", vec![], vec![], "{}").is_err());
        assert!(bad("StockReceived", vec!["a"], vec![-1], "{}").is_err());
        assert!(bad("StockAdjusted", vec!["a"], vec![1], "{}").is_err());
        assert!(bad("ReservationConfirmed", vec!["a"], vec![1], "{}").is_err());
        assert!(bad("Unknown", vec!["a"], vec![1], "{}").is_err());
        assert!(bad("StockReceived", vec!["a"], vec![1], r#"{"extra": 1}"#).is_err());
        assert!(bad("StockReceived", vec!["a"], vec![1], "{}").is_ok());
        // A limit without its field is named, not read as "no limit"; a
        // lifted one says so with null.
        assert!(bad("OrderLimitSet", vec!["a"], vec![0], "{}").is_err());
        assert!(bad(
            "OrderLimitSet",
            vec!["a"],
            vec![0],
            r#"{"max_per_order": null}"#
        )
        .is_ok());
    }

    #[test]
    fn a_lifted_limit_is_stored_as_null() {
        let lifted = Event::OrderLimitSet(OrderLimitSet {
            sku: Sku::parse("sku", "a").unwrap(),
            location: Location::parse("location", "x").unwrap(),
            max_per_order: None,
        });
        assert_eq!(
            encode(&lifted).data,
            serde_json::json!({"max_per_order": null})
        );
    }
}
