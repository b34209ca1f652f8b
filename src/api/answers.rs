//! Each answer built from what the domain decided or the store read: the
//! one place that says which field of an answer comes from where.

use serde::Serialize;
use serde_json::json;

use chrono::{DateTime, Utc};

use crate::api::bodies::{
    self, AdjustmentResponse, CountResponse, DigestResponse, EventsPage, ExpectedReceiptResponse,
    HistoryEntry, LimitResponse, LowStockItem, LowStockResponse, OrderResponse,
    ProjectionsResponse, ReceiptResponse, ReorderPointResponse, ReservationLine,
    ReservationResponse, StockResponse, TransferResponse,
};
use crate::api::bodies::{PromiseDate, PromiseResponse};
use crate::domain::{
    AsOf, Balance, ExpectationView, Item, LineView, Outcome, Promise, ReservationState,
    ReservationView,
};
use crate::projection::status::ProjectionStatus;
use crate::read_model::low_stock::LowRow;
use crate::read_model::order_view::OrderViewRow;
use crate::seal::digest::Digest;
use crate::store::history::AsOfFigures;
use crate::store::read::event_json;
use crate::store::{EventPage, ReservationDetails};

/// A command's answer.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Answer {
    Receipt(ReceiptResponse),
    Adjustment(AdjustmentResponse),
    Count(CountResponse),
    Transfer(TransferResponse),
    Limit(LimitResponse),
    ReorderPoint(ReorderPointResponse),
    /// A reservation command's decision without its events (the CLI shows
    /// it so; the API answers with `reservation`).
    Reservation(ReservationAnswer),
    Expected(ExpectedReceiptResponse),
    NotDue(NotDueAnswer),
}

/// The reservation a command decided, and whether it was a replay.
#[derive(Debug, Serialize)]
pub struct ReservationAnswer {
    #[serde(flatten)]
    pub view: ReservationView,
    pub replayed: bool,
}

/// An expiry that found the reservation not due.
#[derive(Debug, Serialize)]
pub struct NotDueAnswer {
    pub reservation_id: String,
    /// None when there is no such reservation.
    pub state: Option<ReservationState>,
    /// Always false: nothing expired.
    pub expired: bool,
}

/// A refusal as every interface answers it: `{code, message, details}`
/// (the server's error body has the same three fields).
pub fn rejection_document(r: &crate::domain::Rejection) -> serde_json::Value {
    serde_json::json!({"code": r.code().as_str(), "message": r.to_string(), "details": r.details()})
}

/// The answer to a command that decided `o`.
pub fn answer(o: &Outcome) -> Answer {
    match o {
        Outcome::Received { .. }
        | Outcome::Adjusted { .. }
        | Outcome::Counted { .. }
        | Outcome::Transferred { .. } => stock_answer(o),
        Outcome::LimitSet { .. } | Outcome::ReorderPointSet { .. } => setting_answer(o),
        Outcome::Reservation { view, replayed } => Answer::Reservation(ReservationAnswer {
            view: view.clone(),
            replayed: *replayed,
        }),
        Outcome::Expected { view, replayed } => {
            Answer::Expected(expected_receipt(view, Some(*replayed)))
        }
        Outcome::NotDue {
            reservation_id,
            state,
        } => Answer::NotDue(NotDueAnswer {
            reservation_id: reservation_id.as_str().to_owned(),
            state: *state,
            expired: false,
        }),
    }
}

