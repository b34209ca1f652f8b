//! stockledger: an event-sourced inventory ledger on PostgreSQL.
//!
//! See `docs/architecture.md` for the map. Without the `server` feature
//! (on by default) the library is its wire layer alone: `domain` (the
//! request types, their validation and the rejection codes), `api::bodies`
//! (what the API answers with) and `limits`, with no I/O, for the Rust
//! client to share.

#![warn(clippy::too_many_lines)]

pub mod api;
#[cfg(feature = "server")]
pub mod app;
#[cfg(feature = "server")]
pub mod audit;
#[cfg(feature = "server")]
pub mod db;
pub mod domain;
pub mod limits;
#[cfg(feature = "server")]
pub mod projection;
#[cfg(feature = "server")]
pub mod read_model;
#[cfg(feature = "server")]
pub mod relay;
#[cfg(feature = "server")]
pub mod seal;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod store;
