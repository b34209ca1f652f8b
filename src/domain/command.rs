//! Commands: what callers ask for, first as raw requests (as they arrive from
//! the CLI or HTTP), then validated and normalised. Nothing unvalidated gets
//! past `validate`, so the decision code never re-checks input.

use serde::{Deserialize, Serialize};

use crate::domain::decide::LedgerState;
use crate::domain::fingerprint;
use crate::domain::ids::{
    AdjustmentId, ConfirmationId, CountId, ExtensionId, Item, Location, OrderId, ReceiptId,
    ReleaseId, ReservationId, Sku, TransferId,
};
use crate::domain::stream::StreamId;
use crate::domain::Rejection;
use crate::domain::{contract, number};
use crate::limits::{
    DEFAULT_TTL_SECONDS, MAX_ADJUST_DELTA, MAX_LINES_PER_RESERVATION, MAX_QUANTITY,
    MAX_RAW_LINES_PER_RESERVATION, MAX_REASON_LEN, MAX_TTL_SECONDS, MIN_TTL_SECONDS,
};

/// The reason recorded when a release names none.
pub const DEFAULT_RELEASE_REASON: &str = "cancelled";

// ---- raw requests -------------------------------------------------------

#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LineRequest {
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[serde(default)]
    #[schema(schema_with = contract::location)]
    pub location: Option<String>,
    #[serde(deserialize_with = "number::whole")]
    #[schema(schema_with = contract::quantity)]
    pub quantity: i64,
}

#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReserveRequest {
    /// Chosen by the caller, one per order, and sent again on every retry.
    #[schema(schema_with = contract::id)]
    pub reservation_id: String,
    #[schema(schema_with = contract::id)]
    pub order_id: String,
    #[schema(schema_with = contract::lines)]
    pub lines: Vec<LineRequest>,
    #[serde(default, deserialize_with = "number::optional_whole")]
    #[schema(schema_with = contract::ttl_seconds)]
    pub ttl_seconds: Option<i64>,
}

#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiveRequest {
    #[schema(schema_with = contract::id)]
    pub receipt_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[serde(default)]
    #[schema(schema_with = contract::location)]
    pub location: Option<String>,
    #[serde(deserialize_with = "number::whole")]
    #[schema(schema_with = contract::quantity)]
    pub quantity: i64,
}

#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdjustRequest {
    #[schema(schema_with = contract::id)]
    pub adjustment_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[serde(default)]
    #[schema(schema_with = contract::location)]
    pub location: Option<String>,
    #[serde(deserialize_with = "number::whole")]
    #[schema(schema_with = contract::delta)]
    pub delta: i64,
    #[schema(schema_with = contract::reason)]
    pub reason: String,
}

#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferRequest {
    #[schema(schema_with = contract::id)]
    pub transfer_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[schema(schema_with = contract::from_location)]
    pub from_location: String,
    #[schema(schema_with = contract::to_location)]
    pub to_location: String,
    #[serde(deserialize_with = "number::whole")]
    #[schema(schema_with = contract::quantity)]
    pub quantity: i64,
}

#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CountRequest {
    #[schema(schema_with = contract::id)]
    pub count_id: String,
    #[schema(schema_with = contract::id)]
    pub sku: String,
    #[serde(default)]
    #[schema(schema_with = contract::location)]
    pub location: Option<String>,
    /// The units found on the shelf, 0 or more.
    #[serde(deserialize_with = "number::whole")]
    #[schema(schema_with = contract::counted)]
    pub counted: i64,
}

/// Confirms part of a reservation: some of its lines, or some units of them.
#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmLinesRequest {
    /// Chosen by the caller for this shipment, and sent again on every retry.
    #[schema(schema_with = contract::id)]
    pub confirmation_id: String,
    #[schema(schema_with = contract::lines)]
    pub lines: Vec<LineRequest>,
}

/// Releases part of a reservation: some of its lines, or some units of them.
#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseLinesRequest {
    /// Chosen by the caller for this change, and sent again on every retry.
    #[schema(schema_with = contract::id)]
    pub release_id: String,
    #[schema(schema_with = contract::lines)]
    pub lines: Vec<LineRequest>,
    #[serde(default)]
    #[schema(schema_with = contract::release_reason)]
    pub reason: Option<String>,
}

/// Keeps a reservation's hold for `ttl_seconds` from now.
#[derive(Clone, Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendRequest {
    /// Chosen by the caller for this extension, and sent again on every retry.
    #[schema(schema_with = contract::id)]
    pub extension_id: String,
    #[serde(deserialize_with = "number::whole")]
    #[schema(schema_with = contract::extension_ttl)]
    pub ttl_seconds: i64,
}