/// The answer of a command that moved stock (and opened a one-event stream).
fn stock_answer(o: &Outcome) -> Answer {
    match o {
        Outcome::Received {
            receipt_id,
            item,
            quantity,
            against,
            replayed,
        } => Answer::Receipt(ReceiptResponse {
            receipt_id: receipt_id.clone(),
            sku: item.sku.as_str().to_owned(),
            location: item.location.as_str().to_owned(),
            quantity: *quantity,
            against: against.clone(),
            replayed: *replayed,
        }),
        Outcome::Adjusted {
            adjustment_id,
            item,
            delta,
            reason,
            replayed,
        } => Answer::Adjustment(AdjustmentResponse {
            adjustment_id: adjustment_id.clone(),
            sku: item.sku.as_str().to_owned(),
            location: item.location.as_str().to_owned(),
            delta: i64::from(*delta),
            reason: reason.clone(),
            replayed: *replayed,
        }),
        Outcome::Counted {
            count_id,
            item,
            counted,
            books,
            replayed,
        } => Answer::Count(CountResponse {
            count_id: count_id.clone(),
            sku: item.sku.as_str().to_owned(),
            location: item.location.as_str().to_owned(),
            counted: i64::from(*counted),
            books: *books,
            change: i64::from(*counted) - books,
            replayed: *replayed,
        }),
        Outcome::Transferred {
            transfer_id,
            from,
            to,
            quantity,
            replayed,
        } => Answer::Transfer(TransferResponse {
            transfer_id: transfer_id.clone(),
            sku: from.sku.as_str().to_owned(),
            from_location: from.location.as_str().to_owned(),
            to_location: to.location.as_str().to_owned(),
            quantity: i64::from(*quantity),
            replayed: *replayed,
        }),
        Outcome::LimitSet { .. }
        | Outcome::ReorderPointSet { .. }
        | Outcome::Reservation { .. }
        | Outcome::Expected { .. }
        | Outcome::NotDue { .. } => unreachable!("answered by `answer`"),
    }
}

/// The answer of a command that set something on an item.
fn setting_answer(o: &Outcome) -> Answer {
    match o {
        Outcome::LimitSet {
            limit_id,
            item,
            max_per_order,
            replayed,
        } => Answer::Limit(LimitResponse {
            limit_id: limit_id.clone(),
            sku: item.sku.as_str().to_owned(),
            location: item.location.as_str().to_owned(),
            max_per_order: *max_per_order,
            replayed: *replayed,
        }),
        Outcome::ReorderPointSet {
            reorder_point_id,
            item,
            reorder_point,
            replayed,
        } => Answer::ReorderPoint(ReorderPointResponse {
            reorder_point_id: reorder_point_id.clone(),
            sku: item.sku.as_str().to_owned(),
            location: item.location.as_str().to_owned(),
            reorder_point: *reorder_point,
            replayed: *replayed,
        }),
        Outcome::Received { .. }
        | Outcome::Adjusted { .. }
        | Outcome::Counted { .. }
        | Outcome::Transferred { .. }
        | Outcome::Reservation { .. }
        | Outcome::Expected { .. }
        | Outcome::NotDue { .. } => unreachable!("answered by `answer`"),
    }
}

/// An expected receipt as a command left it (`replayed` set) or as a read
/// finds it (`replayed` absent).
pub fn expected_receipt(v: &ExpectationView, replayed: Option<bool>) -> ExpectedReceiptResponse {
    ExpectedReceiptResponse {
        expected_id: v.expected_id.to_string(),
        sku: v.sku.to_string(),
        location: v.location.to_string(),
        quantity: v.quantity,
        delivered: v.delivered,
        outstanding: v.outstanding,
        expected_on: v.expected_on,
        state: v.state,
        replayed,
    }
}

/// What can be promised of `item` with `figures`, as `GET
/// /v1/stock/{sku}/promise` answers, as of log position `position`.
pub fn promise(item: &Item, figures: &Balance, p: &Promise, position: i64) -> PromiseResponse {
    PromiseResponse {
        sku: item.sku.to_string(),
        location: item.location.to_string(),
        on_hand: figures.on_hand,
        reserved: figures.reserved,
        available_now: p.available_now,
        incoming: p.incoming,
        dates: p
            .dates
            .iter()
            .map(|d| PromiseDate {
                date: d.date,
                arriving: d.arriving,
                available: d.available,
            })
            .collect(),
        position,
    }
}

/// A reservation with its events, as `GET /v1/reservations/{id}` shows it;
/// `replayed` only on a command's answer. Without `metadata` (a reader's
/// key) every event's metadata is `{}`: the timeline keeps its shape, only
/// who sent what is left out.
pub fn reservation(
    d: &ReservationDetails,
    replayed: Option<bool>,
    metadata: bool,
) -> ReservationResponse {
    let v = &d.view;
    ReservationResponse {
        reservation_id: v.reservation_id.as_str().to_owned(),
        order_id: v.order_id.as_ref().map(|o| o.as_str().to_owned()),
        state: v.state,
        lines: v.lines.iter().map(line).collect(),
        expires_at: v.expires_at,
        created_at: d.created_at,
        updated_at: d.updated_at,
        events: d
            .events
            .iter()
            .map(|e| {
                let mut doc = event_json(e);
                if !metadata {
                    doc["metadata"] = json!({});
                }
                doc
            })
            .collect(),
        replayed,
    }
}

