//! stockledger: an event-sourced inventory ledger on PostgreSQL.
//!
//! See `docs/architecture.md` for the map.

#![warn(clippy::too_many_lines)]

pub mod api;
pub mod app;
pub mod audit;
pub mod db;
pub mod domain;
pub mod limits;
pub mod projection;
pub mod read_model;
pub mod relay;
pub mod seal;
pub mod server;
pub mod store;
