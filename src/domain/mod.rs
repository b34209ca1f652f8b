//! The pure domain core: commands, events, rules. No I/O, no async, no clock.
//! Everything the product promises (`shared/design/domain.md`) is decided here
//! and tested here; the store, the CLI and the server are shells around it.

pub mod command;
pub mod context;
pub mod contract;
pub mod decide;
pub mod event;
pub mod fingerprint;
pub mod ids;
pub mod number;
pub mod rejection;
pub mod reservation;
pub mod stream;

pub use command::{
    AdjustRequest, Command, CountRequest, Items, Line, LineRequest, ReceiveRequest, ReserveRequest,
    Touches, TransferRequest,
};
pub use context::CommandContext;
pub use decide::{
    apply, decide, Decision, LedgerState, NewEvent, Outcome, ReservationView, SingleRecord,
};
pub use event::{Balance, Event, EventMetadata, EventType, RecordedEvent, StockDelta};
pub use ids::{
    AdjustmentId, CountId, Item, Location, OrderId, ReceiptId, ReservationId, Sku, TransferId,
};
pub use rejection::{Rejection, RejectionCode, Shortfall};
pub use reservation::{Placed, Reservation, ReservationState, StreamViolation, Tombstone};
pub use stream::{StreamId, StreamKind};
