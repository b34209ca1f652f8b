//! What the commands that open a stream of one event share (receipts,
//! adjustments, transfers, counts): a retry of the same request is answered
//! from the event already there, another request under the same id is a
//! conflict, and the one event carries the request's fingerprint.

use uuid::Uuid;

use crate::domain::decision::{Decision, LedgerState, NewEvent, Outcome};
use crate::domain::event::Event;
use crate::domain::rejection::Rejection;
use crate::domain::stream::StreamId;

/// `Some(replayed)` when the single-event stream already holds this request,
/// `None` when it does not exist yet. `replayed` is false when the event is
/// this very command's (a re-run after a lost commit acknowledgement).
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

/// The seq-1 event of a new stream, carrying its request's fingerprint.
pub(crate) fn first_event(stream: StreamId, event: Event, fingerprint: &str) -> NewEvent {
    NewEvent {
        stream,
        seq: 1,
        event,
        fingerprint: Some(fingerprint.to_owned()),
    }
}

/// Decides a command that opens a one-event stream: a retry of the same
/// request is answered from the event already there (`outcome(replayed)`),
/// another request under the same id is a conflict, and a new request
/// appends the event `event` decides on (or its rejection), carrying the
/// request's fingerprint.
pub(crate) fn decide(
    state: &LedgerState,
    stream: StreamId,
    fingerprint: &str,
    command_id: Uuid,
    outcome: impl Fn(bool) -> Outcome,
    event: impl FnOnce() -> Result<Event, Rejection>,
) -> Result<Decision, Rejection> {
    if let Some(replayed) = replay_single(state, &stream, fingerprint, command_id)? {
        return Ok(Decision::answer(outcome(replayed)));
    }
    let event = event()?;
    Ok(Decision {
        events: vec![first_event(stream, event, fingerprint)],
        outcome: outcome(false),
    })
}
