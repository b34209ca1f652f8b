//! Validated identifiers. An id that exists as one of these types has already
//! passed the domain rule: 1 to 64 characters of `A-Z a-z 0-9 . _ : -`, and
//! neither `.` nor `..`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::domain::Rejection;
use crate::limits::MAX_ID_LEN;

/// Checks one id against the domain rule; `field` names it in the rejection.
pub fn check_id(field: &str, value: &str) -> Result<(), Rejection> {
    if value.is_empty() {
        return Err(Rejection::invalid(field, "must not be empty"));
    }
    if value.chars().count() > MAX_ID_LEN {
        return Err(Rejection::invalid(
            field,
            format!("must be at most {MAX_ID_LEN} characters"),
        ));
    }
    if let Some(bad) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')))
    {
        return Err(Rejection::invalid(
            field,
            format!("may only contain A-Z a-z 0-9 . _ : - (found {bad:?})"),
        ));
    }
    // `.` and `..` are path segments a URL resolves away: an id spelled so
    // could be created in a body but never named in a path.
    if value == "." || value == ".." {
        return Err(Rejection::invalid(field, "must not be . or .."));
    }
    Ok(())
}

macro_rules! define_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Validates `value`; `field` names it in the rejection.
            pub fn parse(field: &str, value: &str) -> Result<Self, Rejection> {
                check_id(field, value)?;
                Ok(Self(value.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

define_id!(
    /// A stock keeping unit.
    Sku
);
define_id!(
    /// A warehouse or store; `"default"` when the caller does not say.
    Location
);
define_id!(
    /// Chosen by the order service, one per order, reused on every retry.
    ReservationId
);
define_id!(
    /// The caller's order.
    OrderId
);
define_id!(
    /// Chosen by the caller for one delivery of stock.
    ReceiptId
);
define_id!(
    /// Chosen by the caller for one stock correction.
    AdjustmentId
);
define_id!(
    /// Chosen by the caller for one move of stock between locations.
    TransferId
);
define_id!(
    /// Chosen by the caller for one stock count of one item.
    CountId
);
define_id!(
    /// Chosen by the caller for one change of an item's per-order limit.
    LimitId
);
define_id!(
    /// Chosen by the caller for one change of an item's reorder point.
    ReorderPointId
);
define_id!(
    /// Names a low-stock alert: made by the ledger from the command that
    /// caused it (its command id and the alert's place among its alerts).
    AlertId
);
define_id!(
    /// Chosen by the caller for one expected receipt (a purchase order line
    /// or an advance shipping notice: stock of one item due on a date).
    ExpectedId
);
define_id!(
    /// Chosen by the caller for one change of an expected receipt; unique
    /// within the expected receipt.
    ChangeId
);
define_id!(
    /// Chosen by the caller for one partial confirmation of a reservation
    /// (one shipment of part of an order); unique within the reservation.
    ConfirmationId
);
define_id!(
    /// Chosen by the caller for one partial release of a reservation (lines
    /// taken off an order); unique within the reservation.
    ReleaseId
);
define_id!(
    /// Chosen by the caller for one extension of a reservation's hold;
    /// unique within the reservation.
    ExtensionId
);

/// The location used when a command names none.
pub const DEFAULT_LOCATION: &str = "default";

impl Location {
    /// Validates an optional location, defaulting to `"default"`.
    pub fn parse_or_default(field: &str, value: Option<&str>) -> Result<Self, Rejection> {
        match value {
            Some(v) => Self::parse(field, v),
            None => Ok(Self(DEFAULT_LOCATION.to_owned())),
        }
    }
}

/// Stock is kept per item: one SKU at one location. Items sort by
/// (location, sku), the order in which locks are taken and lines are listed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Item {
    pub sku: Sku,
    pub location: Location,
}

impl Ord for Item {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.location, &self.sku).cmp(&(&other.location, &other.sku))
    }
}

impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.sku, self.location)
    }
}

/// One normalised reservation line. In JSON it is `{sku, location, quantity}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub item: Item,
    pub quantity: u32,
}

/// The JSON shape of a line. Written out instead of `#[serde(flatten)]`,
/// which buffers every object and made reading the log several times slower.
#[derive(Serialize, Deserialize)]
struct LineJson<S, L> {
    sku: S,
    location: L,
    quantity: u32,
}

impl Serialize for Line {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        LineJson {
            sku: &self.item.sku,
            location: &self.item.location,
            quantity: self.quantity,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Line {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let l = LineJson::<Sku, Location>::deserialize(d)?;
        Ok(Line {
            item: Item {
                sku: l.sku,
                location: l.location,
            },
            quantity: l.quantity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_domain_rule() {
        let cases: &[(&str, bool)] = &[
            ("a", true),
            ("SKU-1.blue_x:2", true),
            (&"x".repeat(64), true),
            ("", false),
            (&"x".repeat(65), false),
            ("has space", false),
            ("slash/no", false),
            ("ünïcode", false),
            ("semi;colon", false),
        ];
        for (value, ok) in cases {
            assert_eq!(Sku::parse("sku", value).is_ok(), *ok, "{value:?}");
        }
    }

    #[test]
    fn rejection_names_the_field() {
        let err = OrderId::parse("order_id", "bad id").unwrap_err();
        assert_eq!(err.code(), crate::domain::RejectionCode::InvalidArgument);
        assert_eq!(err.details()["field"], "order_id");
    }
}
