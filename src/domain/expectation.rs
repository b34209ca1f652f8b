//! An expected receipt: stock of one item due on a date, folded strictly
//! from its stream (`expected:<id>`). The command path, the audit and the
//! store's read of one expected receipt all fold with `Expectation::fold`,
//! so they cannot disagree about what is still coming.
//!
//! Every event of the stream states the expected receipt as it stands after
//! it (its item, its date, the units still expected), so a reader of one
//! event needs no other; the fold checks each such statement against the
//! events before it.

use crate::domain::event::{
    ExpectedReceiptCancelled, ExpectedReceiptChanged, ExpectedReceiptDelivered, ReceiptExpected,
};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::event::Event;
use crate::domain::ids::{ChangeId, ExpectedId, Item, Location, ReceiptId, Sku};
use crate::domain::stream::StreamKind;

pub(crate) use crate::domain::event::outside_expectations;

/// What a delivery against an expected receipt says: the receipt that
/// brought the units, their item, and how many. `None` for every other
/// event. The audit checks it against the receipt's own event.
pub fn delivery(event: &Event) -> Option<(&ReceiptId, Item, u32)> {
    match event {
        Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
            receipt_id,
            sku,
            location,
            quantity,
            ..
        }) => {
            let item = Item {
                sku: sku.clone(),
                location: location.clone(),
            };
            Some((receipt_id, item, *quantity))
        }
        Event::ReceiptExpected(_)
        | Event::ExpectedReceiptChanged(_)
        | Event::ExpectedReceiptCancelled(_)
        | outside_expectations!() => None,
    }
}

/// What an expected receipt's event says it still brings: its item, date
/// and outstanding units (0 after a cancellation). `None` for every other
/// event. Every event of the stream states it, so the `incoming` read
/// model's replay and each item's backlog (`backorder::apply`) read it here.
pub fn stated(event: &Event) -> Option<(&Sku, &Location, NaiveDate, u32)> {
    match event {
        Event::ReceiptExpected(ReceiptExpected {
            sku,
            location,
            quantity,
            expected_on,
        }) => Some((sku, location, *expected_on, *quantity)),
        Event::ExpectedReceiptChanged(ExpectedReceiptChanged {
            sku,
            location,
            expected_on,
            outstanding,
            ..
        })
        | Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
            sku,
            location,
            expected_on,
            outstanding,
            ..
        }) => Some((sku, location, *expected_on, *outstanding)),
        Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled {
            sku,
            location,
            expected_on,
            ..
        }) => Some((sku, location, *expected_on, 0)),
        outside_expectations!() => None,
    }
}

/// Whether an expected receipt still brings anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectationState {
    /// Recorded and not cancelled: what is outstanding is incoming.
    Open,
    /// Nothing more is coming; deliveries against it are refused.
    Cancelled,
}

impl ExpectationState {
    pub const ALL: &'static [ExpectationState] =
        &[ExpectationState::Open, ExpectationState::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            ExpectationState::Open => "open",
            ExpectationState::Cancelled => "cancelled",
        }
    }
}

/// One change, as its event recorded it: what a retry of it must ask again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeStep {
    pub change_id: ChangeId,
    pub quantity: u32,
    pub expected_on: NaiveDate,
    pub command_id: Uuid,
}

/// An expected receipt as its stream says it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    pub expected_id: ExpectedId,
    pub item: Item,
    /// The units expected in all (what was delivered counts towards them).
    pub quantity: u32,
    /// The units received against it so far; may exceed `quantity` (an
    /// over-delivery is stock like any other).
    pub delivered: u32,
    pub expected_on: NaiveDate,
    pub state: ExpectationState,
    /// The units still expected when it was cancelled (0 while open).
    pub withdrawn: u32,
    /// The last seq of its stream.
    pub seq: u32,
    /// The record's request fingerprint (as its metadata holds it; readers
    /// that do not read metadata, like the audit, have none) and command id:
    /// a retry of the record is answered from them.
    pub fingerprint: Option<String>,
    pub command_id: Uuid,
    pub changes: Vec<ChangeStep>,
    /// The receipts delivered against it, in stream order.
    pub deliveries: Vec<(ReceiptId, u32)>,
    /// The command that cancelled it, if it is cancelled.
    pub cancelled_by: Option<Uuid>,
}

