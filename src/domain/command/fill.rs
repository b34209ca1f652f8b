//! Fill a backorder: sent by the backorder worker, never by callers. The
//! units of a reservation that wait for stock are filled from stock on hand
//! in their turn (first come, first served), and the ones nothing expected
//! can cover any more are dropped as unfillable (`backorder::plan`).
//! Anything else is left alone and answered "nothing to do", so a late or
//! repeated fill is harmless.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::step::steps;
use super::{Rule, Touches};
use crate::domain::backorder::plan;
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::{DropReason, Event};
use crate::domain::ids::ReservationId;
use crate::domain::reservation::{Placed, Reservation, ReservationState};
use crate::domain::{Command, Rejection};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fill {
    pub reservation_id: ReservationId,
}

/// Fills (or drops) what a reservation's waiting units come to now.
pub fn fill(reservation_id: &str) -> Result<Command, Rejection> {
    Ok(Command::Fill(Fill {
        reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
    }))
}

impl Rule for Fill {
    const KIND: &'static str = "fill";

    fn touches(&self) -> Touches {
        Touches::held_by(&self.reservation_id)
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let res = state.reservations.get(&self.reservation_id);
        let nothing = || {
            Decision::answer(Outcome::NotDue {
                reservation_id: self.reservation_id.clone(),
                state: res.map(Reservation::state),
            })
        };
        // A due reservation is the expiry's to settle.
        let p = match res {
            Some(r @ Reservation::Placed(p))
                if p.state == ReservationState::Reserved && !r.is_due(now) =>
            {
                p
            }
            Some(Reservation::Placed(_) | Reservation::Tombstone(_)) | None => return Ok(nothing()),
        };
        let events = fitting(p, state, command_id, now);
        if events.is_empty() {
            return Ok(nothing());
        }
        Ok(steps(p, events, command_id, now))
    }
}

/// The fill and the drop the plan asks for, each only if the stream has
/// room for it: while units still wait after an event, the two last places
/// stay free (for their drop and the settlement). A fill left out waits for
/// a later pass, its units keeping their turn.
///
/// At the edge of the stream (only those two places left) nothing that
/// leaves units waiting fits: an order with units that cannot come then
/// has all its waiting units dropped as unfillable at once, since it has
/// no room left to wait for part of them. An order a drop leaves with
/// nothing held and nothing waiting is over: it is released (reason
/// `unfillable`) in the same command, so it does not stay open with
/// nothing in it.
fn fitting(p: &Placed, state: &LedgerState, command_id: Uuid, now: DateTime<Utc>) -> Vec<Event> {
    let plan = plan(state, p);
    let filled = |lines| p.filled(lines);
    let dropped = |lines| p.dropped(lines, DropReason::Unfillable);
    let planned = [
        (!plan.fill.is_empty()).then(|| filled(plan.fill.clone())),
        (!plan.drop.is_empty()).then(|| dropped(plan.drop.clone())),
    ];
    let (mut current, mut events) = append_fitting(p, planned, command_id, now);
    if events.is_empty() && !plan.drop.is_empty() {
        let all = [Some(dropped(p.waiting_lines())), None];
        (current, events) = append_fitting(p, all, command_id, now);
    }
    let emptied = current
        .placed()
        .is_some_and(|q| q.waiting() == 0 && q.open_lines().is_empty() && !events.is_empty());
    if emptied {
        let reason = DropReason::Unfillable.as_str().to_owned();
        events.push(p.released(Vec::new(), reason, None));
    }
    events
}

/// The `candidates` that fit, in order, each folded onto the one before;
/// and the reservation as they leave it.
fn append_fitting(
    p: &Placed,
    candidates: [Option<Event>; 2],
    command_id: Uuid,
    now: DateTime<Utc>,
) -> (Reservation, Vec<Event>) {
    let mut current = Reservation::Placed(p.clone());
    let mut events = Vec::new();
    for event in candidates.into_iter().flatten() {
        let seq = current.seq() + 1;
        let next = Reservation::fold(
            Some(current.clone()),
            &p.reservation_id,
            seq,
            &event,
            command_id,
            now,
        );
        if let Ok(next) = next {
            current = next;
            events.push(event);
        }
    }
    (current, events)
}
