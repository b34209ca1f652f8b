//! What a decision works on and gives: the ledger's state as a batch's
//! commands see it (`LedgerState`), the events to append (`NewEvent`) and the
//! answer (`Outcome`). Types only, below the commands and the rules that
//! take and give them; `decide.rs` decides.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::domain::backorder::{Backlog, Figures};
use crate::domain::event::{Balance, Event};
use crate::domain::expectation::{Expectation, ExpectationView, ExpectationViolation};
use crate::domain::ids::{ExpectedId, Item, Line, Location, OrderId, ReservationId, Sku};
use crate::domain::reservation::{LineProgress, Reservation, ReservationState};
use crate::domain::settings::ItemSettings;
use crate::domain::stream::StreamId;

/// A receipt or an adjustment: a stream with exactly one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SingleRecord {
    pub fingerprint: String,
    pub command_id: Uuid,
    pub event: Event,
}

/// What the decision needs to know. The store loads every stream, order and
/// item a batch touches (`Command::touches`; an absent key means "does not
/// exist"), locks them, and hands this over.
#[derive(Clone, Debug, Default)]
pub struct LedgerState {
    pub reservations: HashMap<ReservationId, Reservation>,
    /// Receipt and adjustment streams.
    pub singles: HashMap<StreamId, SingleRecord>,
    pub balances: BTreeMap<Item, Balance>,
    /// The settings of the items whose balance rows are loaded; an item
    /// without an entry has none set.
    pub settings: BTreeMap<Item, ItemSettings>,
    /// Which reservation holds each order.
    pub order_owners: HashMap<OrderId, ReservationId>,
    /// The expected receipts the batch touches, folded.
    pub expectations: HashMap<ExpectedId, Expectation>,
    /// What waits for each item whose balance row is loaded, and what is
    /// expected of it; an item without an entry has neither.
    pub backlogs: BTreeMap<Item, Backlog>,
    /// Streams the batch touches whose events all left the database with an
    /// archived partition (the store's directory, `archived_streams`): none
    /// of them takes a step (`Rejection::Archived`).
    pub archived: HashMap<StreamId, ArchivedStream>,
}

/// Where an archived stream ended: its last step and that event's position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchivedStream {
    pub last_seq: u32,
    pub position: i64,
}

impl Figures for LedgerState {
    fn balance(&self, item: &Item) -> Balance {
        LedgerState::balance(self, item)
    }

    fn backlog(&self, item: &Item) -> Backlog {
        LedgerState::backlog(self, item)
    }
}

impl LedgerState {
    pub fn balance(&self, item: &Item) -> Balance {
        self.balances.get(item).copied().unwrap_or_default()
    }

    pub fn settings(&self, item: &Item) -> ItemSettings {
        self.settings.get(item).copied().unwrap_or_default()
    }

    pub fn backlog(&self, item: &Item) -> Backlog {
        self.backlogs.get(item).cloned().unwrap_or_default()
    }

    /// Folds one event of the expected receipt `id`'s stream into the
    /// state: as the store loads the stream, and as a decision appends to it.
    pub fn fold_expected(
        &mut self,
        id: &ExpectedId,
        seq: u32,
        event: &Event,
        command_id: Uuid,
        fingerprint: Option<&str>,
    ) -> Result<(), ExpectationViolation> {
        let current = self.expectations.remove(id);
        let next = Expectation::fold(current, id, seq, event, command_id, fingerprint)?;
        self.expectations.insert(id.clone(), next);
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEvent {
    pub stream: StreamId,
    pub seq: u32,
    pub event: Event,
    /// The request fingerprint, recorded in the metadata of seq-1 events.
    pub fingerprint: Option<String>,
}

/// The reservation as callers see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReservationView {
    pub reservation_id: ReservationId,
    pub order_id: Option<OrderId>,
    pub state: ReservationState,
    pub lines: Vec<LineView>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// One ordered line as callers see it: the units ordered, and what has
/// become of them. `open + confirmed + released + expired + waiting +
/// dropped = quantity`; the last two are left out while 0 (a line that
/// never waited for stock reads as before backorders existed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LineView {
    pub sku: Sku,
    pub location: Location,
    pub quantity: u32,
    /// Still held.
    pub open: u32,
    pub confirmed: u32,
    pub released: u32,
    pub expired: u32,
    /// Backordered: waiting for stock to arrive.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waiting: u32,
    /// Waited for stock and were dropped (the order was released or
    /// expired, or the stock will not come).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl LineView {
    pub fn new(line: &Line, p: LineProgress) -> LineView {
        LineView {
            sku: line.item.sku.clone(),
            location: line.item.location.clone(),
            quantity: line.quantity,
            open: p.open(line.quantity),
            confirmed: p.confirmed,
            released: p.released,
            expired: p.expired,
            waiting: p.waiting,
            dropped: p.dropped,
        }
    }
}

impl From<&Reservation> for ReservationView {
    fn from(r: &Reservation) -> Self {
        let lines = match r.placed() {
            None => Vec::new(),
            Some(p) => p
                .lines
                .iter()
                .zip(&p.progress)
                .map(|(l, g)| LineView::new(l, *g))
                .collect(),
        };
        ReservationView {
            reservation_id: r.reservation_id().clone(),
            order_id: r.order_id().cloned(),
            state: r.state(),
            lines,
            expires_at: r.expires_at(),
        }
    }
}

/// A successful answer. `replayed` is true when the command changed nothing
/// because an earlier, identical command (not this one) already did the work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Received {
        receipt_id: String,
        item: Item,
        quantity: u32,
        /// The expected receipt it was delivered against.
        against: Option<String>,
        replayed: bool,
    },
    Adjusted {
        adjustment_id: String,
        item: Item,
        delta: i32,
        reason: String,
        replayed: bool,
    },
    Counted {
        count_id: String,
        item: Item,
        counted: u32,
        /// On-hand stock by the books when the count was recorded.
        books: i64,
        replayed: bool,
    },
    Transferred {
        transfer_id: String,
        from: Item,
        to: Item,
        quantity: u32,
        replayed: bool,
    },
    LimitSet {
        limit_id: String,
        item: Item,
        max_per_order: Option<u32>,
        replayed: bool,
    },
    ReorderPointSet {
        reorder_point_id: String,
        item: Item,
        reorder_point: Option<u32>,
        replayed: bool,
    },
    /// An expected receipt, as a record, change or cancellation left it.
    Expected {
        view: ExpectationView,
        replayed: bool,
    },
    Reservation {
        view: ReservationView,
        replayed: bool,
    },
    /// An expiry found the reservation not due (or not open): nothing to do.
    NotDue {
        reservation_id: ReservationId,
        state: Option<ReservationState>,
    },
}

impl Outcome {
    pub fn replayed(&self) -> bool {
        match self {
            Outcome::Received { replayed, .. }
            | Outcome::Adjusted { replayed, .. }
            | Outcome::Transferred { replayed, .. }
            | Outcome::Counted { replayed, .. }
            | Outcome::LimitSet { replayed, .. }
            | Outcome::ReorderPointSet { replayed, .. }
            | Outcome::Expected { replayed, .. }
            | Outcome::Reservation { replayed, .. } => *replayed,
            Outcome::NotDue { .. } => false,
        }
    }
}

/// What a command does: events to append (possibly none) and the answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub events: Vec<NewEvent>,
    pub outcome: Outcome,
}

impl Decision {
    /// An answer that appends nothing.
    pub(crate) fn answer(outcome: Outcome) -> Self {
        Decision {
            events: Vec::new(),
            outcome,
        }
    }
}