/// Why a stream is not a valid expected receipt.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExpectationViolation {
    #[error("expected seq {expected}, found {found}")]
    SequenceGap { expected: u32, found: u32 },
    #[error("{event} is not allowed at seq {seq} of an expected receipt ({after})")]
    BadTransition {
        seq: u32,
        event: &'static str,
        after: &'static str,
    },
    #[error("{event} at seq {seq} names another item, date or amount than the stream before it")]
    StatementDiffers { seq: u32, event: &'static str },
    #[error("{event} at seq {seq} reuses the id of an earlier change or delivery")]
    StepReused { seq: u32, event: &'static str },
}

impl Expectation {
    /// The units still expected: what was expected in all less what came,
    /// never below 0; none once cancelled.
    pub fn outstanding(&self) -> u32 {
        match self.state {
            ExpectationState::Open => self.quantity.saturating_sub(self.delivered),
            ExpectationState::Cancelled => 0,
        }
    }

    /// What the units still expected would be with `quantity` expected in
    /// all: the rule a change's event states.
    pub fn outstanding_if(&self, quantity: u32) -> u32 {
        quantity.saturating_sub(self.delivered)
    }

    /// The change recorded under `id`, if any.
    pub fn change(&self, id: &ChangeId) -> Option<&ChangeStep> {
        self.changes.iter().find(|c| &c.change_id == id)
    }

    /// Whether a change or a delivery may still be appended: the last place
    /// of the stream is kept for a cancellation.
    pub fn has_room_for_a_step(&self) -> bool {
        self.seq + 1 < StreamKind::Expected.last_seq()
    }

    /// Folds one event onto the expected receipt before it (`None` at seq
    /// 1). `fingerprint` is the event's recorded request fingerprint.
    pub fn fold(
        current: Option<Expectation>,
        expected_id: &ExpectedId,
        seq: u32,
        event: &Event,
        command_id: Uuid,
        fingerprint: Option<&str>,
    ) -> Result<Expectation, ExpectationViolation> {
        let t = event.event_type();
        let next = current.as_ref().map_or(1, |c| c.seq + 1);
        if seq != next {
            return Err(ExpectationViolation::SequenceGap {
                expected: next,
                found: seq,
            });
        }
        let after = match &current {
            None => "nothing before it",
            Some(c) if c.state == ExpectationState::Cancelled => "after its cancellation",
            Some(_) => "where it stands",
        };
        let bad = || ExpectationViolation::BadTransition {
            seq,
            event: t.as_str(),
            after,
        };
        let cancelled = current
            .as_ref()
            .is_some_and(|c| c.state == ExpectationState::Cancelled);
        if !StreamKind::Expected.allows(seq, t) || cancelled {
            return Err(bad());
        }
        let at = At {
            seq,
            event: t.as_str(),
        };
        match (current, event) {
            (None, Event::ReceiptExpected(_)) => {
                Expectation::record(expected_id, at, event, command_id, fingerprint)
            }
            (Some(c), Event::ExpectedReceiptChanged(_)) => c.changed(at, event, command_id),
            (Some(c), Event::ExpectedReceiptDelivered(_)) => c.delivered(at, event),
            (Some(c), Event::ExpectedReceiptCancelled(_)) => c.cancelled(at, event, command_id),
            (_, Event::ReceiptExpected(_))
            | (None, Event::ExpectedReceiptChanged(_))
            | (None, Event::ExpectedReceiptDelivered(_))
            | (None, Event::ExpectedReceiptCancelled(_)) => Err(bad()),
            (_, outside_expectations!()) => Err(bad()),
        }
    }

    /// Seq 1: the expected receipt recorded.
    fn record(
        expected_id: &ExpectedId,
        at: At,
        event: &Event,
        command_id: Uuid,
        fingerprint: Option<&str>,
    ) -> Result<Expectation, ExpectationViolation> {
        let Event::ReceiptExpected(ReceiptExpected {
            sku,
            location,
            quantity,
            expected_on,
        }) = event
        else {
            unreachable!("`fold` hands over only a record")
        };
        if *quantity == 0 {
            return Err(at.differs());
        }
        Ok(Expectation {
            expected_id: expected_id.clone(),
            item: Item {
                sku: sku.clone(),
                location: location.clone(),
            },
            quantity: *quantity,
            delivered: 0,
            expected_on: *expected_on,
            state: ExpectationState::Open,
            withdrawn: 0,
            seq: at.seq,
            fingerprint: fingerprint.map(str::to_owned),
            command_id,
            changes: Vec::new(),
            deliveries: Vec::new(),
            cancelled_by: None,
        })
    }

    /// Whether an event states this expected receipt's item (and, unless
    /// it changes it, its date).
    fn states(&self, sku: &Sku, location: &Location, on: Option<&NaiveDate>) -> bool {
        self.item.sku == *sku
            && self.item.location == *location
            && on.is_none_or(|on| self.expected_on == *on)
    }

    fn changed(
        mut self,
        at: At,
        event: &Event,
        command_id: Uuid,
    ) -> Result<Expectation, ExpectationViolation> {
        let Event::ExpectedReceiptChanged(ExpectedReceiptChanged {
            change_id,
            sku,
            location,
            quantity,
            expected_on,
            outstanding,
        }) = event
        else {
            unreachable!("`fold` hands over only a change")
        };
        let stated = self.states(sku, location, None);
        if !stated || *quantity == 0 || *outstanding != self.outstanding_if(*quantity) {
            return Err(at.differs());
        }
        if self.change(change_id).is_some() {
            return Err(at.reused());
        }
        self.quantity = *quantity;
        self.expected_on = *expected_on;
        self.changes.push(ChangeStep {
            change_id: change_id.clone(),
            quantity: *quantity,
            expected_on: *expected_on,
            command_id,
        });
        self.seq = at.seq;
        Ok(self)
    }

    fn delivered(mut self, at: At, event: &Event) -> Result<Expectation, ExpectationViolation> {
        let Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
            receipt_id,
            sku,
            location,
            quantity,
            expected_on,
            outstanding,
        }) = event
        else {
            unreachable!("`fold` hands over only a delivery")
        };
        let delivered = self
            .delivered
            .checked_add(*quantity)
            .ok_or_else(|| at.differs())?;
        let stated = self.states(sku, location, Some(expected_on));
        if !stated || *quantity == 0 || *outstanding != self.quantity.saturating_sub(delivered) {
            return Err(at.differs());
        }
        if self.deliveries.iter().any(|(r, _)| r == receipt_id) {
            return Err(at.reused());
        }
        self.delivered = delivered;
        self.deliveries.push((receipt_id.clone(), *quantity));
        self.seq = at.seq;
        Ok(self)
    }

    fn cancelled(
        mut self,
        at: At,
        event: &Event,
        command_id: Uuid,
    ) -> Result<Expectation, ExpectationViolation> {
        let Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled {
            sku,
            location,
            expected_on,
            withdrawn,
        }) = event
        else {
            unreachable!("`fold` hands over only a cancellation")
        };
        if !self.states(sku, location, Some(expected_on)) || *withdrawn != self.outstanding() {
            return Err(at.differs());
        }
        self.withdrawn = *withdrawn;
        self.state = ExpectationState::Cancelled;
        self.cancelled_by = Some(command_id);
        self.seq = at.seq;
        Ok(self)
    }

    /// Folds a whole stream, given as (seq, event, command id, fingerprint).
    pub fn fold_all<'a>(
        expected_id: &ExpectedId,
        events: impl IntoIterator<Item = (u32, &'a Event, Uuid, Option<&'a str>)>,
    ) -> Result<Option<Expectation>, ExpectationViolation> {
        let mut current = None;
        for (seq, event, command_id, fingerprint) in events {
            current = Some(Expectation::fold(
                current,
                expected_id,
                seq,
                event,
                command_id,
                fingerprint,
            )?);
        }
        Ok(current)
    }
}

