//! What the commands on an existing reservation share: finding it, answering
//! a retry, appending its next event, and the checks a partial step makes.
//! Each step is idempotent by the id its caller chose, kept in the
//! reservation's own stream (`Placed::steps`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::input::Line;
use crate::domain::decision::{Decision, LedgerState, NewEvent, Outcome};
use crate::domain::event::{DropReason, Event};
use crate::domain::ids::ReservationId;
use crate::domain::rejection::{Excess, Rejection};
use crate::domain::reservation::{Placed, Reservation, StepKey, StepRequest};
use crate::domain::stream::StreamId;
use crate::limits::MAX_RESERVATION_EVENTS;

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

/// A placed reservation; a tombstone was released before it was made.
fn placed(res: &Reservation) -> Result<&Placed, Rejection> {
    match res {
        Reservation::Tombstone(t) => Err(released(&t.reservation_id)),
        Reservation::Placed(p) => Ok(p),
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

/// Appends the next event of an open reservation; the answer is the
/// reservation with that event folded in.
pub(crate) fn step(p: &Placed, event: Event, command_id: Uuid, now: DateTime<Utc>) -> Decision {
    steps(p, vec![event], command_id, now)
}

/// Appends the next events of an open reservation, in order; the answer is
/// the reservation with them folded in.
pub(crate) fn steps(
    p: &Placed,
    events: Vec<Event>,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Decision {
    let mut current = Reservation::Placed(p.clone());
    let mut appended = Vec::with_capacity(events.len());
    for event in events {
        let seq = current.seq() + 1;
        current = Reservation::fold(
            Some(current),
            &p.reservation_id,
            seq,
            &event,
            command_id,
            now,
        )
        .expect("decide only produces valid transitions");
        appended.push(NewEvent {
            stream: StreamId::Reservation(p.reservation_id.clone()),
            seq,
            event,
            fingerprint: None,
        });
    }
    Decision {
        events: appended,
        outcome: Outcome::Reservation {
            view: (&current).into(),
            replayed: false,
        },
    }
}

/// Settles an open reservation with `settling`, first dropping the units
/// that still wait (for `why`): a settled reservation waits for nothing.
pub(crate) fn settle(
    p: &Placed,
    why: DropReason,
    settling: Event,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Decision {
    let mut events = Vec::with_capacity(2);
    let waiting = p.waiting_lines();
    if !waiting.is_empty() {
        events.push(p.dropped(waiting, why));
    }
    events.push(settling);
    steps(p, events, command_id, now)
}

/// What a step named by its caller's id (`key`, asking for `request`)
/// starts from: the reservation and its placed state when the id is new, or
/// the answer when it is a retry (`retried`). Every check of the state comes
/// after this, so a retry after the reservation moved on still gets its answer.
pub(crate) enum Start<'a> {
    New(&'a Reservation, &'a Placed),
    Answered(Decision),
}

pub(crate) fn start<'a>(
    state: &'a LedgerState,
    reservation_id: &ReservationId,
    key: StepKey,
    request: StepRequest,
    command_id: Uuid,
) -> Result<Start<'a>, Rejection> {
    let res = found(state, reservation_id)?;
    let p = placed(res)?;
    Ok(match retried(res, p, &key, &request, command_id)? {
        Some(done) => Start::Answered(done),
        None => Start::New(res, p),
    })
}

/// The answer to a step whose id was used before: a replay when it asks for
/// the same, `IDEMPOTENCY_CONFLICT` when not. `None` for a new id. This comes
/// before any check of the state, so a retry after the reservation moved on
/// still gets its answer.
fn retried(
    res: &Reservation,
    p: &Placed,
    key: &StepKey,
    request: &StepRequest,
    command_id: Uuid,
) -> Result<Option<Decision>, Rejection> {
    match p.step(key) {
        None => Ok(None),
        Some(taken) if taken.request == *request => Ok(Some(replay(res, taken.seq, command_id))),
        Some(_) => Err(Rejection::IdempotencyConflict {
            stream: StreamId::Reservation(p.reservation_id.clone()).to_string(),
        }),
    }
}

/// Every line must ask for no more than the reservation still holds of its
/// item; the rejection names each line that asks for more.
fn within_open(p: &Placed, lines: &[Line]) -> Result<(), Rejection> {
    let over: Vec<Excess> = lines
        .iter()
        .filter_map(|l| {
            let open = p.open_of(&l.item);
            (l.quantity > open).then(|| Excess {
                sku: l.item.sku.to_string(),
                location: l.item.location.to_string(),
                requested: l.quantity,
                reserved: open,
            })
        })
        .collect();
    if over.is_empty() {
        return Ok(());
    }
    Err(Rejection::ExceedsReserved {
        reservation_id: p.reservation_id.to_string(),
        lines: over,
    })
}

/// A step that takes `lines` of an open reservation: each within what is
/// still open of its item; taking every open unit settles the reservation
/// (`settles`), anything less is a partial event (`part`), which needs a
/// place in the stream that leaves the last one free.
pub(crate) fn take_lines(
    p: &Placed,
    lines: &[Line],
    settles: impl FnOnce() -> Event,
    part: impl FnOnce() -> Event,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    within_open(p, lines)?;
    let event = if takes_all(p, lines) {
        settles()
    } else {
        room_for_a_step(p)?;
        part()
    };
    Ok(step(p, event, command_id, now))
}

/// Whether `lines` (each within what is open of its item, one per item)
/// take every open unit and nothing waits: then the step settles the
/// reservation. Units that wait keep it open.
fn takes_all(p: &Placed, lines: &[Line]) -> bool {
    let units = |lines: &[Line]| lines.iter().map(|l| u64::from(l.quantity)).sum::<u64>();
    p.waiting() == 0 && units(lines) == units(&p.open_lines())
}

/// A partial step or an extension needs a place in the stream that leaves
/// the last one free for the event that settles it, and while units wait,
/// the one before it for their drop.
pub(crate) fn room_for_a_step(p: &Placed) -> Result<(), Rejection> {
    let next = p.step_commands.len() as u32 + 1;
    let kept = if p.waiting() > 0 { 2 } else { 1 };
    if next + kept <= MAX_RESERVATION_EVENTS {
        return Ok(());
    }
    Err(Rejection::StepLimit {
        reservation_id: p.reservation_id.to_string(),
        limit: MAX_RESERVATION_EVENTS,
    })
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

pub(crate) fn already_confirmed(p: &Placed) -> Rejection {
    Rejection::AlreadyConfirmed {
        reservation_id: p.reservation_id.to_string(),
    }
}
