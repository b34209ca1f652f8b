//! Count: what the shelf holds, recorded. The change from the books is its
//! effect. Like an adjustment it may not leave less on hand than open
//! reservations hold (docs/domain.md); a replay answers with the books'
//! figure the first count saw.

use crate::domain::event::StockCounted;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::input::item;
use super::single;
use super::{Rule, Touches};
use crate::domain::decision::{Decision, LedgerState, Outcome};
use crate::domain::event::Event;
use crate::domain::fingerprint::Canonical;
use crate::domain::ids::{CountId, Item};
use crate::domain::rejection::Shortfall;
use crate::domain::stream::StreamId;
use crate::domain::{number, Command, Rejection};
use crate::limits::MAX_QUANTITY;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CountRequest {
    pub count_id: String,
    pub sku: String,
    #[serde(default)]
    pub location: Option<String>,
    /// The units found on the shelf, 0 or more.
    #[serde(deserialize_with = "number::whole")]
    pub counted: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Count {
    pub count_id: CountId,
    pub item: Item,
    pub counted: u32,
    pub fingerprint: String,
}

impl CountRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let count_id = CountId::parse("count_id", &self.count_id)?;
        let item = item(&self.sku, self.location.as_deref(), "")?;
        if self.counted < 0 || self.counted > i64::from(MAX_QUANTITY) {
            return Err(Rejection::invalid(
                "counted",
                format!("must be a whole number from 0 to {MAX_QUANTITY}"),
            ));
        }
        let counted = self.counted as u32;
        let fingerprint = Count::fingerprint_of(&item, counted);
        Ok(Command::Count(Count {
            count_id,
            item,
            counted,
            fingerprint,
        }))
    }
}

impl Count {
    /// The item and the counted units make a count what it is.
    pub fn fingerprint_of(item: &Item, counted: u32) -> String {
        let mut c = Canonical::new("count/v1");
        c.item(item).field(&counted.to_be_bytes());
        c.finish()
    }
}

impl Rule for Count {
    const KIND: &'static str = "count";

    fn touches(&self) -> Touches {
        Touches::one_item(StreamId::Count(self.count_id.clone()), &self.item)
    }

    fn decide(
        &self,
        state: &LedgerState,
        command_id: Uuid,
        _now: DateTime<Utc>,
    ) -> Result<Decision, Rejection> {
        let stream = StreamId::Count(self.count_id.clone());
        let balance = state.balance(&self.item);
        // A replay answers with the books the first count saw.
        let books = match state.singles.get(&stream).map(|r| &r.event) {
            Some(Event::StockCounted(StockCounted { books, .. })) => *books,
            _ => balance.on_hand,
        };
        let outcome = |replayed| Outcome::Counted {
            count_id: self.count_id.to_string(),
            item: self.item.clone(),
            counted: self.counted,
            books,
            replayed,
        };
        single::decide(
            state,
            stream.clone(),
            &self.fingerprint,
            command_id,
            outcome,
            || {
                // A count may not find fewer than what is held or claimed
                // by waiting orders on the shelf.
                let missing = balance.on_hand - i64::from(self.counted);
                if missing > balance.free() {
                    return Err(Rejection::InsufficientStock {
                        shortfalls: vec![Shortfall {
                            sku: self.item.sku.to_string(),
                            location: self.item.location.to_string(),
                            requested: missing,
                            available: balance.free(),
                        }],
                    });
                }
                Ok(Event::StockCounted(StockCounted {
                    sku: self.item.sku.clone(),
                    location: self.item.location.clone(),
                    counted: self.counted,
                    books: balance.on_hand,
                }))
            },
        )
    }
}
