//! The decision: given what the log says now, what does a command do?
//!
//! `decide` is a plain function: no I/O, no clock (the database's clock is
//! passed in as `now`), no randomness. It returns the events to append and the
//! answer for the caller, or a named rejection. `apply` folds accepted events
//! into the state, so a batch of commands can be decided one after another
//! against the same in-memory state, exactly as if they had been sent one by one.

use chrono::{DateTime, Utc};

use uuid::Uuid;

use crate::domain::command::Command;
pub use crate::domain::decision::*;
use crate::domain::rejection::Rejection;
use crate::domain::reservation::Reservation;
use crate::domain::stream::StreamId;

/// Decides `cmd` against `state` at database time `now`: each command's own
/// module decides it (`command/*.rs`), and the low-stock alerts its events
/// cause follow them (`alerts.rs`). `command_id` lets a command that is
/// re-run after a lost commit acknowledgement recognise its own earlier event
/// and answer `replayed: false`, as the first run would have.
pub fn decide(
    state: &LedgerState,
    cmd: &Command,
    command_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Decision, Rejection> {
    if let Some(refused) = archived(state, cmd) {
        return Err(refused);
    }
    let mut decision = cmd.decide(state, command_id, now)?;
    let alerts = crate::domain::alerts::alerts(state, &decision.events, command_id);
    decision.events.extend(alerts);
    Ok(decision)
}

/// A command on an archived stream is refused whatever it asks: its original
/// answer is in the archive, and deciding without the stream's events would
/// take it for a new stream (a release would write a tombstone, a receipt
/// would be received again).
fn archived(state: &LedgerState, cmd: &Command) -> Option<Rejection> {
    if state.archived.is_empty() {
        return None;
    }
    let touches = cmd.touches();
    let found = touches
        .streams()
        .find_map(|s| state.archived.get(s).map(|a| (s, a)));
    found.map(|(stream, a)| Rejection::Archived {
        stream: stream.to_string(),
        last_seq: a.last_seq,
        position: a.position,
    })
}

/// Folds an accepted decision into the state, as the store will once it commits.
pub fn apply(state: &mut LedgerState, decision: &Decision, command_id: Uuid, now: DateTime<Utc>) {
    for e in &decision.events {
        for (item, delta) in e.event.stock_effects() {
            let balance = state.balances.entry(item).or_default();
            balance.apply(delta);
            assert!(
                balance.is_valid(),
                "decide produced an invalid balance: {balance:?}"
            );
        }
        if let Some((item, setting)) = e.event.setting() {
            state.settings.entry(item).or_default().apply(setting);
        }
        crate::domain::backorder::apply(&mut state.backlogs, &e.stream, &e.event);
        match &e.stream {
            StreamId::Reservation(id) => {
                let current = state.reservations.remove(id);
                let next = Reservation::fold(current, id, e.seq, &e.event, command_id, now)
                    .expect("decide only produces valid transitions");
                if let (1, Some(order)) = (e.seq, next.order_id()) {
                    state.order_owners.insert(order.clone(), id.clone());
                }
                state.reservations.insert(id.clone(), next);
            }
            StreamId::Receipt(_)
            | StreamId::Adjustment(_)
            | StreamId::Transfer(_)
            | StreamId::Count(_)
            | StreamId::Limit(_)
            | StreamId::ReorderPoint(_) => {
                let fingerprint = e
                    .fingerprint
                    .clone()
                    .expect("single streams carry a fingerprint");
                state.singles.insert(
                    e.stream.clone(),
                    SingleRecord {
                        fingerprint,
                        command_id,
                        event: e.event.clone(),
                    },
                );
            }
            StreamId::Expected(id) => state
                .fold_expected(id, e.seq, &e.event, command_id, e.fingerprint.as_deref())
                .expect("decide only appends what the expected receipt's fold accepts"),
            // An alert answers no command: nothing asks for its stream again.
            StreamId::Alert(_) => {}
        }
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
