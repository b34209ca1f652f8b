//! A typed Rust client for [stockledger](../../README.md)'s HTTP API.
//!
//! ```no_run
//! use stockledger_client::{Client, LineRequest, ReserveRequest, RejectionCode, new_id};
//!
//! # async fn checkout() -> Result<(), stockledger_client::Error> {
//! let ledger = Client::new("http://127.0.0.1:8080", Some("sk_..."))?;
//! // Made once per checkout and kept with the order: every retry, by this
//! // client or by the caller after a crash, sends the same id.
//! let reservation_id = new_id("r");
//! let reserve = ReserveRequest {
//!     reservation_id: reservation_id.clone(),
//!     order_id: "o-1001".into(),
//!     lines: vec![LineRequest { sku: "sneaker".into(), location: None, quantity: 1 }],
//!     ttl_seconds: Some(900),
//!     backorder: false,
//!     latest_arrival: None,
//! };
//! match ledger.reserve(&reserve).await {
//!     Ok(held) => println!("held until {:?}", held.expires_at),
//!     Err(e) if e.rejection() == Some(RejectionCode::InsufficientStock) => println!("sold out"),
//!     Err(e) => return Err(e),
//! }
//! // ... the order is paid:
//! ledger.confirm(&reservation_id).await?;
//! # Ok(()) }
//! ```
//!
//! What it does for the caller:
//! - **The server's own types.** Requests are `stockledger::domain`'s, answers
//!   `stockledger::api::bodies`', and rejection codes [`RejectionCode`]: the
//!   structs the server deserialises, serves and documents, shared through the
//!   `stockledger` crate built without its server (no database, no I/O).
//! - **Retries only where they are safe** ([`RetryPolicy`]): `503`, `429`
//!   (after its `Retry-After`) and broken connections, with the same request
//!   bytes each time, bounded by a deadline per call
//!   ([`Client::with_deadline`]). A rejection is an answer, never retried.
//! - **Ids kept across retries.** A command's ids are in its request; the
//!   client never makes new ones on a retry. [`new_id`] makes one for a
//!   caller to keep.
//! - **A subscription that resumes** ([`Client::subscribe`]): after any
//!   disconnect it connects again with `Last-Event-ID`, and never skips or
//!   repeats an event.

#![deny(missing_docs)]

mod calls;
mod client;
mod error;
mod retry;
mod subscribe;

pub use client::{Client, CORRELATION_HEADER};
pub use error::Error;
pub use retry::{RetryPolicy, DEFAULT_DEADLINE, FIRST_BACKOFF, MAX_ATTEMPTS, MAX_BACKOFF};
pub use subscribe::{Delivered, Subscription, IDLE_TIMEOUT, MAX_EVENT_BYTES};

pub use stockledger::api::bodies::*;
pub use stockledger::domain::{
    AdjustRequest, ChangeExpectedRequest, ConfirmLinesRequest, CountRequest, ExpectRequest,
    ExpectationState, ExtendRequest, LimitRequest, LineRequest, ReceiveRequest, RejectionCode,
    ReleaseLinesRequest, ReorderPointRequest, ReservationState, ReserveRequest, TransferRequest,
};

/// A fresh id for a command (`prefix` and a random uuid): make it once,
/// keep it with what it stands for (the order, the shipment), and send it
/// again on every retry. The ledger's idempotency is by these ids.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rejection_code_reads_back() {
        for &code in RejectionCode::ALL {
            assert_eq!(RejectionCode::from_code(code.as_str()), Some(code));
        }
        assert_eq!(RejectionCode::from_code("UNAUTHENTICATED"), None);
    }

    #[test]
    fn ids_are_fresh_and_prefixed() {
        let (a, b) = (new_id("r"), new_id("r"));
        assert!(a.starts_with("r-") && a.len() == 34, "{a}");
        assert_ne!(a, b);
    }
}
