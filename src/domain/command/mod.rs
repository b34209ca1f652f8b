//! Commands: what callers ask for. Each command has one module that holds
//! all of it: its raw request (as it arrives from the CLI or HTTP), its
//! validation into a normalised command, its fingerprint (what makes a retry
//! the same request), what it touches (what the store locks and loads), and
//! its decision. Nothing unvalidated gets past `validate`, so a decision
//! never re-checks input.
//!
//! The one list below ties them together: a command is a variant of
//! `Command` and an `impl Rule`, and a new one does not compile until it
//! says what it touches and how it decides.

mod adjust;
mod cancel_expected;
mod change_expected;
mod confirm;
mod confirm_lines;
mod count;
mod expect;
mod expected;
mod expire;
mod extend;
mod fill;
mod input;
mod limit;
mod receive;
mod release;
mod release_lines;
mod reorder_point;
mod reserve;
mod single;
mod step;
mod transfer;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::decision::{Decision, LedgerState};
use crate::domain::ids::{ExpectedId, Item, OrderId, ReservationId};
use crate::domain::stream::StreamId;
use crate::domain::Rejection;

pub use adjust::{Adjust, AdjustRequest};
pub use cancel_expected::CancelExpected;
pub use change_expected::{ChangeExpected, ChangeExpectedRequest};
pub use confirm::{confirm, Confirm};
pub use confirm_lines::{ConfirmLines, ConfirmLinesRequest};
pub use count::{Count, CountRequest};
pub use expect::{Expect, ExpectRequest};
pub use expire::{expire, Expire};
pub use extend::{Extend, ExtendRequest};
pub use fill::{fill, Fill};
pub use input::{Line, LineRequest, DEFAULT_RELEASE_REASON};
pub use limit::{Limit, LimitRequest};
pub use receive::{Receive, ReceiveRequest};
pub use release::{release, Release};
pub use release_lines::{ReleaseLines, ReleaseLinesRequest};
pub use reorder_point::{ReorderPoint, ReorderPointRequest};
pub use reserve::{Backorder, Reserve, ReserveRequest};
pub use transfer::{Transfer, TransferRequest};

/// What each command's module says about it.
pub(crate) trait Rule {
    /// The short name used in logs and metrics.
    const KIND: &'static str;

    /// The streams, order and items the command may read or move.
    fn touches(&self) -> Touches;

    /// What the command does against `state` at database time `now`: the
    /// events to append and the answer, or a named rejection. `command_id`
    /// lets a command re-run after a lost commit acknowledgement recognise
    /// its own earlier event and answer as the first run would have.
    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Decision, Rejection>;
}

/// Declares `Command` from the list of commands, and dispatches to each
/// command's `Rule`, so the list is the only place a command is named.
macro_rules! commands {
    ($($(#[$doc:meta])* $variant:ident($ty:ty),)*) => {
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum Command {
            $($(#[$doc])* $variant($ty),)*
        }

        impl Command {
            /// What this command touches. The store locks and loads exactly
            /// this.
            pub fn touches(&self) -> Touches {
                match self {
                    $(Command::$variant(c) => c.touches(),)*
                }
            }

            /// The short name used in logs and metrics.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Command::$variant(_) => <$ty as Rule>::KIND,)*
                }
            }

            pub(crate) fn decide(
                &self,
                state: &LedgerState,
                command_id: Uuid,
                now: DateTime<Utc>,
            ) -> Result<Decision, Rejection> {
                match self {
                    $(Command::$variant(c) => c.decide(state, command_id, now),)*
                }
            }
        }
    };
}

commands! {
    Receive(Receive),
    Adjust(Adjust),
    Transfer(Transfer),
    Count(Count),
    Limit(Limit),
    ReorderPoint(ReorderPoint),
    Expect(Expect),
    ChangeExpected(ChangeExpected),
    CancelExpected(CancelExpected),
    Reserve(Reserve),
    Confirm(Confirm),
    Release(Release),
    /// Sent by the expiry worker: expires the reservation if it is due.
    Expire(Expire),
    /// Sent by the backorder worker: fills or drops what waits, in turn.
    Fill(Fill),
    ConfirmLines(ConfirmLines),
    ReleaseLines(ReleaseLines),
    Extend(Extend),
}

impl Command {
    /// The stream this command appends to.
    pub fn stream(&self) -> StreamId {
        self.touches().stream
    }
}

/// What a command touches: the stream it appends to, the order whose
/// "one reservation per order" rule it checks, and the items whose balances it
/// may move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Touches {
    pub stream: StreamId,
    pub order: Option<OrderId>,
    pub items: Items,
    /// Items whose first balance row the command may create: a receipt's,
    /// an adjustment's, a count's or a limit's item, a transfer's destination. (A reserve of an item
    /// that was never received is refused, and the others move items that
    /// reservations already hold.)
    pub may_create: Vec<Item>,
    /// Another stream the command reads and may append to: the expected
    /// receipt a receipt is delivered against. Locked and loaded with
    /// `stream`.
    pub also: Option<StreamId>,
}

/// The items a command may move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Items {
    /// Named by the command itself.
    Named(Vec<Item>),
    /// The items held by the reservation the command moves, known once its
    /// stream is loaded.
    HeldBy(ReservationId),
    /// The item of the expected receipt the command changes, known once
    /// its stream is loaded.
    ExpectedOf(ExpectedId),
}

impl Touches {
    /// A command that opens a one-event stream about one item, whose first
    /// balance row it may create (a receipt, an adjustment, a count, a limit).
    fn one_item(stream: StreamId, item: &Item) -> Touches {
        Touches {
            stream,
            order: None,
            items: Items::Named(vec![item.clone()]),
            may_create: vec![item.clone()],
            also: None,
        }
    }

    /// A command on an existing reservation: its stream, and the items it
    /// holds. It creates no balance row.
    fn held_by(reservation_id: &ReservationId) -> Touches {
        Touches {
            stream: StreamId::Reservation(reservation_id.clone()),
            order: None,
            items: Items::HeldBy(reservation_id.clone()),
            may_create: Vec::new(),
            also: None,
        }
    }

    /// A command on an existing expected receipt: its stream, and its item.
    /// It creates no balance row (the record did).
    fn expected_of(expected_id: &ExpectedId) -> Touches {
        Touches {
            stream: StreamId::Expected(expected_id.clone()),
            order: None,
            items: Items::ExpectedOf(expected_id.clone()),
            may_create: Vec::new(),
            also: None,
        }
    }

    /// Every stream the command locks and loads.
    pub fn streams(&self) -> impl Iterator<Item = &StreamId> {
        std::iter::once(&self.stream).chain(self.also.as_ref())
    }

    /// The items to lock, given the loaded state (for `HeldBy`).
    pub fn items(&self, state: &LedgerState) -> Vec<Item> {
        match &self.items {
            Items::Named(items) => items.clone(),
            Items::HeldBy(id) => state
                .reservations
                .get(id)
                .map(|r| r.lines().iter().map(|l| l.item.clone()).collect())
                .unwrap_or_default(),
            Items::ExpectedOf(id) => state
                .expectations
                .get(id)
                .map(|e| vec![e.item.clone()])
                .unwrap_or_default(),
        }
    }
}
