//! What the commands that open a stream of one event share (receipts,
//! adjustments, transfers, counts): a retry of the same request is answered
//! from the event already there, another request under the same id is a
//! conflict, and the one event carries the request's fingerprint.

use uuid::Uuid;

use crate::domain::decide::{LedgerState, NewEvent};
use crate::domain::event::Event;
use crate::domain::rejection::Rejection;
use crate::domain::stream::StreamId;

/// `Some(replayed)` when the single-event stream already holds this request,
/// `None` when it does not exist yet. `replayed` is false when the event is
/// this very command's (a re-run after a lost commit acknowledgement).
pub(crate) fn replay_single(
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