/// Where an event stands, for naming what is wrong with it.
#[derive(Clone, Copy)]
struct At {
    seq: u32,
    event: &'static str,
}

impl At {
    fn differs(self) -> ExpectationViolation {
        ExpectationViolation::StatementDiffers {
            seq: self.seq,
            event: self.event,
        }
    }

    fn reused(self) -> ExpectationViolation {
        ExpectationViolation::StepReused {
            seq: self.seq,
            event: self.event,
        }
    }
}

/// An expected receipt as callers see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExpectationView {
    pub expected_id: ExpectedId,
    pub sku: crate::domain::Sku,
    pub location: crate::domain::Location,
    /// The units expected in all.
    pub quantity: u32,
    /// The units received against it so far.
    pub delivered: u32,
    /// The units still expected: incoming stock.
    pub outstanding: u32,
    pub expected_on: NaiveDate,
    pub state: ExpectationState,
}

impl From<&Expectation> for ExpectationView {
    fn from(e: &Expectation) -> Self {
        ExpectationView {
            expected_id: e.expected_id.clone(),
            sku: e.item.sku.clone(),
            location: e.item.location.clone(),
            quantity: e.quantity,
            delivered: e.delivered,
            outstanding: e.outstanding(),
            expected_on: e.expected_on,
            state: e.state,
        }
    }
}

#[cfg(test)]
#[path = "expectation_tests.rs"]
mod tests;
