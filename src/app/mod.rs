//! The application layer: what the shells (the server, the CLI) ask of the
//! ledger when the answer spans floors. The schema together with the read
//! models' tables, reads served by the read models and the seals, and the
//! expiry of due reservations each need the store and a floor above it, so
//! they live here: the store, the read models, the projection runtime and
//! the seals never import upward.
//!
//! Most of it is methods of `Store` (Rust lets a crate add them in any
//! module), so that a shell keeps one handle and the floor below stays
//! unaware of what is built on it.

mod background;
pub mod backorders;
pub mod expiry;
mod migrate;
mod reads;

pub use migrate::migrate_through;
pub use reads::StockNow;
