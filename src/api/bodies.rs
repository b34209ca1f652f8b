//! The bodies the API answers with: each struct is both what a handler
//! serialises and what the API description says (its schema derives from
//! it). The CLI prints the same bodies with `--json`, and the Rust client
//! (clients/rust) reads them back with the same structs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::contract;
use crate::domain::ReservationState;

/// An ordered line, and what has become of its units:
/// `open + confirmed + released + expired + waiting + dropped = quantity`
/// (`waiting` and `dropped` are left out while 0).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReservationLine {
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    /// The units reserved.
    #[schema(schema_with = contract::quantity)]
    pub quantity: u32,
    /// Still held.
    #[schema(minimum = 0)]
    pub open: u32,
    /// Confirmed (shipped), by whole or partial confirms.
    #[schema(minimum = 0)]
    pub confirmed: u32,
    /// Released, by whole or partial releases.
    #[schema(minimum = 0)]
    pub released: u32,
    /// Freed when the reservation expired.
    #[schema(minimum = 0)]
    pub expired: u32,
    /// Backordered: waiting for stock that is expected, filled first come,
    /// first served as it arrives. Left out while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schema(minimum = 0)]
    pub waiting: u32,
    /// Waited for stock and were dropped: the reservation was released or
    /// expired, or the stock they waited for will not come. Left out while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schema(minimum = 0)]
    pub dropped: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReceiptResponse {
    #[schema(schema_with = contract::id)]
    pub receipt_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    #[schema(schema_with = contract::quantity)]
    pub quantity: u32,
    /// The expected receipt it was delivered against; absent for a receipt
    /// against none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = contract::id)]
    pub against: Option<String>,
    /// True when an earlier identical request did the work.
    pub replayed: bool,
}

/// An expected receipt: stock of one item due on a date. A command's answer
/// carries `replayed`; a read has none.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ExpectedReceiptResponse {
    #[schema(schema_with = contract::id)]
    pub expected_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    #[schema(schema_with = contract::expected_units)]
    pub quantity: u32,
    /// The units received against it so far (may be more than `quantity`).
    pub delivered: u32,
    /// The units still expected: incoming stock. 0 once cancelled.
    pub outstanding: u32,
    #[schema(schema_with = contract::date)]
    pub expected_on: chrono::NaiveDate,
    pub state: crate::domain::ExpectationState,
    /// True when an earlier identical request did the work. Only in a
    /// command's answer; a read has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = bool, required = false)]
    pub replayed: Option<bool>,
}