// ---- validated commands -------------------------------------------------

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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receive {
    pub receipt_id: ReceiptId,
    pub item: Item,
    pub quantity: u32,
    pub fingerprint: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adjust {
    pub adjustment_id: AdjustmentId,
    pub item: Item,
    pub delta: i32,
    pub reason: String,
    pub fingerprint: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub transfer_id: TransferId,
    /// The same SKU at two different locations.
    pub from: Item,
    pub to: Item,
    pub quantity: u32,
    pub fingerprint: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Count {
    pub count_id: CountId,
    pub item: Item,
    pub counted: u32,
    pub fingerprint: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reserve {
    pub reservation_id: ReservationId,
    pub order_id: OrderId,
    /// Merged per item and sorted by (location, sku).
    pub lines: Vec<Line>,
    pub ttl_seconds: u32,
    pub fingerprint: String,
}

/// Confirms `lines` (merged and sorted like a reserve's) of a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfirmLines {
    pub reservation_id: ReservationId,
    pub confirmation_id: ConfirmationId,
    pub lines: Vec<Line>,
}

/// Releases `lines` of a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseLines {
    pub reservation_id: ReservationId,
    pub release_id: ReleaseId,
    pub lines: Vec<Line>,
    pub reason: String,
}

/// Moves a reservation's expiry to `ttl_seconds` after the decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extend {
    pub reservation_id: ReservationId,
    pub extension_id: ExtensionId,
    pub ttl_seconds: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Receive(Receive),
    Adjust(Adjust),
    Transfer(Transfer),
    Count(Count),
    Reserve(Reserve),
    Confirm {
        reservation_id: ReservationId,
    },
    Release {
        reservation_id: ReservationId,
        reason: String,
    },
    /// Sent by the expiry worker: expires the reservation if it is due.
    Expire {
        reservation_id: ReservationId,
    },
    ConfirmLines(ConfirmLines),
    ReleaseLines(ReleaseLines),
    Extend(Extend),
}

/// What a command touches: the stream it appends to, the order whose
/// "one reservation per order" rule it checks, and the items whose balances it
/// may move. The store locks and loads exactly this, so it is one exhaustive
/// match: a new command does not compile until it says what it touches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Touches {
    pub stream: StreamId,
    pub order: Option<OrderId>,
    pub items: Items,
    /// Items whose first balance row the command may create: a receipt's or
    /// an adjustment's item, a transfer's destination. (A reserve of an item
    /// that was never received is refused, and the others move items that
    /// reservations already hold.)
    pub may_create: Vec<Item>,
}

/// The items a command may move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Items {
    /// Named by the command itself.
    Named(Vec<Item>),
    /// The items held by the reservation the command moves, known once its
    /// stream is loaded.
    HeldBy(ReservationId),
}

impl Touches {
    /// The items to lock, given the loaded state (for `HeldBy`).
    pub fn items(&self, state: &LedgerState) -> Vec<Item> {
        match &self.items {
            Items::Named(items) => items.clone(),
            Items::HeldBy(id) => state
                .reservations
                .get(id)
                .map(|r| r.lines().iter().map(|l| l.item.clone()).collect())
                .unwrap_or_default(),
        }
    }
}

impl Command {
    pub fn touches(&self) -> Touches {
        match self {
            Command::Receive(r) => Touches {
                stream: StreamId::Receipt(r.receipt_id.clone()),
                order: None,
                items: Items::Named(vec![r.item.clone()]),
                may_create: vec![r.item.clone()],
            },
            Command::Adjust(a) => Touches {
                stream: StreamId::Adjustment(a.adjustment_id.clone()),
                order: None,
                items: Items::Named(vec![a.item.clone()]),
                may_create: vec![a.item.clone()],
            },
            Command::Count(c) => Touches {
                stream: StreamId::Count(c.count_id.clone()),
                order: None,
                items: Items::Named(vec![c.item.clone()]),
                may_create: vec![c.item.clone()],
            },
            Command::Transfer(t) => Touches {
                stream: StreamId::Transfer(t.transfer_id.clone()),
                order: None,
                items: Items::Named(vec![t.from.clone(), t.to.clone()]),
                may_create: vec![t.to.clone()],
            },
            Command::Reserve(r) => Touches {
                stream: StreamId::Reservation(r.reservation_id.clone()),
                order: Some(r.order_id.clone()),
                items: Items::Named(r.lines.iter().map(|l| l.item.clone()).collect()),
                may_create: Vec::new(),
            },
            Command::Confirm { reservation_id }
            | Command::Release { reservation_id, .. }
            | Command::Expire { reservation_id }
            | Command::ConfirmLines(ConfirmLines { reservation_id, .. })
            | Command::ReleaseLines(ReleaseLines { reservation_id, .. })
            | Command::Extend(Extend { reservation_id, .. }) => Touches {
                stream: StreamId::Reservation(reservation_id.clone()),
                order: None,
                items: Items::HeldBy(reservation_id.clone()),
                may_create: Vec::new(),
            },
        }
    }

