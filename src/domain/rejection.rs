//! Named rejections: the business answers a command can get instead of success.
//! Each has a stable code (the codes of `shared/design/domain.md`); callers
//! branch on the code, people read the message.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

/// A line that could not be reserved, or an adjustment that would take more
/// than is free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shortfall {
    pub sku: String,
    pub location: String,
    pub requested: i64,
    pub available: i64,
}

/// A line of a partial confirm or release that asks for more than the
/// reservation still holds of its item (0 for an item it never held).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Excess {
    pub sku: String,
    pub location: String,
    pub requested: u32,
    pub reserved: u32,
}

/// A line of a reserve that asks for more of an item than one order may
/// hold (the item's per-order limit).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OverLimit {
    pub sku: String,
    pub location: String,
    pub requested: u32,
    pub max_per_order: u32,
}

/// Declares `RejectionCode` from one table, a row per refusal: its variant,
/// its stable code, the HTTP status it is answered with, and whether it is
/// bad input or the ledger's refusal (the CLI's exit code). The enum, `ALL`
/// and every mapping come from the same row, so a new refusal is one row
/// here and nothing to place anywhere else.
macro_rules! rejection_codes {
    ($($variant:ident => $code:literal, $status:literal, $kind:ident);+ $(;)?) => {
        /// The stable codes of rejections (`shared/design/domain.md`), spelled once
        /// here with how each is answered (`http_status`, `exit_code`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum RejectionCode {
            $($variant),+
        }

        impl RejectionCode {
            /// Every code, in the order declared.
            pub const ALL: &'static [RejectionCode] = &[$(RejectionCode::$variant),+];

            /// As callers see it: in API bodies, CLI output and metrics labels.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(RejectionCode::$variant => $code),+
                }
            }

            /// The code a body names, read back (the Rust client's): `None`
            /// for a code this build does not know, or not a rejection's.
            pub fn from_code(code: &str) -> Option<RejectionCode> {
                match code {
                    $($code => Some(RejectionCode::$variant),)+
                    _ => None,
                }
            }

            /// The HTTP status an answer with this code carries.
            pub fn http_status(self) -> u16 {
                match self {
                    $(RejectionCode::$variant => $status),+
                }
            }

            /// Whether the request itself breaks the contract, or the ledger
            /// refuses it for what it holds.
            pub fn kind(self) -> RefusalKind {
                match self {
                    $(RejectionCode::$variant => RefusalKind::$kind),+
                }
            }

            /// The CLI's documented exit code: 2 for bad input, 3 for a
            /// refusal of the ledger's.
            pub fn exit_code(self) -> u8 {
                match self.kind() {
                    RefusalKind::Input => 2,
                    RefusalKind::Refused => 3,
                }
            }
        }
    };
}

/// What kind of refusal a code is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalKind {
    /// The request breaks the contract: fix it before sending it again.
    Input,
    /// The ledger refuses it for what it holds now (stock, a reservation's
    /// state, an id used before).
    Refused,
}

rejection_codes! {
    InvalidArgument => "INVALID_ARGUMENT", 400, Input;
    InsufficientStock => "INSUFFICIENT_STOCK", 422, Refused;
    IdempotencyConflict => "IDEMPOTENCY_CONFLICT", 409, Refused;
    ReservationReleased => "RESERVATION_RELEASED", 409, Refused;
    ReservationExpired => "RESERVATION_EXPIRED", 409, Refused;
    AlreadyConfirmed => "ALREADY_CONFIRMED", 409, Refused;
    ReservationNotFound => "RESERVATION_NOT_FOUND", 404, Refused;
    OrderAlreadyReserved => "ORDER_ALREADY_RESERVED", 409, Refused;
    NotFound => "NOT_FOUND", 404, Refused;
    ExceedsReserved => "EXCEEDS_RESERVED", 422, Refused;
    ExpiryNotLater => "EXPIRY_NOT_LATER", 409, Refused;
    HoldTooLong => "HOLD_TOO_LONG", 422, Refused;
    StepLimit => "STEP_LIMIT", 409, Refused;
    OrderLimitExceeded => "ORDER_LIMIT_EXCEEDED", 422, Refused;
    ExpectedReceiptCancelled => "EXPECTED_RECEIPT_CANCELLED", 409, Refused;
    ExpectedReceiptFull => "EXPECTED_RECEIPT_FULL", 409, Refused;
    ExpectedItemMismatch => "EXPECTED_ITEM_MISMATCH", 409, Refused;
    BackorderWaiting => "BACKORDER_WAITING", 409, Refused;
    BacklogFull => "BACKLOG_FULL", 409, Refused;
    Archived => "ARCHIVED", 409, Refused;
}