/// What can be promised of an item now and by each date stock is due,
/// from the `stock_levels` and `incoming` read models at one position.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PromiseResponse {
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    pub on_hand: i64,
    pub reserved: i64,
    /// On hand less reserved, less what waits for stock (backorders): negative
    /// while more waits than is on the shelf.
    pub available_now: i64,
    /// Every unit still expected, on any date (late ones included).
    pub incoming: i64,
    /// Each date stock is due, earliest first.
    pub dates: Vec<PromiseDate>,
    /// The log position both read models have come to.
    pub position: i64,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PromiseDate {
    #[schema(schema_with = contract::date)]
    pub date: chrono::NaiveDate,
    /// The units due on this date.
    pub arriving: i64,
    /// What can be promised by this date: available now and every unit due
    /// on or before it.
    pub available: i64,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AdjustmentResponse {
    #[schema(schema_with = contract::id)]
    pub adjustment_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    #[schema(schema_with = contract::delta)]
    pub delta: i64,
    #[schema(schema_with = contract::reason)]
    pub reason: String,
    /// True when an earlier identical request did the work.
    pub replayed: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CountResponse {
    #[schema(schema_with = contract::id)]
    pub count_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    #[schema(schema_with = contract::counted)]
    pub counted: i64,
    /// On-hand stock by the books when the count was recorded.
    pub books: i64,
    /// `counted - books`: the change the count appended.
    pub change: i64,
    /// True when an earlier identical request did the work.
    pub replayed: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LimitResponse {
    #[schema(schema_with = contract::id)]
    pub limit_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    /// The limit now in force; `null`: none.
    #[schema(schema_with = contract::max_per_order)]
    pub max_per_order: Option<u32>,
    /// True when an earlier identical request did the work.
    pub replayed: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReorderPointResponse {
    #[schema(schema_with = contract::id)]
    pub reorder_point_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    /// The point now in force; `null`: none.
    #[schema(schema_with = contract::reorder_point)]
    pub reorder_point: Option<u32>,
    /// True when an earlier identical request did the work.
    pub replayed: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TransferResponse {
    #[schema(schema_with = contract::id)]
    pub transfer_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub from_location: String,
    #[schema(schema_with = contract::id)]
    pub to_location: String,
    #[schema(schema_with = contract::quantity)]
    pub quantity: i64,
    /// True when an earlier identical request did the work.
    pub replayed: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Event {
    /// The event's place in the log; unique, growing, with gaps.
    pub position: i64,
    /// `receipt:<id>`, `adjustment:<id>`, `transfer:<id>`, `count:<id>` or `reservation:<id>`.
    pub stream: String,
    /// 1, 2, ... within the stream.
    #[schema(minimum = 1)]
    pub seq: u32,
    #[serde(rename = "type")]
    pub event_type: String,
    /// The version of the type's shape the event was written in: `data` is
    /// as it was written then, and the log never changes. docs/events.md
    /// lists what each version added and how an older one reads as the
    /// current one.
    #[schema(minimum = 1)]
    pub version: u16,
    pub data: serde_json::Map<String, serde_json::Value>,
    /// command_id, correlation_id, causation_id, actor, fingerprint: who sent
    /// the command. Empty (`{}`) in a reservation read with a `reader` key.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub recorded_at: chrono::DateTime<chrono::Utc>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReservationResponse {
    #[schema(schema_with = contract::id)]
    pub reservation_id: String,
    /// Null for a tombstone (released before it was reserved).
    pub order_id: Option<String>,
    pub state: ReservationState,
    pub lines: Vec<ReservationLine>,
    /// Null for a tombstone.
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    // Each event as `store::read::event_json` writes it: the `Event` schema.
    #[schema(value_type = Vec<Event>)]
    pub events: Vec<serde_json::Value>,
    /// Only on command answers: true when an earlier identical request did the work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed: Option<bool>,
}

/// The moment the figures are for.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AsOf {
    /// The last event counted; null before the item's first.
    pub position: Option<i64>,
    pub recorded_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Only with `as_of` or `as_of_position`: true when the moment asked for
    /// was moved back to one the log can no longer change at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clamped: Option<bool>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StockResponse {
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    pub on_hand: i64,
    pub reserved: i64,
    /// Units ordered that wait for stock to arrive (backorders and
    /// pre-orders). Left out while 0.
    #[serde(default, skip_serializing_if = "is_zero_units")]
    #[schema(minimum = 0)]
    pub backordered: i64,
    /// On hand less reserved, less what waits: what a new reservation may
    /// take now. Negative while more waits than is on the shelf.
    pub available: i64,
    pub confirmed: i64,
    pub as_of: AsOf,
}

fn is_zero_units(n: &i64) -> bool {
    *n == 0
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryEntry {
    pub seq: u32,
    #[serde(rename = "type")]
    pub event_type: String,
    pub position: i64,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OrderResponse {
    #[schema(schema_with = contract::id)]
    pub order_id: String,
    #[schema(schema_with = contract::id)]
    pub reservation_id: String,
    pub state: ReservationState,
    pub lines: Vec<ReservationLine>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    pub history: Vec<HistoryEntry>,
}

/// One Server-Sent Event of `GET /v1/events/stream`, as a client's SSE parser
/// hands it over (`: heartbeat` comments are not events).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[allow(dead_code)] // documents the stream's frames; the handler writes them
pub struct StreamedEvent {
    /// The event's cursor: send it back as `Last-Event-ID` to resume after it.
    #[schema(schema_with = contract::cursor)]
    pub id: String,
    /// The SSE event type: always the default, `message`.
    pub event: Option<String>,
    /// The event as JSON, exactly as `GET /v1/events` shows it (the `Event` schema).
    #[schema(schema_with = contract::json_text)]
    pub data: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EventsPage {
    // Each event as `store::read::event_json` writes it: the `Event` schema.
    #[schema(value_type = Vec<Event>)]
    pub events: Vec<serde_json::Value>,
    /// Pass as `after` to read on. You have read all there is when it comes back equal to
    /// `after`. Without `stream` that is exactly when the page is empty; with `stream` a page
    /// looks at no more than 20,000 events of the log (`MAX_EVENTS_SCANNED_PER_FILTERED_READ`),
    /// so it may hold fewer events than `limit`, or none, while `next` moves on.
    #[schema(schema_with = contract::cursor)]
    pub next: String,
}

/// The items low now: available below their reorder point, from the
/// `low_stock` read model (each item's last `StockLow`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LowStockResponse {
    /// By location, then SKU.
    pub items: Vec<LowStockItem>,
    /// True when there were more than the answer lists.
    pub truncated: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LowStockItem {
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::id)]
    pub location: String,
    /// Available units when the item went low, as its `StockLow` said;
    /// `GET /v1/stock/{sku}` has them now.
    pub available: i64,
    /// The point its `StockLow` named. A point changed since that left the
    /// item low writes no new alert, so this may be an older one.
    pub reorder_point: Option<i64>,
    /// The `StockLow` event: its log position and time.
    pub position: i64,
    pub since: chrono::DateTime<chrono::Utc>,
}

// Served only: its rows are the projection runtime's own type.
#[cfg(feature = "server")]
#[derive(Debug, Serialize, ToSchema)]
pub struct ProjectionsResponse {
    /// Per projection: name, state (live, rebuilding), definition_current, live and rebuild
    /// checkpoints with lag_events and lag_seconds.
    #[schema(value_type = Vec<Object>)]
    pub projections: Vec<crate::projection::status::ProjectionStatus>,
}

/// Where the log ends now: follow it from here with
/// `GET /v1/events/stream?after=CURSOR` to see only what comes next.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EventsHead {
    #[schema(schema_with = contract::cursor)]
    pub cursor: String,
}

/// Who a key is: what the console shows and hides by.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MeResponse {
    /// The key's name (the actor of the commands it sends).
    pub name: String,
    /// `writer`, `reader`, `auditor` or `admin`.
    pub role: String,
}

/// The held reservations that expire soonest, soonest first, from the
/// `reservation_expiry` read model.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ExpiringReservationsResponse {
    pub reservations: Vec<ExpiringReservation>,
    /// True when more are held than the answer lists (at most 100).
    pub truncated: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ExpiringReservation {
    #[schema(schema_with = contract::id)]
    pub reservation_id: String,
    #[schema(schema_with = contract::id)]
    pub order_id: String,
    /// Past for a reservation the expiry worker has not come to yet.
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// Each event relay's standing, from its checkpoint.
// Served only: its rows are the relay's own type.
#[cfg(feature = "server")]
#[derive(Debug, Serialize, ToSchema)]
pub struct RelaysResponse {
    /// Per relay: stream, cursor, last_msg_id, published, lag_events,
    /// lag_capped, updated_at.
    #[schema(value_type = Vec<Object>)]
    pub relays: Vec<crate::relay::RelayStatus>,
}

/// The latest seal (`stockledger digest --json` prints the same).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DigestResponse {
    /// `stockledger-digest/v1`.
    pub format: String,
    /// The block sealed last (from 1).
    #[schema(minimum = 1)]
    pub block: i64,
    /// The chain row and log position it ends at.
    #[schema(minimum = 1)]
    pub last_seq: i64,
    #[schema(minimum = 1)]
    pub last_position: i64,
    /// The chain hash at `last_seq`, 64 lower-case hex digits.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub chain_head: String,
    /// The block's seal hash, 64 lower-case hex digits.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub seal: String,
    pub sealed_at: chrono::DateTime<chrono::Utc>,
}

/// `/healthz` when all is well.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Status {
    /// `ok` (alive) or `ready`.
    pub status: String,
}

/// `/readyz` when the database answered the last readiness check.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Readiness {
    /// `ready`.
    pub status: String,
    /// Each worker this server runs (`readiness`, `projections`, `sealer`,
    /// `expiry`, `relay`), and its state: `running`, `restarting` (it
    /// panicked and waits out its back-off) or `stopped`.
    pub workers: std::collections::BTreeMap<String, WorkerStateName>,
}

/// A worker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkerStateName {
    Running,
    /// It panicked and waits out its back-off before it starts again.
    Restarting,
    /// It ended: at shutdown, or on a failure it reported itself (the relay
    /// stops on one that waiting cannot mend).
    Stopped,
}

impl WorkerStateName {
    /// As the body writes it (its serde name), for the metrics' labels.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerStateName::Running => "running",
            WorkerStateName::Restarting => "restarting",
            WorkerStateName::Stopped => "stopped",
        }
    }
}
