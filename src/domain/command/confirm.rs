//! Confirm: the order is paid; everything the reservation still holds leaves
//! stock. Confirming again is a replay; a released or expired reservation
//! cannot be confirmed.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::input::Line;
use super::step::{expired, found, released, replay, steps};
use super::{Rule, Touches};
use crate::domain::backorder::plan;
use crate::domain::decision::{Decision, LedgerState};
use crate::domain::ids::ReservationId;
use crate::domain::reservation::{Placed, Reservation, ReservationState};
use crate::domain::{Command, Rejection};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confirm {
    pub reservation_id: ReservationId,
}

/// Confirms the whole of a reservation.
pub fn confirm(reservation_id: &str) -> Result<Command, Rejection> {
    Ok(Command::Confirm(Confirm {
        reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
    }))
}

impl Rule for Confirm {
    const KIND: &'static str = "confirm";

    fn touches(&self) -> Touches {
        Touches::held_by(&self.reservation_id)
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let res = found(state, &self.reservation_id)?;
        let p = match res {
            Reservation::Tombstone(t) => return Err(released(&t.reservation_id)),
            Reservation::Placed(p) => p,
        };
        match p.state {
            ReservationState::Released => Err(released(&p.reservation_id)),
            ReservationState::Confirmed => Ok(replay(res, res.seq(), command_id)),
            ReservationState::Expired => Err(expired(p)),
            ReservationState::Reserved if res.is_due(now) => Err(expired(p)),
            ReservationState::Reserved => confirm_all(state, p, command_id, now),
        }
    }
}

/// Confirms everything: what is held, and what waits if stock on hand can
/// fill it now (filled first, in its turn). Units that must still wait
/// cannot be confirmed: they are not here to ship.
fn confirm_all(
    state: &LedgerState,
    p: &Placed,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    let filled: u64 = match p.waiting() {
        0 => 0,
        _ => plan(state, p)
            .fill
            .iter()
            .map(|l| u64::from(l.quantity))
            .sum(),
    };
    let waiting = p.waiting() - filled;
    if waiting > 0 {
        return Err(Rejection::BackorderWaiting {
            reservation_id: p.reservation_id.to_string(),
            waiting,
        });
    }
    let mut events = Vec::with_capacity(2);
    let mut open = p.open_lines();
    if filled > 0 {
        let lines = p.waiting_lines();
        open = merge_open(open, &lines);
        events.push(p.filled(lines));
    }
    events.push(p.confirmed(open, None));
    Ok(steps(p, events, command_id, now))
}

/// The lines held once `filled` (units that waited) are held too, sorted.
fn merge_open(mut open: Vec<Line>, filled: &[Line]) -> Vec<Line> {
    for f in filled {
        match open.binary_search_by(|l| l.item.cmp(&f.item)) {
            Ok(i) => open[i].quantity += f.quantity,
            Err(i) => open.insert(i, f.clone()),
        }
    }
    open
}
