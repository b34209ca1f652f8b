//! What a call can end in besides its answer.

use std::time::Duration;

use stockledger::domain::RejectionCode;

/// A call's failure. A [`Error::Rejected`] is the ledger's business answer
/// (the command was decided and refused); the others say the call did not
/// get one.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The ledger refused the command or read, with one of its stable codes
    /// (`INSUFFICIENT_STOCK`, `RESERVATION_EXPIRED`, ...). Retrying the same
    /// request gets the same answer.
    #[error("{code:?}: {message}")]
    Rejected {
        /// The stable code: branch on it.
        code: RejectionCode,
        /// For people: what was refused and why.
        message: String,
        /// The body's `details`, as the API description says per code.
        details: serde_json::Value,
    },
    /// The server answered with one of the API's own codes
    /// (`UNAUTHENTICATED`, `FORBIDDEN`, `HISTORY_ARCHIVED`, ...), or a code
    /// this client does not know. Retryable ones (`UNAVAILABLE`,
    /// `RATE_LIMITED`) end here only once the attempts are spent (a
    /// deadline that passes first is [`Error::DeadlineExceeded`]).
    #[error("{status} {code}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The body's code.
        code: String,
        /// For people.
        message: String,
        /// The body's `details` (`null` when it has none).
        details: serde_json::Value,
    },
    /// The call's deadline passed before an answer came; `last` is what the
    /// last attempt ended in. A command may or may not have been applied:
    /// send it again with the same ids, later, to learn which.
    #[error("no answer within {deadline:?} ({attempts} attempts; last: {last})")]
    DeadlineExceeded {
        /// The call's deadline.
        deadline: Duration,
        /// The attempts made.
        attempts: u32,
        /// What the last attempt ended in.
        last: String,
    },
    /// The server could not be reached or the connection broke (before or
    /// during the answer), on the last attempt allowed.
    #[error("transport: {0}")]
    Transport(#[from] reqwest::Error),
    /// The answer was not what the API description says.
    #[error("unexpected answer ({status}): {why}")]
    Unexpected {
        /// The HTTP status of the answer.
        status: u16,
        /// What was wrong with it.
        why: String,
    },
    /// The client was given something it cannot send (a bad base URL or key).
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl Error {
    /// The rejection code, when the ledger refused.
    pub fn rejection(&self) -> Option<RejectionCode> {
        match self {
            Error::Rejected { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The code of the error body (a rejection's or the API's), if the
    /// server answered with one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Rejected { code, .. } => Some(code.as_str()),
            Error::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}
