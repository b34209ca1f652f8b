//! Reserve: hold stock for an order, every line or none. One reservation per
//! order; the reservation's stream starts with it.

use crate::domain::event::{BackorderPlaced, ReservationCreated};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::{date, merge_lines, ttl, Line, LineRequest};
use super::single::first_event;
use super::step::{released, replay};
use super::{Items, Rule, Touches};
use crate::domain::decision::{
    Decision, LedgerState, LineView, NewEvent, Outcome, ReservationView,
};
use crate::domain::event::Event;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{OrderId, ReservationId};
use crate::domain::rejection::{OverLimit, Shortfall};
use crate::domain::reservation::{LineProgress, Placed, Reservation, ReservationState};
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};
use crate::limits::{DEFAULT_TTL_SECONDS, MAX_WAITING_PER_ITEM};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReserveRequest {
    /// Chosen by the caller, one per order, and sent again on every retry.
    pub reservation_id: String,
    pub order_id: String,
    pub lines: Vec<LineRequest>,
    #[serde(default, deserialize_with = "number::optional_whole")]
    pub ttl_seconds: Option<i64>,
    /// Let what is not on hand wait for stock that is expected (a
    /// backorder, or a pre-order when nothing is on hand).
    #[serde(default)]
    pub backorder: bool,
    /// With `backorder`: the latest date stock may be expected by to count
    /// (`YYYY-MM-DD`); every expected unit counts without it.
    #[serde(default)]
    pub latest_arrival: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reserve {
    pub reservation_id: ReservationId,
    pub order_id: OrderId,
    /// Merged per item and sorted by (location, sku).
    pub lines: Vec<Line>,
    pub ttl_seconds: u32,
    /// Whether units not on hand may wait, and for stock expected by when.
    pub backorder: Option<Backorder>,
    pub fingerprint: String,
}

/// A reserve's consent to wait: for stock expected by `latest_arrival`,
/// or by any date.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backorder {
    pub latest_arrival: Option<NaiveDate>,
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
        // The date is checked whenever it is sent, and read only with
        // `backorder` (the API description says so): without it nothing
        // waits, so no date can matter.
        let latest_arrival = match &self.latest_arrival {
            None => None,
            Some(text) => Some(date("latest_arrival", text)?),
        };
        let backorder = self.backorder.then_some(Backorder { latest_arrival });
        let fingerprint = Reserve::fingerprint_of(&order_id, &lines, backorder.as_ref());
        Ok(Command::Reserve(Reserve {
            reservation_id,
            order_id,
            lines,
            ttl_seconds,
            backorder,
            fingerprint,
        }))
    }
}

impl Reserve {
    /// The order and its (normalised) lines make a reservation what it is,
    /// and its consent to wait, when it gives one (so a reserve without it
    /// keeps the fingerprint it had before backorders existed). The time to
    /// live is left out: a retry keeps the original expiry.
    pub fn fingerprint_of(order_id: &OrderId, lines: &[Line], wait: Option<&Backorder>) -> String {
        let mut c = Canonical::new("reserve/v1");
        c.field(order_id.as_str().as_bytes());
        c.field(&(lines.len() as u32).to_be_bytes());
        for line in lines {
            c.item(&line.item).field(&line.quantity.to_be_bytes());
        }
        if let Some(b) = wait {
            c.field(b"backorder");
            let by = b.latest_arrival.map(|d| d.to_string()).unwrap_or_default();
            c.field(by.as_bytes());
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
        let (held, waiting) = self.split(state)?;
        let expires_at = now + Duration::seconds(i64::from(self.ttl_seconds));
        let stream = StreamId::Reservation(self.reservation_id.clone());
        let mut events = vec![first_event(
            stream.clone(),
            Event::ReservationCreated(ReservationCreated {
                order_id: self.order_id.clone(),
                lines: held,
                expires_at,
                ttl_seconds: self.ttl_seconds,
                request_hash: self.fingerprint.clone(),
            }),
            &self.fingerprint,
        )];
        if !waiting.is_empty() {
            events.push(NewEvent {
                stream,
                seq: 2,
                event: Event::BackorderPlaced(BackorderPlaced {
                    order_id: self.order_id.clone(),
                    lines: waiting,
                    latest_arrival: self.backorder.as_ref().and_then(|b| b.latest_arrival),
                }),
                fingerprint: None,
            });
        }
        let mut made = None;
        for e in &events {
            let next =
                Reservation::fold(made, &self.reservation_id, e.seq, &e.event, command_id, now)
                    .expect("a reserve writes a valid start");
            made = Some(next);
        }
        let made = made.expect("a reserve writes its first event");
        Ok(Decision {
            events,
            outcome: Outcome::Reservation {
                view: (&made).into(),
                replayed: false,
            },
        })
    }
}

impl Reserve {
    /// Each line split into what is held now and what waits for stock
    /// (only with `backorder`), or the lines that cannot be had: more than
    /// is available, or with `backorder`, more than can be promised by the
    /// latest arrival (available now plus what is expected by then).
    fn split(&self, state: &LedgerState) -> Result<(Vec<Line>, Vec<Line>), Rejection> {
        let mut shortfalls = Vec::new();
        let (mut held, mut waiting) = (Vec::new(), Vec::new());
        for l in &self.lines {
            let balance = state.balance(&l.item);
            let backlog = state.backlog(&l.item);
            let can = match &self.backorder {
                None => balance.available(),
                Some(b) => balance.available() + backlog.incoming_by(b.latest_arrival),
            };
            let wanted = i64::from(l.quantity);
            if can < wanted {
                shortfalls.push(Shortfall {
                    sku: l.item.sku.to_string(),
                    location: l.item.location.to_string(),
                    requested: wanted,
                    available: can,
                });
                continue;
            }
            let now = balance.available().clamp(0, wanted) as u32;
            let part = |quantity| Line {
                item: l.item.clone(),
                quantity,
            };
            if now > 0 {
                held.push(part(now));
            }
            if now < l.quantity {
                if backlog.queue.len() >= MAX_WAITING_PER_ITEM {
                    return Err(Rejection::BacklogFull {
                        sku: l.item.sku.to_string(),
                        location: l.item.location.to_string(),
                        what: "waiting orders",
                        limit: MAX_WAITING_PER_ITEM,
                    });
                }
                waiting.push(part(l.quantity - now));
            }
        }
        if !shortfalls.is_empty() {
            return Err(Rejection::InsufficientStock { shortfalls });
        }
        Ok((held, waiting))
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

/// The reservation as its reserve made it: every line open but what was
/// placed to wait, the first expiry.
fn as_reserved(p: &Placed) -> ReservationView {
    let waited = |l: &Line| {
        p.backordered
            .iter()
            .find(|w| w.item == l.item)
            .map_or(0, |w| w.quantity)
    };
    ReservationView {
        reservation_id: p.reservation_id.clone(),
        order_id: Some(p.order_id.clone()),
        state: ReservationState::Reserved,
        lines: p
            .lines
            .iter()
            .map(|l| {
                let waiting = LineProgress {
                    waiting: waited(l),
                    ..Default::default()
                };
                LineView::new(l, waiting)
            })
            .collect(),
        expires_at: Some(p.first_expires_at),
    }
}
