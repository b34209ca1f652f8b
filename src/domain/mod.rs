//! The pure domain core: commands, events, rules. No I/O, no async, no clock.
//! Everything the product promises (`shared/design/domain.md`) is decided here
//! and tested here; the store, the CLI and the server are shells around it.

pub mod alerts;
pub mod backorder;
pub mod command;
pub mod context;
pub mod decide;
pub mod decision;
pub mod event;
pub mod event_type;
pub mod expectation;
pub mod fingerprint;
pub mod ids;
pub mod number;
pub mod promise;
pub mod read_query;
pub mod rejection;
pub mod reservation;
pub mod settings;
pub mod shape;
pub mod stream;
pub mod text;

pub use command::{
    AdjustRequest, CancelExpected, ChangeExpectedRequest, Command, ConfirmLinesRequest,
    CountRequest, ExpectRequest, ExtendRequest, Items, LimitRequest, Line, LineRequest,
    ReceiveRequest, ReleaseLinesRequest, ReorderPointRequest, ReserveRequest, Touches,
    TransferRequest,
};
pub use context::CommandContext;
pub use decide::{
    apply, decide, ArchivedStream, Decision, LedgerState, LineView, NewEvent, Outcome,
    ReservationView, SingleRecord,
};
pub use event::{
    Balance, Event, EventMetadata, EventType, RecordedEvent, ReservationMove, StockDelta,
};
pub use expectation::{Expectation, ExpectationState, ExpectationView, ExpectationViolation};
pub use ids::{
    AdjustmentId, AlertId, ChangeId, ConfirmationId, CountId, ExpectedId, ExtensionId, Item,
    LimitId, Location, OrderId, ReceiptId, ReleaseId, ReorderPointId, ReservationId, Sku,
    TransferId,
};
pub use promise::{promise, Promise, PromiseDate};
pub use read_query::{page_limit, AsOf};
pub use rejection::{Excess, OverLimit, RefusalKind, Rejection, RejectionCode, Shortfall};
pub use reservation::{
    LineProgress, Placed, Reservation, ReservationState, StepKey, StepRequest, StreamViolation,
    TakenStep, Tombstone,
};
pub use settings::{ItemSettings, Setting};
pub use stream::{StreamId, StreamKind};
