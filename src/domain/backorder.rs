//! Backorders and pre-orders: units an order reserves that are not on hand
//! yet, waiting for stock that is expected. The rules, with no I/O:
//!
//! - A reserve that opts in (`backorder`) holds what is available and lets
//!   the rest of each line wait, as long as the whole line is within what
//!   can be promised by the latest arrival date the caller accepts (all
//!   that is expected if it names none): available now plus what is
//!   expected by then. Available already counts what earlier backorders
//!   wait for, so nothing expected is promised twice.
//! - Waiting units are served first come, first served: each item keeps its
//!   queue of waiting reservations in placing order (its `Backlog`, on the
//!   item's balance row). Stock on hand that nothing holds goes to the
//!   head of the queue first; a reserve never takes it while anyone waits
//!   (available subtracts what waits).
//! - When the stock still expected can no longer cover the queue (an
//!   expected receipt was cut, cancelled or delivered short), the units
//!   placed last are unfillable and are dropped, by name.
//!
//! `plan` says what to write for one reservation now; `due` says which
//! reservations of an item have something to write, for the backorder
//! worker that writes it.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use crate::domain::event::{Balance, Event};
use crate::domain::ids::Line;
use crate::domain::ids::{ExpectedId, Item, ReservationId};
use crate::domain::rejection::Rejection;
use crate::domain::reservation::Placed;
use crate::domain::stream::StreamId;
use crate::limits::MAX_EXPECTED_PER_ITEM;

/// What waits for one item, and what is expected of it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backlog {
    /// The reservations with waiting units of the item, in the order they
    /// were placed, each with its units still waiting.
    #[serde(default)]
    pub queue: Vec<Waiting>,
    /// What each open expected receipt of the item still brings, and when.
    #[serde(default)]
    pub incoming: BTreeMap<ExpectedId, Due>,
}

/// One reservation's place in an item's queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    pub reservation_id: ReservationId,
    pub units: u32,
}

/// What one expected receipt still brings, and by when.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Due {
    pub on: NaiveDate,
    pub units: u32,
}

impl Backlog {
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty() && self.incoming.is_empty()
    }

    /// Every unit still expected, on any date.
    pub fn incoming_units(&self) -> i64 {
        self.incoming.values().map(|d| i64::from(d.units)).sum()
    }

    /// The units expected on or before `date` (all of them for `None`).
    /// A date in the past counts: the stock is late, not gone.
    pub fn incoming_by(&self, date: Option<NaiveDate>) -> i64 {
        self.incoming
            .values()
            .filter(|d| date.is_none_or(|by| d.on <= by))
            .map(|d| i64::from(d.units))
            .sum()
    }

    /// The units that wait ahead of `id` in the queue (all that wait if it
    /// has no place in it).
    pub fn ahead_of(&self, id: &ReservationId) -> i64 {
        self.queue
            .iter()
            .take_while(|w| w.reservation_id != *id)
            .map(|w| i64::from(w.units))
            .sum()
    }

    /// Takes `units` off `id`'s place; a place with nothing left is gone.
    fn unwait(&mut self, id: &ReservationId, units: u32) {
        if let Some(i) = self.queue.iter().position(|w| w.reservation_id == *id) {
            let w = &mut self.queue[i];
            w.units = w.units.saturating_sub(units);
            if w.units == 0 {
                self.queue.remove(i);
            }
        }
    }

    /// Sets what `id` still brings (nothing: it leaves the list).
    fn expect(&mut self, id: &ExpectedId, on: NaiveDate, units: u32) {
        match units {
            0 => self.incoming.remove(id),
            _ => self.incoming.insert(id.clone(), Due { on, units }),
        };
    }
}

/// Whether `item` may have `id` among its open expected receipts: it is
/// already, or there is room for one more (`MAX_EXPECTED_PER_ITEM`).
pub fn room_to_expect(state: &impl Figures, item: &Item, id: &ExpectedId) -> Result<(), Rejection> {
    let backlog = state.backlog(item);
    if backlog.incoming.len() < MAX_EXPECTED_PER_ITEM || backlog.incoming.contains_key(id) {
        return Ok(());
    }
    Err(Rejection::BacklogFull {
        sku: item.sku.to_string(),
        location: item.location.to_string(),
        what: "open expected receipts",
        limit: MAX_EXPECTED_PER_ITEM,
    })
}

