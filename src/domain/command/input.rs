//! What several commands read from their requests: lines, quantities,
//! reasons, items and times to live. Each check names the field it refuses,
//! so a caller knows what to fix; nothing unvalidated gets past these.

use serde::{Deserialize, Serialize};

pub use crate::domain::ids::Line;
use crate::domain::ids::{Item, Location, Sku};
use crate::domain::{number, Rejection};
use crate::limits::{
    MAX_EXPECTED_DATE, MAX_LINES_PER_RESERVATION, MAX_QUANTITY, MAX_RAW_LINES_PER_RESERVATION,
    MAX_REASON_LEN, MAX_TTL_SECONDS, MIN_EXPECTED_DATE, MIN_TTL_SECONDS,
};

/// The reason recorded when a release names none.
pub const DEFAULT_RELEASE_REASON: &str = "cancelled";

/// One line of a request, as sent.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LineRequest {
    pub sku: String,
    #[serde(default)]
    pub location: Option<String>,
    #[serde(deserialize_with = "number::whole")]
    pub quantity: i64,
}

/// A quantity from 1 to the limit.
pub(crate) fn quantity(field: &str, q: i64) -> Result<u32, Rejection> {
    if q < 1 || q > i64::from(MAX_QUANTITY) {
        return Err(Rejection::invalid(
            field,
            format!("must be a whole number from 1 to {MAX_QUANTITY}"),
        ));
    }
    Ok(q as u32)
}

/// A calendar date, exactly `YYYY-MM-DD` from `MIN_EXPECTED_DATE` to
/// `MAX_EXPECTED_DATE`. The text must read back as it was sent: chrono alone
/// also takes `+12345-01-01` and `2026-1-9`, and PostgreSQL's `date` has no
/// year 0.
pub(crate) fn date(field: &str, text: &str) -> Result<chrono::NaiveDate, Rejection> {
    let refuse = || {
        Rejection::invalid(
            field,
            format!("must be a date YYYY-MM-DD from {MIN_EXPECTED_DATE} to {MAX_EXPECTED_DATE}"),
        )
    };
    let d = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| refuse())?;
    let shown = d.format("%Y-%m-%d").to_string();
    if shown != text || !(MIN_EXPECTED_DATE..=MAX_EXPECTED_DATE).contains(&text) {
        return Err(refuse());
    }
    Ok(d)
}

/// A setting's units (a limit, a reorder point): 0 to the quantity limit,
/// or `None` to clear it.
pub(crate) fn setting_units(field: &str, v: Option<i64>) -> Result<Option<u32>, Rejection> {
    match v {
        None => Ok(None),
        Some(n) if (0..=i64::from(MAX_QUANTITY)).contains(&n) => Ok(Some(n as u32)),
        Some(_) => Err(Rejection::invalid(
            field,
            format!("must be a whole number from 0 to {MAX_QUANTITY}, or null"),
        )),
    }
}

/// Free text of 1 to the limit's characters, none that free text may not
/// hold (`domain::text`).
pub(crate) fn reason(field: &str, text: &str) -> Result<String, Rejection> {
    let len = text.chars().count();
    if len == 0 || len > MAX_REASON_LEN {
        return Err(Rejection::invalid(
            field,
            format!("must be 1 to {MAX_REASON_LEN} characters"),
        ));
    }
    crate::domain::text::check(field, text)?;
    Ok(text.to_owned())
}

/// An item; `prefix` names where it sits in the request (`lines[2].`).
pub(crate) fn item(sku: &str, location: Option<&str>, prefix: &str) -> Result<Item, Rejection> {
    Ok(Item {
        sku: Sku::parse(&format!("{prefix}sku"), sku)?,
        location: Location::parse_or_default(&format!("{prefix}location"), location)?,
    })
}

/// Validates and normalises the lines of a reserve or of a partial confirm
/// or release: 1 to the line limit, merged per item (quantities added, each
/// total within the quantity limit) and sorted by (location, sku).
pub(crate) fn merge_lines(raw: &[LineRequest]) -> Result<Vec<Line>, Rejection> {
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
pub(crate) fn ttl(field: &str, t: i64) -> Result<u32, Rejection> {
    if t >= i64::from(MIN_TTL_SECONDS) && t <= i64::from(MAX_TTL_SECONDS) {
        return Ok(t as u32);
    }
    Err(Rejection::invalid(
        field,
        format!("must be from {MIN_TTL_SECONDS} to {MAX_TTL_SECONDS} seconds"),
    ))
}