    /// The stream this command appends to.
    pub fn stream(&self) -> StreamId {
        self.touches().stream
    }

    /// The short name used in logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Command::Receive(_) => "receive",
            Command::Adjust(_) => "adjust",
            Command::Transfer(_) => "transfer",
            Command::Count(_) => "count",
            Command::Reserve(_) => "reserve",
            Command::Confirm { .. } => "confirm",
            Command::Release { .. } => "release",
            Command::Expire { .. } => "expire",
            Command::ConfirmLines(_) => "confirm_lines",
            Command::ReleaseLines(_) => "release_lines",
            Command::Extend(_) => "extend",
        }
    }
}

// ---- validation ---------------------------------------------------------

fn quantity(field: &str, q: i64) -> Result<u32, Rejection> {
    if q < 1 || q > i64::from(MAX_QUANTITY) {
        return Err(Rejection::invalid(
            field,
            format!("must be a whole number from 1 to {MAX_QUANTITY}"),
        ));
    }
    Ok(q as u32)
}

fn reason(field: &str, text: &str) -> Result<String, Rejection> {
    let len = text.chars().count();
    if len == 0 || len > MAX_REASON_LEN {
        return Err(Rejection::invalid(
            field,
            format!("must be 1 to {MAX_REASON_LEN} characters"),
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(Rejection::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(text.to_owned())
}

fn item(sku: &str, location: Option<&str>, prefix: &str) -> Result<Item, Rejection> {
    Ok(Item {
        sku: Sku::parse(&format!("{prefix}sku"), sku)?,
        location: Location::parse_or_default(&format!("{prefix}location"), location)?,
    })
}

impl ReceiveRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let receipt_id = ReceiptId::parse("receipt_id", &self.receipt_id)?;
        let item = item(&self.sku, self.location.as_deref(), "")?;
        let quantity = quantity("quantity", self.quantity)?;
        let fingerprint = fingerprint::receipt(&item, quantity);
        Ok(Command::Receive(Receive {
            receipt_id,
            item,
            quantity,
            fingerprint,
        }))
    }
}

impl AdjustRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let adjustment_id = AdjustmentId::parse("adjustment_id", &self.adjustment_id)?;
        let item = item(&self.sku, self.location.as_deref(), "")?;
        let max = i64::from(MAX_ADJUST_DELTA);
        if self.delta == 0 || !(-max..=max).contains(&self.delta) {
            return Err(Rejection::invalid(
                "delta",
                format!("must be a whole number from -{max} to {max}, not 0"),
            ));
        }
        let delta = self.delta as i32;
        let reason = reason("reason", &self.reason)?;
        let fingerprint = fingerprint::adjustment(&item, delta, &reason);
        Ok(Command::Adjust(Adjust {
            adjustment_id,
            item,
            delta,
            reason,
            fingerprint,
        }))
    }
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
        let fingerprint = fingerprint::count(&item, counted);
        Ok(Command::Count(Count {
            count_id,
            item,
            counted,
            fingerprint,
        }))
    }
}

impl TransferRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let transfer_id = TransferId::parse("transfer_id", &self.transfer_id)?;
        let from = Item {
            sku: Sku::parse("sku", &self.sku)?,
            location: Location::parse("from_location", &self.from_location)?,
        };
        let to = Item {
            sku: from.sku.clone(),
            location: Location::parse("to_location", &self.to_location)?,
        };
        if to.location == from.location {
            return Err(Rejection::invalid(
                "to_location",
                "must be another location than from_location",
            ));
        }
        let quantity = quantity("quantity", self.quantity)?;
        let fingerprint = fingerprint::transfer(&from, &to, quantity);
        Ok(Command::Transfer(Transfer {
            transfer_id,
            from,
            to,
            quantity,
            fingerprint,
        }))
    }
}

impl ReserveRequest {
    pub fn validate(&self) -> Result<Command, Rejection> {
        let reservation_id = ReservationId::parse("reservation_id", &self.reservation_id)?;
        let order_id = OrderId::parse("order_id", &self.order_id)?;
        let lines = merge_lines(&self.lines)?;
        let ttl_seconds = match self.ttl_seconds {
            None => DEFAULT_TTL_SECONDS,
            Some(t) => ttl("ttl_seconds", t)?,
        };
        let fingerprint = fingerprint::reservation(&order_id, &lines);
        Ok(Command::Reserve(Reserve {
            reservation_id,
            order_id,
            lines,
            ttl_seconds,
            fingerprint,
        }))
    }
}

