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
use serde_json::{json, Value};
use uuid::Uuid;

use crate::domain::command::{reservation_stream, Command, Line, Reserve};
use crate::domain::event::{Balance, Event, TOMBSTONE_REASON};
use crate::domain::ids::{Item, OrderId, ReservationId};
use crate::domain::rejection::{Rejection, Shortfall};
use crate::domain::reservation::{Reservation, ReservationState};

/// A receipt or an adjustment: a stream with exactly one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SingleRecord {
    pub fingerprint: String,
    pub command_id: Uuid,
    pub event: Event,
}

/// What the decision needs to know. The store loads every stream, order and
/// item a batch names (an absent key means "does not exist"), locks them, and
/// hands this over.
#[derive(Clone, Debug, Default)]
pub struct LedgerState {
    pub reservations: HashMap<ReservationId, Reservation>,
    /// Receipt and adjustment streams, by stream name.
    pub singles: HashMap<String, SingleRecord>,
    pub balances: BTreeMap<Item, Balance>,
    /// Which reservation holds each order.
    pub order_owners: HashMap<OrderId, ReservationId>,
}

impl LedgerState {
    pub fn balance(&self, item: &Item) -> Balance {
        self.balances.get(item).copied().unwrap_or_default()
    }
}

/// Where a new event goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamRef {
    Reservation(ReservationId),
    /// A receipt or adjustment stream, by name.
    Single(String),
}

