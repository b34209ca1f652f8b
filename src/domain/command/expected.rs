//! What the commands on an existing expected receipt share (a change, a
//! cancellation, a delivery by a receipt sent against it): find it, refuse
//! one that is cancelled or full, and append its next event, answered with
//! the expected receipt as that event leaves it.

use uuid::Uuid;

use crate::domain::decision::{Decision, LedgerState, NewEvent, Outcome};
use crate::domain::event::Event;
use crate::domain::expectation::{Expectation, ExpectationState, ExpectationView};
use crate::domain::ids::ExpectedId;
use crate::domain::rejection::Rejection;
use crate::domain::stream::{StreamId, StreamKind};

/// The expected receipt `id`, or `NOT_FOUND`.
pub(crate) fn find<'s>(
    state: &'s LedgerState,
    id: &ExpectedId,
) -> Result<&'s Expectation, Rejection> {
    state
        .expectations
        .get(id)
        .ok_or_else(|| Rejection::NotFound {
            what: "expected receipt",
            key: id.to_string(),
        })
}

/// Refuses a step on a cancelled expected receipt, or on one whose stream
/// has only the place left that is kept for its cancellation.
pub(crate) fn open_with_room(e: &Expectation) -> Result<(), Rejection> {
    if e.state == ExpectationState::Cancelled {
        return Err(Rejection::ExpectedReceiptCancelled {
            expected_id: e.expected_id.to_string(),
        });
    }
    if !e.has_room_for_a_step() {
        return Err(Rejection::ExpectedReceiptFull {
            expected_id: e.expected_id.to_string(),
            limit: StreamKind::Expected.last_seq(),
        });
    }
    Ok(())
}

/// `event` as the next event of `e`'s stream, and the expected receipt as
/// it leaves it (folded by the one fold, so the answer is what a reader of
/// the log will see).
pub(crate) fn next(e: &Expectation, event: Event, command_id: Uuid) -> (NewEvent, ExpectationView) {
    let seq = e.seq + 1;
    let after = Expectation::fold(
        Some(e.clone()),
        &e.expected_id,
        seq,
        &event,
        command_id,
        None,
    )
    .expect("a decision appends only what the fold accepts");
    let new = NewEvent {
        stream: StreamId::Expected(e.expected_id.clone()),
        seq,
        event,
        fingerprint: None,
    };
    (new, ExpectationView::from(&after))
}

/// The decision of a change or a cancellation: `event` appended, answered
/// with the expected receipt as it leaves it.
pub(crate) fn append(e: &Expectation, event: Event, command_id: Uuid) -> Decision {
    let (new, view) = next(e, event, command_id);
    Decision {
        events: vec![new],
        outcome: Outcome::Expected {
            view,
            replayed: false,
        },
    }
}
