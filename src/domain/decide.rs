//! The decision: given what the log says now, what does a command do?
//!
//! `decide` is a plain function: no I/O, no clock (the database's clock is
//! passed in as `now`), no randomness. It returns the events to append and the
//! answer for the caller, or a named rejection. `apply` folds accepted events
//! into the state, so a batch of commands can be decided one after another
//! against the same in-memory state, exactly as if they had been sent one by one.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::domain::command::{Adjust, Command, Count, Line, Receive, Reserve, Transfer};
use crate::domain::event::{Balance, Event, TOMBSTONE_REASON};
use crate::domain::ids::{Item, Location, OrderId, ReservationId, Sku};
use crate::domain::rejection::{Rejection, Shortfall};
use crate::domain::reservation::{LineProgress, Placed, Reservation, ReservationState};
use crate::domain::steps::{decide_confirm_lines, decide_extend, decide_release_lines};
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
    /// Which reservation holds each order.
    pub order_owners: HashMap<OrderId, ReservationId>,
}

impl LedgerState {
    pub fn balance(&self, item: &Item) -> Balance {
        self.balances.get(item).copied().unwrap_or_default()
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

/// One reserved line as callers see it: the units reserved, and what has
/// become of them. `open + confirmed + released + expired = quantity`.
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
}

impl LineView {
    pub fn new(line: &Line, p: LineProgress) -> LineView {
        LineView {
            sku: line.item.sku.clone(),
            location: line.item.location.clone(),
            quantity: line.quantity,
            open: line.quantity - p.confirmed - p.released - p.expired,
            confirmed: p.confirmed,
            released: p.released,
            expired: p.expired,
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
    fn answer(outcome: Outcome) -> Self {
        Decision {
            events: Vec::new(),
            outcome,
        }
    }
}

/// Decides `cmd` against `state` at database time `now`. `command_id` lets a
/// command that is re-run after a lost commit acknowledgement recognise its
/// own earlier event and answer `replayed: false`, as the first run would have.
pub fn decide(
    state: &LedgerState,
    cmd: &Command,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    match cmd {
        Command::Receive(r) => decide_receive(state, r, command_id),
        Command::Adjust(a) => decide_adjust(state, a, command_id),
        Command::Transfer(t) => decide_transfer(state, t, command_id),
        Command::Count(c) => decide_count(state, c, command_id),
        Command::Reserve(r) => decide_reserve(state, r, command_id, now),
        Command::Confirm { reservation_id } => {
            decide_confirm(found(state, reservation_id)?, command_id, now)
        }
        Command::Release {
            reservation_id,
            reason,
        } => match state.reservations.get(reservation_id) {
            None => Ok(tombstone(reservation_id)),
            Some(res) => decide_release(res, reason, command_id, now),
        },
        Command::Expire { reservation_id } => Ok(decide_expire(
            reservation_id,
            state.reservations.get(reservation_id),
            command_id,
            now,
        )),
        Command::ConfirmLines(c) => {
            decide_confirm_lines(found(state, &c.reservation_id)?, c, command_id, now)
        }
        Command::ReleaseLines(r) => {
            decide_release_lines(found(state, &r.reservation_id)?, r, command_id, now)
        }
        Command::Extend(x) => decide_extend(found(state, &x.reservation_id)?, x, command_id, now),
    }
}

/// The reservation a command names, or `RESERVATION_NOT_FOUND`.
pub(crate) fn found<'a>(
    state: &'a LedgerState,
    id: &ReservationId,
) -> Result<&'a Reservation, Rejection> {
    state
        .reservations
        .get(id)
        .ok_or_else(|| Rejection::ReservationNotFound {
            reservation_id: id.to_string(),
        })
}

fn decide_receive(
    state: &LedgerState,
    r: &Receive,
    command_id: Uuid,
) -> Result<Decision, Rejection> {
    let stream = StreamId::Receipt(r.receipt_id.clone());
    let outcome = |replayed| Outcome::Received {
        receipt_id: r.receipt_id.to_string(),
        item: r.item.clone(),
        quantity: r.quantity,
        replayed,
    };
    if let Some(done) = replay_single(state, &stream, &r.fingerprint, command_id)? {
        return Ok(Decision::answer(outcome(done)));
    }
    let event = Event::StockReceived {
        sku: r.item.sku.clone(),
        location: r.item.location.clone(),
        quantity: r.quantity,
    };
    Ok(Decision {
        events: vec![first_event(stream, event, &r.fingerprint)],
        outcome: outcome(false),
    })
}

fn decide_adjust(state: &LedgerState, a: &Adjust, command_id: Uuid) -> Result<Decision, Rejection> {
    let stream = StreamId::Adjustment(a.adjustment_id.clone());
    let outcome = |replayed| Outcome::Adjusted {
        adjustment_id: a.adjustment_id.to_string(),
        item: a.item.clone(),
        delta: a.delta,
        reason: a.reason.clone(),
        replayed,
    };
    if let Some(done) = replay_single(state, &stream, &a.fingerprint, command_id)? {
        return Ok(Decision::answer(outcome(done)));
    }
    let balance = state.balance(&a.item);
    if balance.on_hand + i64::from(a.delta) < balance.reserved {
        return Err(Rejection::InsufficientStock {
            shortfalls: vec![Shortfall {
                sku: a.item.sku.to_string(),
                location: a.item.location.to_string(),
                requested: -i64::from(a.delta),
                available: balance.available(),
            }],
        });
    }
    let event = Event::StockAdjusted {
        sku: a.item.sku.clone(),
        location: a.item.location.clone(),
        delta: a.delta,
        reason: a.reason.clone(),
    };
    Ok(Decision {
        events: vec![first_event(stream, event, &a.fingerprint)],
        outcome: outcome(false),
    })
}

/// A count records what the shelf holds: the change from the books is its
/// effect. Like an adjustment it may not leave less on hand than open
/// reservations hold (docs/domain.md); a replay answers with the books'
/// figure the first count saw.
fn decide_count(state: &LedgerState, c: &Count, command_id: Uuid) -> Result<Decision, Rejection> {
    let stream = StreamId::Count(c.count_id.clone());
    let outcome = |books, replayed| Outcome::Counted {
        count_id: c.count_id.to_string(),
        item: c.item.clone(),
        counted: c.counted,
        books,
        replayed,
    };
    if let Some(done) = replay_single(state, &stream, &c.fingerprint, command_id)? {
        let books = match state.singles.get(&stream).map(|r| &r.event) {
            Some(Event::StockCounted { books, .. }) => *books,
            _ => state.balance(&c.item).on_hand,
        };
        return Ok(Decision::answer(outcome(books, done)));
    }
    let balance = state.balance(&c.item);
    if i64::from(c.counted) < balance.reserved {
        return Err(Rejection::InsufficientStock {
            shortfalls: vec![Shortfall {
                sku: c.item.sku.to_string(),
                location: c.item.location.to_string(),
                requested: balance.on_hand - i64::from(c.counted),
                available: balance.available(),
            }],
        });
    }
    let event = Event::StockCounted {
        sku: c.item.sku.clone(),
        location: c.item.location.clone(),
        counted: c.counted,
        books: balance.on_hand,
    };
    Ok(Decision {
        events: vec![first_event(stream, event, &c.fingerprint)],
        outcome: outcome(balance.on_hand, false),
    })
}

/// A transfer moves available stock only: what open reservations hold at
/// the source stays there. Nothing is in transit (docs/domain.md).
fn decide_transfer(
    state: &LedgerState,
    t: &Transfer,
    command_id: Uuid,
) -> Result<Decision, Rejection> {
    let stream = StreamId::Transfer(t.transfer_id.clone());
    let outcome = |replayed| Outcome::Transferred {
        transfer_id: t.transfer_id.to_string(),
        from: t.from.clone(),
        to: t.to.clone(),
        quantity: t.quantity,
        replayed,
    };
    if let Some(done) = replay_single(state, &stream, &t.fingerprint, command_id)? {
        return Ok(Decision::answer(outcome(done)));
    }
    let available = state.balance(&t.from).available();
    if available < i64::from(t.quantity) {
        return Err(Rejection::InsufficientStock {
            shortfalls: vec![Shortfall {
                sku: t.from.sku.to_string(),
                location: t.from.location.to_string(),
                requested: i64::from(t.quantity),
                available,
            }],
        });
    }
    let event = Event::StockTransferred {
        sku: t.from.sku.clone(),
        from_location: t.from.location.clone(),
        to_location: t.to.location.clone(),
        quantity: t.quantity,
    };
    Ok(Decision {
        events: vec![first_event(stream, event, &t.fingerprint)],
        outcome: outcome(false),
    })
}

/// The seq-1 event of a new stream, carrying its request's fingerprint.
fn first_event(stream: StreamId, event: Event, fingerprint: &str) -> NewEvent {
    NewEvent {
        stream,
        seq: 1,
        event,
        fingerprint: Some(fingerprint.to_owned()),
    }
}

fn decide_confirm(
    res: &Reservation,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    let p = match res {
        Reservation::Tombstone(t) => return Err(released(&t.reservation_id)),
        Reservation::Placed(p) => p,
    };
    match p.state {
        ReservationState::Released => Err(released(&p.reservation_id)),
        ReservationState::Confirmed => Ok(replay(res, res.seq(), command_id)),
        ReservationState::Expired => Err(expired(p)),
        ReservationState::Reserved if res.is_due(now) => Err(expired(p)),
        ReservationState::Reserved => Ok(step(
            p,
            Event::ReservationConfirmed {
                order_id: p.order_id.clone(),
                lines: p.open_lines(),
                confirmation_id: None,
            },
            command_id,
            now,
        )),
    }
}

/// The cancel overtook its reserve: leave a tombstone so the late reserve is
/// refused instead of holding stock for a dead order.
fn tombstone(reservation_id: &ReservationId) -> Decision {
    Decision {
        events: vec![NewEvent {
            stream: StreamId::Reservation(reservation_id.clone()),
            seq: 1,
            event: Event::ReservationReleased {
                order_id: None,
                lines: Vec::new(),
                reason: TOMBSTONE_REASON.to_owned(),
                release_id: None,
            },
            fingerprint: None,
        }],
        outcome: Outcome::Reservation {
            view: ReservationView {
                reservation_id: reservation_id.clone(),
                order_id: None,
                state: ReservationState::Released,
                lines: Vec::new(),
                expires_at: None,
            },
            replayed: false,
        },
    }
}

fn decide_release(
    res: &Reservation,
    reason: &str,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    let p = match res {
        Reservation::Tombstone(_) => return Ok(replay(res, 1, command_id)),
        Reservation::Placed(p) => p,
    };
    match p.state {
        ReservationState::Released | ReservationState::Expired => {
            Ok(replay(res, res.seq(), command_id))
        }
        ReservationState::Confirmed => Err(Rejection::AlreadyConfirmed {
            reservation_id: p.reservation_id.to_string(),
        }),
        ReservationState::Reserved => Ok(step(
            p,
            Event::ReservationReleased {
                order_id: Some(p.order_id.clone()),
                lines: p.open_lines(),
                reason: reason.to_owned(),
                release_id: None,
            },
            command_id,
            now,
        )),
    }
}

fn decide_expire(
    reservation_id: &ReservationId,
    res: Option<&Reservation>,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Decision {
    match res {
        Some(r @ Reservation::Placed(p)) if r.is_due(now) => step(
            p,
            Event::ReservationExpired {
                order_id: p.order_id.clone(),
                lines: p.open_lines(),
            },
            command_id,
            now,
        ),
        Some(Reservation::Placed(_) | Reservation::Tombstone(_)) | None => {
            Decision::answer(Outcome::NotDue {
                reservation_id: reservation_id.clone(),
                state: res.map(Reservation::state),
            })
        }
    }
}

fn decide_reserve(
    state: &LedgerState,
    r: &Reserve,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    if let Some(res) = state.reservations.get(&r.reservation_id) {
        return reserve_again(res, r, command_id);
    }
    if let Some(owner) = state.order_owners.get(&r.order_id) {
        return Err(Rejection::OrderAlreadyReserved {
            order_id: r.order_id.to_string(),
            reservation_id: owner.to_string(),
        });
    }
    let shortfalls: Vec<Shortfall> = r
        .lines
        .iter()
        .filter_map(|l| {
            let available = state.balance(&l.item).available();
            (available < i64::from(l.quantity)).then(|| Shortfall {
                sku: l.item.sku.to_string(),
                location: l.item.location.to_string(),
                requested: i64::from(l.quantity),
                available,
            })
        })
        .collect();
    if !shortfalls.is_empty() {
        return Err(Rejection::InsufficientStock { shortfalls });
    }
    let expires_at = now + Duration::seconds(i64::from(r.ttl_seconds));
    let event = Event::ReservationCreated {
        order_id: r.order_id.clone(),
        lines: r.lines.clone(),
        expires_at,
        request_hash: r.fingerprint.clone(),
    };
    Ok(Decision {
        events: vec![first_event(
            StreamId::Reservation(r.reservation_id.clone()),
            event,
            &r.fingerprint,
        )],
        outcome: Outcome::Reservation {
            view: ReservationView {
                reservation_id: r.reservation_id.clone(),
                order_id: Some(r.order_id.clone()),
                state: ReservationState::Reserved,
                lines: r
                    .lines
                    .iter()
                    .map(|l| LineView::new(l, LineProgress::default()))
                    .collect(),
                expires_at: Some(expires_at),
            },
            replayed: false,
        },
    })
}

/// A reserve for a reservation id that already has a stream.
fn reserve_again(res: &Reservation, r: &Reserve, command_id: Uuid) -> Result<Decision, Rejection> {
    let p = match res {
        Reservation::Tombstone(_) => return Err(released(&r.reservation_id)),
        Reservation::Placed(p) => p,
    };
    // This very command wrote seq 1: it is re-run because its COMMIT reply
    // was lost. Its caller gets what that commit did (a reservation made,
    // not a replay), whatever happened to the stream since.
    if res.command_at(1) == Some(command_id) {
        return Ok(Decision::answer(Outcome::Reservation {
            view: as_reserved(p),
            replayed: false,
        }));
    }
    // Reusing an id for another request is the caller's bug and is named
    // as such even when the first request was since released.
    if p.request_hash != r.fingerprint {
        return Err(Rejection::IdempotencyConflict {
            stream: StreamId::Reservation(r.reservation_id.clone()).to_string(),
        });
    }
    if p.state == ReservationState::Released {
        return Err(released(&r.reservation_id));
    }
    Ok(replay(res, 1, command_id))
}

/// `Some(replayed)` when the single-event stream already holds this request,
/// `None` when it does not exist yet.
fn replay_single(
    state: &LedgerState,
    stream: &StreamId,
    fingerprint: &str,
    command_id: Uuid,
) -> Result<Option<bool>, Rejection> {
    match state.singles.get(stream) {
        None => Ok(None),
        Some(rec) if rec.fingerprint == fingerprint => Ok(Some(rec.command_id != command_id)),
        Some(_) => Err(Rejection::IdempotencyConflict {
            stream: stream.to_string(),
        }),
    }
}

/// Answers with the reservation as it is. It is a replay unless the event at
/// `seq` was written by this very command (a re-run after a lost commit ack).
pub(crate) fn replay(res: &Reservation, seq: u32, command_id: Uuid) -> Decision {
    let own = res.command_at(seq) == Some(command_id);
    Decision::answer(Outcome::Reservation {
        view: res.into(),
        replayed: !own,
    })
}

/// The reservation as its reserve made it: every line open, the first expiry.
fn as_reserved(p: &Placed) -> ReservationView {
    ReservationView {
        reservation_id: p.reservation_id.clone(),
        order_id: Some(p.order_id.clone()),
        state: ReservationState::Reserved,
        lines: p
            .lines
            .iter()
            .map(|l| LineView::new(l, LineProgress::default()))
            .collect(),
        expires_at: Some(p.first_expires_at),
    }
}

/// Appends the next event of an open reservation; the answer is the
/// reservation with that event folded in.
pub(crate) fn step(p: &Placed, event: Event, command_id: Uuid, now: DateTime<Utc>) -> Decision {
    let seq = p.step_commands.len() as u32 + 1;
    let next = Reservation::fold(
        Some(Reservation::Placed(p.clone())),
        &p.reservation_id,
        seq,
        &event,
        command_id,
        now,
    )
    .expect("decide only produces valid transitions");
    Decision {
        events: vec![NewEvent {
            stream: StreamId::Reservation(p.reservation_id.clone()),
            seq,
            event,
            fingerprint: None,
        }],
        outcome: Outcome::Reservation {
            view: (&next).into(),
            replayed: false,
        },
    }
}

pub(crate) fn released(id: &ReservationId) -> Rejection {
    Rejection::ReservationReleased {
        reservation_id: id.to_string(),
    }
}

pub(crate) fn expired(p: &Placed) -> Rejection {
    Rejection::ReservationExpired {
        reservation_id: p.reservation_id.to_string(),
        expires_at: p.expires_at,
    }
}

/// Folds an accepted decision into the state, as the store will once it commits.
pub fn apply(state: &mut LedgerState, decision: &Decision, command_id: Uuid, now: DateTime<Utc>) {
    for e in &decision.events {
        for (item, delta) in e.event.stock_effects() {
            let balance = state.balances.entry(item).or_default();
            balance.apply(delta);
            assert!(
                balance.is_valid(),
                "decide produced an invalid balance: {balance:?}"
            );
        }
        match &e.stream {
            StreamId::Reservation(id) => {
                let current = state.reservations.remove(id);
                let next = Reservation::fold(current, id, e.seq, &e.event, command_id, now)
                    .expect("decide only produces valid transitions");
                if let (1, Some(order)) = (e.seq, next.order_id()) {
                    state.order_owners.insert(order.clone(), id.clone());
                }
                state.reservations.insert(id.clone(), next);
            }
            StreamId::Receipt(_)
            | StreamId::Adjustment(_)
            | StreamId::Transfer(_)
            | StreamId::Count(_) => {
                let fingerprint = e
                    .fingerprint
                    .clone()
                    .expect("single streams carry a fingerprint");
                state.singles.insert(
                    e.stream.clone(),
                    SingleRecord {
                        fingerprint,
                        command_id,
                        event: e.event.clone(),
                    },
                );
            }
        }
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
