//! Reserve: hold stock for an order, every line or none. One reservation per
//! order; the reservation's stream starts with it.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::{merge_lines, ttl, Line, LineRequest};
use super::single::first_event;
use super::step::{released, replay};
use super::{Items, Rule, Touches};
use crate::domain::decide::{Decision, LedgerState, LineView, Outcome, ReservationView};
use crate::domain::event::Event;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{OrderId, ReservationId};
use crate::domain::rejection::{OverLimit, Shortfall};
use crate::domain::reservation::{LineProgress, Placed, Reservation, ReservationState};
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};
use crate::limits::DEFAULT_TTL_SECONDS;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReserveRequest {
    /// Chosen by the caller, one per order, and sent again on every retry.
    pub reservation_id: String,
    pub order_id: String,
    pub lines: Vec<LineRequest>,
    #[serde(default, deserialize_with = "number::optional_whole")]
    pub ttl_seconds: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reserve {
    pub reservation_id: ReservationId,
    pub order_id: OrderId,
    /// Merged per item and sorted by (location, sku).
    pub lines: Vec<Line>,
    pub ttl_seconds: u32,
    pub fingerprint: String,
}

impl ReserveRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let reservation_id = ReservationId::parse("reservation_id", &self.reservation_id)?;
        let order_id = OrderId::parse("order_id", &self.order_id)?;
        let lines = merge_lines(&self.lines)?;
        let ttl_seconds = match self.ttl_seconds {
            None => DEFAULT_TTL_SECONDS,
            Some(t) => ttl("ttl_seconds", t)?,
        };
        let fingerprint = Reserve::fingerprint_of(&order_id, &lines);
        Ok(Command::Reserve(Reserve {
            reservation_id,
            order_id,
            lines,
            ttl_seconds,
            fingerprint,
        }))
    }
}

impl Reserve {
    /// The order and its (normalised) lines make a reservation what it is.
    /// The time to live is left out: a retry keeps the original expiry.
    pub fn fingerprint_of(order_id: &OrderId, lines: &[Line]) -> String {
        let mut c = Canonical::new("reserve/v1");
        c.field(order_id.as_str().as_bytes());
        c.field(&(lines.len() as u32).to_be_bytes());
        for line in lines {
            c.item(&line.item).field(&line.quantity.to_be_bytes());
        }
        c.finish()
    }
}

impl Rule for Reserve {
    const KIND: &'static str = "reserve";

    /// A reserve of an item that was never received is refused, so it never
    /// creates a balance row.
    fn touches(&self) -> Touches {
        Touches {
            stream: StreamId::Reservation(self.reservation_id.clone()),
            order: Some(self.order_id.clone()),
            items: Items::Named(self.lines.iter().map(|l| l.item.clone()).collect()),
            may_create: Vec::new(),
            also: None,
        }
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        if let Some(res) = state.reservations.get(&self.reservation_id) {
            return reserve_again(res, self, command_id);
        }
        if let Some(owner) = state.order_owners.get(&self.order_id) {
            return Err(Rejection::OrderAlreadyReserved {
                order_id: self.order_id.to_string(),
                reservation_id: owner.to_string(),
            });
        }
        // The limit first: a line over it is refused whatever the stock,
        // so a caller is told the rule, not to wait for a delivery.
        let over: Vec<OverLimit> = self
            .lines
            .iter()
            .filter_map(|l| {
                let max = state.settings(&l.item).max_per_order?;
                (l.quantity > max).then(|| OverLimit {
                    sku: l.item.sku.to_string(),
                    location: l.item.location.to_string(),
                    requested: l.quantity,
                    max_per_order: max,
                })
            })
            .collect();
        if !over.is_empty() {
            return Err(Rejection::OrderLimitExceeded { lines: over });
        }
        let shortfalls: Vec<Shortfall> = self
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
        let expires_at = now + Duration::seconds(i64::from(self.ttl_seconds));
        let event = Event::ReservationCreated {
            order_id: self.order_id.clone(),
            lines: self.lines.clone(),
            expires_at,
            request_hash: self.fingerprint.clone(),
        };
        Ok(Decision {
            events: vec![first_event(
                StreamId::Reservation(self.reservation_id.clone()),
                event,
                &self.fingerprint,
            )],
            outcome: Outcome::Reservation {
                view: ReservationView {
                    reservation_id: self.reservation_id.clone(),
                    order_id: Some(self.order_id.clone()),
                    state: ReservationState::Reserved,
                    lines: self
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