impl StreamRef {
    pub fn name(&self) -> String {
        match self {
            StreamRef::Reservation(id) => reservation_stream(id),
            StreamRef::Single(name) => name.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEvent {
    pub stream: StreamRef,
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
    pub lines: Vec<Line>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl From<&Reservation> for ReservationView {
    fn from(r: &Reservation) -> Self {
        ReservationView {
            reservation_id: r.reservation_id.clone(),
            order_id: r.order_id.clone(),
            state: r.state,
            lines: r.lines.clone(),
            expires_at: r.expires_at,
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
            | Outcome::Reservation { replayed, .. } => *replayed,
            Outcome::NotDue { .. } => false,
        }
    }

    /// The JSON document the CLI prints and the API returns.
    pub fn to_json(&self) -> Value {
        match self {
            Outcome::Received {
                receipt_id,
                item,
                quantity,
                replayed,
            } => json!({"receipt_id": receipt_id, "sku": item.sku, "location": item.location,
                        "quantity": quantity, "replayed": replayed}),
            Outcome::Adjusted {
                adjustment_id,
                item,
                delta,
                reason,
                replayed,
            } => json!({"adjustment_id": adjustment_id, "sku": item.sku, "location": item.location,
                        "delta": delta, "reason": reason, "replayed": replayed}),
            Outcome::Reservation { view, replayed } => {
                let mut v = serde_json::to_value(view).expect("views serialise");
                v["replayed"] = json!(replayed);
                v
            }
            Outcome::NotDue {
                reservation_id,
                state,
            } => json!({"reservation_id": reservation_id, "state": state, "expired": false}),
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
        Command::Receive(r) => {
            let stream = cmd.stream();
            let outcome = |replayed| Outcome::Received {
                receipt_id: r.receipt_id.to_string(),
                item: r.item.clone(),
                quantity: r.quantity,
                replayed,
            };
            if let Some(done) = replay_single(state, &stream, &r.fingerprint, command_id)? {
                return Ok(Decision::answer(outcome(done)));
            }
            Ok(Decision {
                events: vec![NewEvent {
                    stream: StreamRef::Single(stream),
                    seq: 1,
                    event: Event::StockReceived {
                        sku: r.item.sku.clone(),
                        location: r.item.location.clone(),
                        quantity: r.quantity,
                    },
                    fingerprint: Some(r.fingerprint.clone()),
                }],
                outcome: outcome(false),
            })
        }
        Command::Adjust(a) => {
            let stream = cmd.stream();
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
            Ok(Decision {
                events: vec![NewEvent {
                    stream: StreamRef::Single(stream),
                    seq: 1,
                    event: Event::StockAdjusted {
                        sku: a.item.sku.clone(),
                        location: a.item.location.clone(),
                        delta: a.delta,
                        reason: a.reason.clone(),
                    },
                    fingerprint: Some(a.fingerprint.clone()),
                }],
                outcome: outcome(false),
            })
        }
        Command::Reserve(r) => decide_reserve(state, r, command_id, now),
        Command::Confirm { reservation_id } => {
            let not_found = || Rejection::ReservationNotFound {
                reservation_id: reservation_id.to_string(),
            };
            let res = state
                .reservations
                .get(reservation_id)
                .ok_or_else(not_found)?;
            match res.state {
                ReservationState::Released => Err(released(reservation_id)),
                ReservationState::Confirmed => Ok(replay(res, 2, command_id)),
                ReservationState::Expired => Err(expired(res)),
                ReservationState::Reserved if res.is_due(now) => Err(expired(res)),
                ReservationState::Reserved => Ok(step(
                    res,
                    Event::ReservationConfirmed {
                        order_id: res.order_id.clone().expect("only tombstones lack an order"),
                        lines: res.lines.clone(),
                    },
                    ReservationState::Confirmed,
                )),
            }
        }
        Command::Release {
            reservation_id,
            reason,
        } => {
            let Some(res) = state.reservations.get(reservation_id) else {
                // The cancel overtook its reserve: leave a tombstone so the late
                // reserve is refused instead of holding stock for a dead order.
                let view = ReservationView {
                    reservation_id: reservation_id.clone(),
                    order_id: None,
                    state: ReservationState::Released,
                    lines: Vec::new(),
                    expires_at: None,
                };
                return Ok(Decision {
                    events: vec![NewEvent {
                        stream: StreamRef::Reservation(reservation_id.clone()),
                        seq: 1,
                        event: Event::ReservationReleased {
                            order_id: None,
                            lines: Vec::new(),
                            reason: TOMBSTONE_REASON.to_owned(),
                        },
                        fingerprint: None,
                    }],
                    outcome: Outcome::Reservation {
                        view,
                        replayed: false,
                    },
                });
            };
            match res.state {
                ReservationState::Released | ReservationState::Expired => {
                    Ok(replay(res, res.seq(), command_id))
                }
                ReservationState::Confirmed => Err(Rejection::AlreadyConfirmed {
                    reservation_id: reservation_id.to_string(),
                }),
                ReservationState::Reserved => Ok(step(
                    res,
                    Event::ReservationReleased {
                        order_id: res.order_id.clone(),
                        lines: res.lines.clone(),
                        reason: reason.clone(),
                    },
                    ReservationState::Released,
                )),
            }
        }
        Command::Expire { reservation_id } => match state.reservations.get(reservation_id) {
            Some(res) if res.is_due(now) => Ok(step(
                res,
                Event::ReservationExpired {
                    order_id: res.order_id.clone().expect("only tombstones lack an order"),
                    lines: res.lines.clone(),
                },
                ReservationState::Expired,
            )),
            other => Ok(Decision::answer(Outcome::NotDue {
                reservation_id: reservation_id.clone(),
                state: other.map(|r| r.state),
            })),
        },
    }
}

fn decide_reserve(
    state: &LedgerState,
    r: &Reserve,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    if let Some(res) = state.reservations.get(&r.reservation_id) {
        // This very command wrote seq 1: it is re-run because its COMMIT reply
        // was lost. Its caller gets what that commit did (a reservation made,
        // not a replay), whatever happened to the stream since.
        if !res.is_tombstone() && res.step_commands.first() == Some(&command_id) {
            let mut view = ReservationView::from(res);
            view.state = ReservationState::Reserved;
            return Ok(Decision::answer(Outcome::Reservation {
                view,
                replayed: false,
            }));
        }
        if res.is_tombstone() {
            return Err(released(&r.reservation_id));
        }
        // Reusing an id for another request is the caller's bug and is named
        // as such even when the first request was since released.
        if res.request_hash.as_deref() != Some(r.fingerprint.as_str()) {
            return Err(Rejection::IdempotencyConflict {
                stream: reservation_stream(&r.reservation_id),
            });
        }
        if res.state == ReservationState::Released {
            return Err(released(&r.reservation_id));
        }
        return Ok(replay(res, 1, command_id));
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
    Ok(Decision {
        events: vec![NewEvent {
            stream: StreamRef::Reservation(r.reservation_id.clone()),
            seq: 1,
            event: Event::ReservationCreated {
                order_id: r.order_id.clone(),
                lines: r.lines.clone(),
                expires_at,
                request_hash: r.fingerprint.clone(),
            },
            fingerprint: Some(r.fingerprint.clone()),
        }],
        outcome: Outcome::Reservation {
            view: ReservationView {
                reservation_id: r.reservation_id.clone(),
                order_id: Some(r.order_id.clone()),
                state: ReservationState::Reserved,
                lines: r.lines.clone(),
                expires_at: Some(expires_at),
            },
            replayed: false,
        },
    })
}

/// `Some(replayed)` when the single-event stream already holds this request,
/// `None` when it does not exist yet.
fn replay_single(
    state: &LedgerState,
    stream: &str,
    fingerprint: &str,
    command_id: Uuid,
) -> Result<Option<bool>, Rejection> {
    match state.singles.get(stream) {
        None => Ok(None),
        Some(rec) if rec.fingerprint == fingerprint => Ok(Some(rec.command_id != command_id)),
        Some(_) => Err(Rejection::IdempotencyConflict {
            stream: stream.to_owned(),
        }),
    }
}

/// Answers with the reservation as it is. It is a replay unless the event at
/// `seq` was written by this very command (a re-run after a lost commit ack).
fn replay(res: &Reservation, seq: u32, command_id: Uuid) -> Decision {
    let own = res.step_commands.get(seq as usize - 1) == Some(&command_id);
    Decision::answer(Outcome::Reservation {
        view: res.into(),
        replayed: !own,
    })
}

/// Appends the seq-2 event that moves an open reservation to `next`.
fn step(res: &Reservation, event: Event, next: ReservationState) -> Decision {
    let mut view = ReservationView::from(res);
    view.state = next;
    Decision {
        events: vec![NewEvent {
            stream: StreamRef::Reservation(res.reservation_id.clone()),
            seq: res.seq() + 1,
            event,
            fingerprint: None,
        }],
        outcome: Outcome::Reservation {
            view,
            replayed: false,
        },
    }
}

fn released(id: &ReservationId) -> Rejection {
    Rejection::ReservationReleased {
        reservation_id: id.to_string(),
    }
}

fn expired(res: &Reservation) -> Rejection {
    Rejection::ReservationExpired {
        reservation_id: res.reservation_id.to_string(),
        expires_at: res.expires_at.expect("only tombstones lack an expiry"),
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
            StreamRef::Reservation(id) => {
                let current = state.reservations.remove(id);
                let next = Reservation::fold(current, id, e.seq, &e.event, command_id, now)
                    .expect("decide only produces valid transitions");
                if let (1, Some(order)) = (e.seq, &next.order_id) {
                    state.order_owners.insert(order.clone(), id.clone());
                }
                state.reservations.insert(id.clone(), next);
            }
            StreamRef::Single(name) => {
                let fingerprint = e
                    .fingerprint
                    .clone()
                    .expect("single streams carry a fingerprint");
                state.singles.insert(
                    name.clone(),
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