/// Validates and normalises the lines of a reserve or of a partial confirm
/// or release: 1 to the line limit, merged per item (quantities added, each
/// total within the quantity limit) and sorted by (location, sku).
fn merge_lines(raw: &[LineRequest]) -> Result<Vec<Line>, Rejection> {
    if raw.is_empty() {
        return Err(Rejection::invalid("lines", "must name at least one line"));
    }
    // Bound the work before merging: a request far over the limit is refused
    // without building anything from it.
    if raw.len() > MAX_RAW_LINES_PER_RESERVATION {
        return Err(Rejection::invalid(
            "lines",
            format!(
                "must have at most {MAX_RAW_LINES_PER_RESERVATION} lines as sent \
                 ({MAX_LINES_PER_RESERVATION} after merging lines for the same item)"
            ),
        ));
    }
    // Merge lines for the same item, remembering the first input index of
    // each item so that an over-large merged quantity names a real field.
    let mut merged: std::collections::BTreeMap<Item, (usize, u64)> = Default::default();
    for (i, l) in raw.iter().enumerate() {
        let prefix = format!("lines[{i}].");
        let item = item(&l.sku, l.location.as_deref(), &prefix)?;
        let q = quantity(&format!("{prefix}quantity"), l.quantity)?;
        merged.entry(item).or_insert((i, 0)).1 += u64::from(q);
    }
    if merged.len() > MAX_LINES_PER_RESERVATION {
        return Err(Rejection::invalid(
            "lines",
            format!("must have at most {MAX_LINES_PER_RESERVATION} distinct items"),
        ));
    }
    let mut lines = Vec::with_capacity(merged.len());
    for (item, (first, total)) in merged {
        if total > u64::from(MAX_QUANTITY) {
            return Err(Rejection::invalid(
                &format!("lines[{first}].quantity"),
                format!("lines for {item} add up to {total}, more than {MAX_QUANTITY}"),
            ));
        }
        lines.push(Line {
            item,
            quantity: total as u32,
        });
    }
    Ok(lines)
}

/// A time to live within the limits.
fn ttl(field: &str, t: i64) -> Result<u32, Rejection> {
    if t >= i64::from(MIN_TTL_SECONDS) && t <= i64::from(MAX_TTL_SECONDS) {
        return Ok(t as u32);
    }
    Err(Rejection::invalid(
        field,
        format!("must be from {MIN_TTL_SECONDS} to {MAX_TTL_SECONDS} seconds"),
    ))
}

impl ConfirmLinesRequest {
    pub fn validate(&self, reservation_id: &str) -> Result<Command, Rejection> {
        Ok(Command::ConfirmLines(ConfirmLines {
            reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
            confirmation_id: ConfirmationId::parse("confirmation_id", &self.confirmation_id)?,
            lines: merge_lines(&self.lines)?,
        }))
    }
}

impl ReleaseLinesRequest {
    pub fn validate(&self, reservation_id: &str) -> Result<Command, Rejection> {
        Ok(Command::ReleaseLines(ReleaseLines {
            reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
            release_id: ReleaseId::parse("release_id", &self.release_id)?,
            lines: merge_lines(&self.lines)?,
            reason: reason(
                "reason",
                self.reason.as_deref().unwrap_or(DEFAULT_RELEASE_REASON),
            )?,
        }))
    }
}

impl ExtendRequest {
    pub fn validate(&self, reservation_id: &str) -> Result<Command, Rejection> {
        Ok(Command::Extend(Extend {
            reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
            extension_id: ExtensionId::parse("extension_id", &self.extension_id)?,
            ttl_seconds: ttl("ttl_seconds", self.ttl_seconds)?,
        }))
    }
}

pub fn confirm(reservation_id: &str) -> Result<Command, Rejection> {
    Ok(Command::Confirm {
        reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
    })
}

pub fn release(reservation_id: &str, why: Option<&str>) -> Result<Command, Rejection> {
    Ok(Command::Release {
        reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
        reason: reason("reason", why.unwrap_or(DEFAULT_RELEASE_REASON))?,
    })
}

pub fn expire(reservation_id: &str) -> Result<Command, Rejection> {
    Ok(Command::Expire {
        reservation_id: ReservationId::parse("reservation_id", reservation_id)?,
    })
}
