//! The steps an open reservation can take before it is settled: confirm part
//! of it (a shipment), release part of it (a line taken off the order), and
//! extend its hold. Each is idempotent by the id its caller chose, kept in
//! the reservation's own stream (`Placed::steps`).

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use crate::domain::command::{ConfirmLines, Extend, Line, ReleaseLines};
use crate::domain::decide::{expired, released, replay, step, Decision};
use crate::domain::event::Event;
use crate::domain::rejection::{Excess, Rejection};
use crate::domain::reservation::{Placed, Reservation, ReservationState, StepKey, StepRequest};
use crate::domain::stream::StreamId;
use crate::limits::{MAX_RESERVATION_EVENTS, MAX_TTL_SECONDS};

/// Confirms some units of an open reservation. The lines must be open and
/// the reservation not due; taking everything open settles it (CONFIRMED).
pub(crate) fn decide_confirm_lines(
    res: &Reservation,
    c: &ConfirmLines,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    let p = placed(res)?;
    let key = StepKey::Confirmation(c.confirmation_id.clone());
    if let Some(done) = retried(
        res,
        p,
        &key,
        &StepRequest::Lines(c.lines.clone()),
        command_id,
    )? {
        return Ok(done);
    }
    match p.state {
        ReservationState::Released => return Err(released(&p.reservation_id)),
        ReservationState::Expired => return Err(expired(p)),
        ReservationState::Reserved if res.is_due(now) => return Err(expired(p)),
        // Settled by confirming: nothing is open, so every line is over.
        ReservationState::Confirmed | ReservationState::Reserved => {}
    }
    within_open(p, &c.lines)?;
    let event = if takes_all(p, &c.lines) {
        Event::ReservationConfirmed {
            order_id: p.order_id.clone(),
            lines: p.open_lines(),
            confirmation_id: Some(c.confirmation_id.clone()),
        }
    } else {
        room_for_a_step(p)?;
        Event::ReservationLinesConfirmed {
            order_id: p.order_id.clone(),
            confirmation_id: c.confirmation_id.clone(),
            lines: c.lines.clone(),
        }
    };
    Ok(step(p, event, command_id, now))
}

/// Releases some units of an open reservation (also once it is due: that
/// frees what the expiry would). Taking everything open settles it (RELEASED).
pub(crate) fn decide_release_lines(
    res: &Reservation,
    r: &ReleaseLines,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    let p = placed(res)?;
    let key = StepKey::Release(r.release_id.clone());
    if let Some(done) = retried(
        res,
        p,
        &key,
        &StepRequest::Lines(r.lines.clone()),
        command_id,
    )? {
        return Ok(done);
    }
    match p.state {
        ReservationState::Released => return Err(released(&p.reservation_id)),
        ReservationState::Expired => return Err(expired(p)),
        ReservationState::Confirmed => return Err(already_confirmed(p)),
        ReservationState::Reserved => {}
    }
    within_open(p, &r.lines)?;
    let event = if takes_all(p, &r.lines) {
        Event::ReservationReleased {
            order_id: Some(p.order_id.clone()),
            lines: p.open_lines(),
            reason: r.reason.clone(),
            release_id: Some(r.release_id.clone()),
        }
    } else {
        room_for_a_step(p)?;
        Event::ReservationLinesReleased {
            order_id: p.order_id.clone(),
            release_id: r.release_id.clone(),
            lines: r.lines.clone(),
            reason: r.reason.clone(),
        }
    };
    Ok(step(p, event, command_id, now))
}

/// Moves the expiry of an open reservation that is not yet due to
/// `ttl_seconds` from now: later than it was, and no later than the longest
/// time to live after the reserve.
pub(crate) fn decide_extend(
    res: &Reservation,
    x: &Extend,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    let p = placed(res)?;
    let key = StepKey::Extension(x.extension_id.clone());
    if let Some(done) = retried(res, p, &key, &StepRequest::Ttl(x.ttl_seconds), command_id)? {
        return Ok(done);
    }
    match p.state {
        ReservationState::Released => return Err(released(&p.reservation_id)),
        ReservationState::Confirmed => return Err(already_confirmed(p)),
        ReservationState::Expired => return Err(expired(p)),
        ReservationState::Reserved if res.is_due(now) => return Err(expired(p)),
        ReservationState::Reserved => {}
    }
    let requested = now + Duration::seconds(i64::from(x.ttl_seconds));
    if requested <= p.expires_at {
        return Err(Rejection::ExpiryNotLater {
            reservation_id: p.reservation_id.to_string(),
            expires_at: p.expires_at,
            requested,
        });
    }
    let latest = p.created_at + Duration::seconds(i64::from(MAX_TTL_SECONDS));
    if requested > latest {
        return Err(Rejection::HoldTooLong {
            reservation_id: p.reservation_id.to_string(),
            latest,
        });
    }
    room_for_a_step(p)?;
    let event = Event::ReservationExtended {
        order_id: p.order_id.clone(),
        extension_id: x.extension_id.clone(),
        ttl_seconds: x.ttl_seconds,
        expires_at: requested,
    };
    Ok(step(p, event, command_id, now))
}

/// A placed reservation; a tombstone was released before it was made.
fn placed(res: &Reservation) -> Result<&Placed, Rejection> {
    match res {
        Reservation::Tombstone(t) => Err(released(&t.reservation_id)),
        Reservation::Placed(p) => Ok(p),
    }
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

/// Whether `lines` (each within what is open of its item, one per item)
/// take every open unit: then the step settles the reservation.
fn takes_all(p: &Placed, lines: &[Line]) -> bool {
    let units = |lines: &[Line]| lines.iter().map(|l| u64::from(l.quantity)).sum::<u64>();
    units(lines) == units(&p.open_lines())
}

/// A partial step or an extension needs a place in the stream that leaves
/// the last one free for the event that settles it.
fn room_for_a_step(p: &Placed) -> Result<(), Rejection> {
    let next = p.step_commands.len() as u32 + 1;
    if next < MAX_RESERVATION_EVENTS {
        return Ok(());
    }
    Err(Rejection::StepLimit {
        reservation_id: p.reservation_id.to_string(),
        limit: MAX_RESERVATION_EVENTS,
    })
}

fn already_confirmed(p: &Placed) -> Rejection {
    Rejection::AlreadyConfirmed {
        reservation_id: p.reservation_id.to_string(),
    }
}
