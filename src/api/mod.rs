//! The wire layer: the bodies the server answers with and the CLI prints,
//! as typed structs that are both served (serialised) and documented (their
//! OpenAPI schemas derive from them), and how each is built from the
//! domain's outcomes and the store's reads. It stands on the domain and the
//! store; the server and the CLI stand on it.
//!
//! One exception, on purpose: an event's JSON is `store::read::event_json`,
//! below this layer, because the seals hash exactly that document
//! (docs/auditing.md); `Event` here describes it.

#[cfg(feature = "server")]
pub mod answers;
pub mod bodies;
pub mod contract;
#[cfg(feature = "server")]
mod requests;
mod state;

#[cfg(feature = "server")]
pub use answers::{answer, rejection_document, reservation, Answer};
pub use bodies::*;