impl std::fmt::Display for RejectionCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A named refusal. Its fields are its details: serialised untagged, a
/// variant is exactly the `details` object callers get (`details`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(untagged)]
pub enum Rejection {
    #[error("invalid {field}: {reason}")]
    InvalidArgument { field: String, reason: String },

    #[error("not enough stock for {} line(s)", shortfalls.len())]
    InsufficientStock { shortfalls: Vec<Shortfall> },

    #[error("{stream} already exists with a different request")]
    IdempotencyConflict { stream: String },

    #[error("reservation {reservation_id} was released")]
    ReservationReleased { reservation_id: String },

    #[error("reservation {reservation_id} expired at {expires_at}")]
    ReservationExpired {
        reservation_id: String,
        expires_at: DateTime<Utc>,
    },

    #[error(
        "reservation {reservation_id} is already confirmed; returns are new stock (a receipt)"
    )]
    AlreadyConfirmed { reservation_id: String },

    #[error("reservation {reservation_id} does not exist")]
    ReservationNotFound { reservation_id: String },

    /// A read asked for something that does not exist (an order, an item).
    #[error("no {what} {key}")]
    NotFound { what: &'static str, key: String },

    #[error("order {order_id} already has reservation {reservation_id}")]
    OrderAlreadyReserved {
        order_id: String,
        reservation_id: String,
    },

    #[error("reservation {reservation_id} holds less than asked for {} line(s)", lines.len())]
    ExceedsReserved {
        reservation_id: String,
        lines: Vec<Excess>,
    },

    #[error(
        "reservation {reservation_id} already expires at {expires_at}, not before {requested}"
    )]
    ExpiryNotLater {
        reservation_id: String,
        expires_at: DateTime<Utc>,
        requested: DateTime<Utc>,
    },

    #[error("reservation {reservation_id} may be held until {latest} at the latest")]
    HoldTooLong {
        reservation_id: String,
        latest: DateTime<Utc>,
    },

    #[error(
        "reservation {reservation_id} may hold {limit} events, and the last is kept for the one \
         that settles it: confirm or release what is open"
    )]
    StepLimit { reservation_id: String, limit: u32 },

    #[error("an order may not reserve that much of {} item(s)", lines.len())]
    OrderLimitExceeded { lines: Vec<OverLimit> },

    #[error("expected receipt {expected_id} was cancelled: nothing more is coming")]
    ExpectedReceiptCancelled { expected_id: String },

    #[error(
        "expected receipt {expected_id} may hold {limit} events, and the last is kept for its \
         cancellation: cancel it and expect the rest anew"
    )]
    ExpectedReceiptFull { expected_id: String, limit: u32 },

    #[error(
        "expected receipt {expected_id} is of {sku} at {location}, not of this receipt's item"
    )]
    ExpectedItemMismatch {
        expected_id: String,
        sku: String,
        location: String,
    },

    #[error(
        "reservation {reservation_id} has {waiting} unit(s) still waiting for stock: confirm \
         what is held by lines, or wait until the rest is filled"
    )]
    BackorderWaiting {
        reservation_id: String,
        waiting: u64,
    },

    #[error(
        "{sku} at {location} already has {limit} {what}: no more until some of them are \
         filled, delivered or cancelled"
    )]
    BacklogFull {
        sku: String,
        location: String,
        what: &'static str,
        limit: usize,
    },

    /// The stream's events left the database with an archived partition
    /// (`stockledger archive --detach`): its original answers are in the
    /// archive, and it takes no new step (docs/archive.md, decision 3).
    #[error(
        "{stream} is archived: its last event, seq {last_seq}, is at position {position} \
         (`stockledger prove {position} --archive DIR` shows it)"
    )]
    Archived {
        stream: String,
        last_seq: u32,
        position: i64,
    },
}