/// An item's figures as `GET /v1/stock/{sku}` shows them, at `moment`.
pub fn stock(item: &Item, b: Balance, moment: bodies::AsOf) -> StockResponse {
    StockResponse {
        sku: item.sku.as_str().to_owned(),
        location: item.location.as_str().to_owned(),
        on_hand: b.on_hand,
        reserved: b.reserved,
        backordered: b.backordered,
        available: b.available(),
        confirmed: b.confirmed,
        as_of: moment,
    }
}

/// The moment of current figures: the last event the read model applied.
pub fn now(position: i64, recorded_at: Option<DateTime<Utc>>) -> bodies::AsOf {
    bodies::AsOf {
        position: Some(position),
        recorded_at,
        clamped: None,
    }
}

/// The moment of past figures: the time or position answered (the one asked
/// for, or where it was moved back to), and the last event counted.
pub fn past(f: &AsOfFigures) -> bodies::AsOf {
    let (position, recorded_at) = match f.answered {
        AsOf::Time(t) => (f.last.map(|(p, _)| p), Some(t)),
        AsOf::Position(p) => (Some(p), f.last.map(|(_, t)| t)),
    };
    bodies::AsOf {
        position,
        recorded_at,
        clamped: Some(f.clamped),
    }
}

/// An order as `GET /v1/orders/{order_id}` shows it, from the `order_view`
/// read model.
pub fn order(row: OrderViewRow) -> OrderResponse {
    OrderResponse {
        order_id: row.order_id,
        reservation_id: row.reservation_id,
        state: row.state,
        lines: row.lines.iter().map(line).collect(),
        expires_at: row.expires_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
        history: row
            .history
            .into_iter()
            .map(|(seq, event_type, position)| HistoryEntry {
                seq,
                event_type,
                position,
            })
            .collect(),
    }
}

/// The same answer from the log, for an order the read model has not
/// reached yet; `None` for a reservation without an expiry (a tombstone has
/// no order, so an order's reservation always has one).
pub fn order_from_log(d: &ReservationDetails) -> Option<OrderResponse> {
    let v = &d.view;
    Some(OrderResponse {
        order_id: v.order_id.as_ref()?.as_str().to_owned(),
        reservation_id: v.reservation_id.as_str().to_owned(),
        state: v.state,
        lines: v.lines.iter().map(line).collect(),
        expires_at: v.expires_at?,
        created_at: d.created_at,
        updated_at: d.updated_at,
        history: d
            .events
            .iter()
            .map(|e| HistoryEntry {
                seq: e.seq,
                event_type: e.event.type_name().to_owned(),
                position: e.position,
            })
            .collect(),
    })
}

/// The items low now, as `GET /v1/low-stock` and `stockledger low-stock
/// --json` show them.
pub fn low_stock(items: &[(Item, LowRow)], truncated: bool) -> LowStockResponse {
    LowStockResponse {
        items: items
            .iter()
            .map(|(item, row)| LowStockItem {
                sku: item.sku.as_str().to_owned(),
                location: item.location.as_str().to_owned(),
                available: row.available,
                reorder_point: row.reorder_point,
                position: row.position,
                since: row.since,
            })
            .collect(),
        truncated,
    }
}

/// Every projection's state, as `GET /v1/projections` and `stockledger
/// projections status --json` show it.
pub fn projections(all: Vec<ProjectionStatus>) -> ProjectionsResponse {
    ProjectionsResponse { projections: all }
}

/// The latest seal, as `GET /v1/digest` shows it.
pub fn digest(d: Digest) -> DigestResponse {
    DigestResponse {
        format: d.format,
        block: d.block,
        last_seq: d.last_seq,
        last_position: d.last_position,
        chain_head: d.chain_head,
        seal: d.seal,
        sealed_at: d.sealed_at,
    }
}