/// What one waiting line comes to now: the units stock on hand fills, and
/// the units nothing expected can cover. Placing order decides both: the
/// head of the queue is filled first, the tail is dropped first.
pub fn outlook(balance: Balance, backlog: &Backlog, ahead: i64, waiting: u32) -> (u32, u32) {
    let clamp = |n: i64, max: u32| n.clamp(0, i64::from(max)) as u32;
    let fill = clamp(balance.unheld() - ahead, waiting);
    let supply = balance.unheld() + backlog.incoming_units();
    let drop = clamp(ahead + i64::from(waiting) - supply, waiting - fill);
    (fill, drop)
}

/// What the ledger writes for a reservation's waiting units now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Units that stock on hand fills (the fill's event).
    pub fill: Vec<Line>,
    /// Units that nothing expected can cover (dropped, unfillable).
    pub drop: Vec<Line>,
}

/// What to write for `p`'s waiting units against the state's items.
pub fn plan(state: &impl Figures, p: &Placed) -> Plan {
    let mut plan = Plan::default();
    for line in p.waiting_lines() {
        let backlog = state.backlog(&line.item);
        let ahead = backlog.ahead_of(&p.reservation_id);
        let balance = state.balance(&line.item);
        let (fill, drop) = outlook(balance, &backlog, ahead, line.quantity);
        let part = |quantity| Line {
            item: line.item.clone(),
            quantity,
        };
        if fill > 0 {
            plan.fill.push(part(fill));
        }
        if drop > 0 {
            plan.drop.push(part(drop));
        }
    }
    plan
}

/// The reservations waiting for an item with `balance` and `backlog` that
/// have something to fill or drop now, in placing order.
pub fn due(balance: Balance, backlog: &Backlog) -> Vec<ReservationId> {
    let mut ahead = 0;
    let mut out = Vec::new();
    for w in &backlog.queue {
        if outlook(balance, backlog, ahead, w.units) != (0, 0) {
            out.push(w.reservation_id.clone());
        }
        ahead += i64::from(w.units);
    }
    out
}

/// What the rules of first come, first served read of the ledger's state:
/// an item's figures and its backlog (`decision::LedgerState` holds them).
pub trait Figures {
    fn balance(&self, item: &Item) -> Balance;
    fn backlog(&self, item: &Item) -> Backlog;
}

/// Folds one event into the backlogs of the items it names: a backorder
/// joins the queue of each item it waits for and leaves it as it is
/// filled or dropped; an expected receipt's events say what it still
/// brings. The command path, the store's item rows and the audit keep the
/// backlogs with this one fold.
pub fn apply(backlogs: &mut BTreeMap<Item, Backlog>, stream: &StreamId, event: &Event) {
    match stream {
        // Read from the event's effects, not its name: units placed to
        // wait join their item's queue; units filled or dropped leave it.
        StreamId::Reservation(id) => event.for_each_effect(|item, d| {
            let units = u32::try_from(d.backordered.unsigned_abs())
                .expect("a line's units are a u32, and so is its effect");
            match d.backordered.signum() {
                1 => backlogs
                    .entry(item.clone())
                    .or_default()
                    .queue
                    .push(Waiting {
                        reservation_id: id.clone(),
                        units,
                    }),
                -1 => backlogs.entry(item.clone()).or_default().unwait(id, units),
                _ => {}
            }
        }),
        StreamId::Expected(id) => expected(backlogs, id, event),
        // Nothing else waits for stock or brings it later.
        StreamId::Receipt(_)
        | StreamId::Adjustment(_)
        | StreamId::Transfer(_)
        | StreamId::Count(_)
        | StreamId::Limit(_)
        | StreamId::ReorderPoint(_)
        | StreamId::Alert(_) => {}
    }
}

/// An expected receipt's event: what it still brings, as the event states
/// it (`expectation::stated`).
fn expected(backlogs: &mut BTreeMap<Item, Backlog>, id: &ExpectedId, event: &Event) {
    let Some((sku, location, on, units)) = crate::domain::expectation::stated(event) else {
        return;
    };
    let item = Item {
        sku: sku.clone(),
        location: location.clone(),
    };
    backlogs.entry(item).or_default().expect(id, on, units);
}

#[cfg(test)]
#[path = "backorder_tests.rs"]
mod tests;