impl Rejection {
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        Rejection::InvalidArgument {
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    /// The answer for the current stock of an item that was never received:
    /// `NOT_FOUND`, so a mistyped SKU is not mistaken for an empty shelf
    /// (docs/domain.md). The API and the CLI both answer it.
    pub fn never_received(item: &crate::domain::Item) -> Self {
        Rejection::NotFound {
            what: "item",
            key: item.to_string(),
        }
    }

    /// The stable code callers branch on.
    pub fn code(&self) -> RejectionCode {
        match self {
            Rejection::InvalidArgument { .. } => RejectionCode::InvalidArgument,
            Rejection::InsufficientStock { .. } => RejectionCode::InsufficientStock,
            Rejection::IdempotencyConflict { .. } => RejectionCode::IdempotencyConflict,
            Rejection::ReservationReleased { .. } => RejectionCode::ReservationReleased,
            Rejection::ReservationExpired { .. } => RejectionCode::ReservationExpired,
            Rejection::AlreadyConfirmed { .. } => RejectionCode::AlreadyConfirmed,
            Rejection::ReservationNotFound { .. } => RejectionCode::ReservationNotFound,
            Rejection::OrderAlreadyReserved { .. } => RejectionCode::OrderAlreadyReserved,
            Rejection::NotFound { .. } => RejectionCode::NotFound,
            Rejection::ExceedsReserved { .. } => RejectionCode::ExceedsReserved,
            Rejection::ExpiryNotLater { .. } => RejectionCode::ExpiryNotLater,
            Rejection::HoldTooLong { .. } => RejectionCode::HoldTooLong,
            Rejection::StepLimit { .. } => RejectionCode::StepLimit,
            Rejection::OrderLimitExceeded { .. } => RejectionCode::OrderLimitExceeded,
            Rejection::ExpectedReceiptCancelled { .. } => RejectionCode::ExpectedReceiptCancelled,
            Rejection::ExpectedReceiptFull { .. } => RejectionCode::ExpectedReceiptFull,
            Rejection::ExpectedItemMismatch { .. } => RejectionCode::ExpectedItemMismatch,
            Rejection::BackorderWaiting { .. } => RejectionCode::BackorderWaiting,
            Rejection::BacklogFull { .. } => RejectionCode::BacklogFull,
            Rejection::Archived { .. } => RejectionCode::Archived,
        }
    }

    /// Machine-readable details of the rejection: its fields, by name.
    pub fn details(&self) -> Value {
        serde_json::to_value(self).expect("a rejection serialises")
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde_json::{json, Value};

    use super::*;

    fn r() -> String {
        "r1".to_owned()
    }

    /// Bad input is answered 400 and exits 2; a refusal of the ledger's is
    /// another 4xx (404, 409 or 422) and exits 3.
    #[test]
    fn every_refusal_is_answered_by_its_kind() {
        for &code in RejectionCode::ALL {
            let status = code.http_status();
            match code.kind() {
                RefusalKind::Input => assert_eq!((status, code.exit_code()), (400, 2), "{code}"),
                RefusalKind::Refused => {
                    assert!([404, 409, 422].contains(&status), "{code}: {status}");
                    assert_eq!(code.exit_code(), 3, "{code}");
                }
            }
        }
    }

    /// The rejections that name no time, with their details.
    fn without_times() -> Vec<(Rejection, Value)> {
        vec![
            (
                Rejection::invalid("lines[0].quantity", "too many"),
                json!({"field": "lines[0].quantity", "reason": "too many"}),
            ),
            (
                Rejection::InsufficientStock {
                    shortfalls: vec![Shortfall {
                        sku: "a".into(),
                        location: "default".into(),
                        requested: 3,
                        available: 1,
                    }],
                },
                json!({"shortfalls": [{"sku": "a", "location": "default", "requested": 3, "available": 1}]}),
            ),
            (
                Rejection::IdempotencyConflict {
                    stream: "receipt:x".into(),
                },
                json!({"stream": "receipt:x"}),
            ),
            (
                Rejection::ReservationReleased {
                    reservation_id: r(),
                },
                json!({"reservation_id": "r1"}),
            ),
            (
                Rejection::AlreadyConfirmed {
                    reservation_id: r(),
                },
                json!({"reservation_id": "r1"}),
            ),
            (
                Rejection::ReservationNotFound {
                    reservation_id: r(),
                },
                json!({"reservation_id": "r1"}),
            ),
            (
                Rejection::OrderLimitExceeded {
                    lines: vec![OverLimit {
                        sku: "a".into(),
                        location: "default".into(),
                        requested: 3,
                        max_per_order: 2,
                    }],
                },
                json!({"lines": [{"sku": "a", "location": "default", "requested": 3, "max_per_order": 2}]}),
            ),
        ]
    }

    /// The rejections of expected receipts, with their details.
    fn of_expected_receipts() -> Vec<(Rejection, Value)> {
        vec![
            (
                Rejection::ExpectedReceiptCancelled {
                    expected_id: "po1".into(),
                },
                json!({"expected_id": "po1"}),
            ),
            (
                Rejection::ExpectedReceiptFull {
                    expected_id: "po1".into(),
                    limit: 256,
                },
                json!({"expected_id": "po1", "limit": 256}),
            ),
            (
                Rejection::ExpectedItemMismatch {
                    expected_id: "po1".into(),
                    sku: "a".into(),
                    location: "default".into(),
                },
                json!({"expected_id": "po1", "sku": "a", "location": "default"}),
            ),
            (
                Rejection::BackorderWaiting {
                    reservation_id: r(),
                    waiting: 3,
                },
                json!({"reservation_id": "r1", "waiting": 3}),
            ),
            (
                Rejection::BacklogFull {
                    sku: "a".into(),
                    location: "default".into(),
                    what: "waiting orders",
                    limit: 1000,
                },
                json!({"sku": "a", "location": "default", "what": "waiting orders", "limit": 1000}),
            ),
            (
                Rejection::Archived {
                    stream: "receipt:r1".into(),
                    last_seq: 1,
                    position: 17,
                },
                json!({"stream": "receipt:r1", "last_seq": 1, "position": 17}),
            ),
        ]
    }

    /// The rejections that name times, with their details.
    fn with_times() -> Vec<(Rejection, Value)> {
        let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let later = Utc.timestamp_opt(1_800_000_060, 0).unwrap();
        vec![
            (
                Rejection::ReservationExpired {
                    reservation_id: r(),
                    expires_at: at,
                },
                json!({"reservation_id": "r1", "expires_at": at}),
            ),
            (
                Rejection::OrderAlreadyReserved {
                    order_id: "o1".into(),
                    reservation_id: r(),
                },
                json!({"order_id": "o1", "reservation_id": "r1"}),
            ),
            (
                Rejection::NotFound {
                    what: "order",
                    key: "o1".into(),
                },
                json!({"what": "order", "key": "o1"}),
            ),
            (
                Rejection::ExceedsReserved {
                    reservation_id: r(),
                    lines: vec![Excess {
                        sku: "a".into(),
                        location: "default".into(),
                        requested: 2,
                        reserved: 1,
                    }],
                },
                json!({"reservation_id": "r1", "lines": [{"sku": "a", "location": "default", "requested": 2, "reserved": 1}]}),
            ),
            (
                Rejection::ExpiryNotLater {
                    reservation_id: r(),
                    expires_at: later,
                    requested: at,
                },
                json!({"reservation_id": "r1", "expires_at": later, "requested": at}),
            ),
            (
                Rejection::HoldTooLong {
                    reservation_id: r(),
                    latest: at,
                },
                json!({"reservation_id": "r1", "latest": at}),
            ),
            (
                Rejection::StepLimit {
                    reservation_id: r(),
                    limit: 200,
                },
                json!({"reservation_id": "r1", "limit": 200}),
            ),
        ]
    }

    /// Each rejection's details, pinned: callers read these objects, so a
    /// field added to a variant must show up here as a deliberate change.
    #[test]
    fn every_rejection_has_the_details_callers_read() {
        let cases: Vec<_> = without_times()
            .into_iter()
            .chain(with_times())
            .chain(of_expected_receipts())
            .collect();
        let mut codes: Vec<RejectionCode> = cases.iter().map(|(r, _)| r.code()).collect();
        codes.sort_by_key(|c| c.as_str());
        codes.dedup();
        assert_eq!(codes.len(), RejectionCode::ALL.len(), "a case per code");
        for (rejection, details) in cases {
            assert_eq!(rejection.details(), details, "{rejection:?}");
        }
    }
}