/// A page of the log as `GET /v1/events` shows it.
pub fn events_page(page: &EventPage) -> EventsPage {
    EventsPage {
        events: page.events.iter().map(event_json).collect(),
        next: page.next.to_string(),
    }
}

fn line(l: &LineView) -> ReservationLine {
    ReservationLine {
        sku: l.sku.as_str().to_owned(),
        location: l.location.as_str().to_owned(),
        quantity: l.quantity,
        open: l.open,
        confirmed: l.confirmed,
        released: l.released,
        expired: l.expired,
        waiting: l.waiting,
        dropped: l.dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::event::ReservationCreated;
    use crate::domain::{Item, Location, Sku};

    fn item(location: &str) -> Item {
        Item {
            sku: Sku::parse("sku", "apple").expect("valid"),
            location: Location::parse_or_default("location", Some(location)).expect("valid"),
        }
    }

    /// A count's answer shows the books it saw and the change it appended.
    #[test]
    fn a_count_answers_with_its_change_from_the_books() {
        let o = Outcome::Counted {
            count_id: "c1".into(),
            item: item("north"),
            counted: 7,
            books: 10,
            replayed: false,
        };
        let v = serde_json::to_value(answer(&o)).expect("serialises");
        assert_eq!(
            v,
            json!({"count_id": "c1", "sku": "apple", "location": "north", "counted": 7,
                   "books": 10, "change": -3, "replayed": false})
        );
    }

    /// A transfer's answer names the item once and both locations.
    #[test]
    fn a_transfer_answers_with_both_locations() {
        let o = Outcome::Transferred {
            transfer_id: "t1".into(),
            from: item("north"),
            to: item("south"),
            quantity: 4,
            replayed: true,
        };
        let v = serde_json::to_value(answer(&o)).expect("serialises");
        assert_eq!(
            v,
            json!({"transfer_id": "t1", "sku": "apple", "from_location": "north",
                   "to_location": "south", "quantity": 4, "replayed": true})
        );
    }

    /// An order not projected yet is answered from the log in exactly the
    /// shape the read model's row gives.
    #[test]
    fn an_order_reads_the_same_from_the_log_and_from_the_read_model() {
        use crate::domain::ids::Line;
        use crate::domain::{
            Event, EventMetadata, LineProgress, OrderId, RecordedEvent, ReservationId,
            ReservationState, ReservationView, StreamId,
        };
        use chrono::TimeZone;
        let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let until = Utc.timestamp_opt(1_800_000_900, 0).unwrap();
        let id = ReservationId::parse("id", "r1").unwrap();
        let order_id = OrderId::parse("id", "o1").unwrap();
        let line = Line {
            item: item("north"),
            quantity: 2,
        };
        let view = LineView::new(&line, LineProgress::default());
        let created = RecordedEvent {
            position: 7,
            stream: StreamId::Reservation(id.clone()),
            seq: 1,
            event: Event::ReservationCreated(ReservationCreated {
                order_id: order_id.clone(),
                lines: vec![line],
                expires_at: until,
                ttl_seconds: 900,
                request_hash: "h".into(),
            }),
            version: 2,
            metadata: EventMetadata::default(),
            recorded_at: at,
            tx_id: 3,
        };
        let details = ReservationDetails {
            view: ReservationView {
                reservation_id: id,
                order_id: Some(order_id),
                state: ReservationState::Reserved,
                lines: vec![view.clone()],
                expires_at: Some(until),
            },
            created_at: at,
            updated_at: at,
            events: vec![created],
        };
        let row = OrderViewRow {
            order_id: "o1".into(),
            reservation_id: "r1".into(),
            state: ReservationState::Reserved,
            lines: vec![view],
            expires_at: until,
            created_at: at,
            updated_at: at,
            history: vec![(1, "ReservationCreated".into(), 7)],
        };
        let from_log = serde_json::to_value(order_from_log(&details).expect("an order")).unwrap();
        let from_row = serde_json::to_value(order(row)).unwrap();
        assert_eq!(from_log, from_row);
        assert_eq!(from_log["history"][0]["type"], "ReservationCreated");
    }
}
