//! `ReservationCreated`: one of the log's facts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::ids::Line;
use crate::domain::ids::OrderId;
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event::lines_text;
use crate::domain::event_type::{TypeRow, Places};
use crate::domain::event::held;
use crate::domain::event_type::OPENS;
use crate::domain::event::fact::{Change, Version};
use serde_json::{Map, Value};

/// An order's reservation: its `lines` are held until `expires_at`,
/// `ttl_seconds` after it was recorded. Version 2 of its shape added
/// `ttl_seconds` (`shape.rs`); version 1 events read as their expiry less
/// their recording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationCreated {
    pub order_id: OrderId,
    pub lines: Vec<Line>,
    pub expires_at: DateTime<Utc>,
    pub ttl_seconds: u32,
    pub request_hash: String,
}

impl Fact for ReservationCreated {
    an_orders_lines!(held);

    fn summary(&self) -> String {
        format!(
            "reserved {} for order {}, until {}",
            lines_text(&self.lines),
            self.order_id,
            self.expires_at.format("%H:%M:%S")
        )
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.order_lines(&self.order_id, &self.lines);
        row.rest.expires_at = Some(self.expires_at);
        row.rest.ttl_seconds = Some(self.ttl_seconds);
        row.rest.request_hash = Some(self.request_hash.clone());
    }

    /// From version 2 on, the row keeps the fingerprint once: its request
    /// hash, in `data`, is the same 64 characters.
    fn fingerprint_in_data(&self, version: Version) -> Option<&str> {
        (version >= 2).then_some(self.request_hash.as_str())
    }
}

impl FactType for ReservationCreated {
    const ROW: TypeRow = TypeRow::reservation(Places::First, false, OPENS, (0, 1, 0, 0));

    const CHANGES: &'static [Change] = &[Change {
        version: 2,
        adds: "ttl_seconds",
        why: "the hold the order was given, so that a reader of the log need not \
              subtract two times to know it (issue 28)",
    }];

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        Ok(ReservationCreated {
            order_id: c.the_order()?,
            lines: c.lines()?,
            expires_at: need(rest.expires_at, "expires_at")?,
            ttl_seconds: need(rest.ttl_seconds, "ttl_seconds")?,
            request_hash: need(rest.request_hash, "request_hash")?,
        })
    }

    /// Before version 2, the hold is derived from the expiry and the
    /// recording (`hold_of_version_1`), even where an older event
    /// holds one (which no release wrote): it is shown and hashed without.
    fn upcast_data(version: Version, data: &mut Map<String, Value>, at: DateTime<Utc>) {
        if version >= 2 {
            return;
        }
        // Data that cannot be upcast is left as it is: decoding it then
        // names the missing field.
        let derived = data
            .get("expires_at")
            .and_then(|v| serde_json::from_value::<DateTime<Utc>>(v.clone()).ok())
            .map(|expires_at| Value::from(hold_of_version_1(expires_at, at)));
        if let Some(v) = derived {
            data.insert("ttl_seconds".to_owned(), v);
        }
    }

    fn upcast_row(version: Version, rest: &mut Rest, at: DateTime<Utc>) {
        if version < 2 {
            rest.ttl_seconds = rest
                .expires_at
                .map(|expires_at| hold_of_version_1(expires_at, at));
        }
    }
}

/// The SQL condition that picks a reservation's opening event out of rows of
/// the log (or of `carried_events`): which reservation holds an order. The
/// one place Rust spells this type in SQL; the schema's unique partial index
/// (one reservation per order, `schema/0007`) has the same predicate, which
/// is why it is a literal the planner can match and not a bound parameter.
#[cfg(feature = "server")]
macro_rules! opens_reservation_sql {
    () => {
        "type = 'ReservationCreated'"
    };
}
#[cfg(feature = "server")]
pub(crate) use opens_reservation_sql;

/// A reservation before version 2 of its shape: the hold's length, which it did not
/// say, is its expiry less the moment it was recorded. The store records a
/// reservation at the very moment its expiry was counted from (schema 0012),
/// so this is the TTL the order was given, in whole seconds; a log written by
/// hand with an expiry before its recording reads as a hold of 0.
pub fn hold_of_version_1(expires_at: DateTime<Utc>, recorded_at: DateTime<Utc>) -> u32 {
    let micros = (expires_at - recorded_at).num_microseconds().unwrap_or(0);
    let seconds = (micros.max(0) + 500_000) / 1_000_000;
    u32::try_from(seconds).unwrap_or(u32::MAX)
}
