//! The input rules as JSON Schema, for the API description.
//!
//! Each schema here is built from the same constants (`crate::limits`) that
//! the validation in this module's siblings checks, so the published contract
//! cannot drift from the served one: change a limit and both move. The tests
//! at the bottom hold each pattern to the function that enforces it.
//!
//! Rules that JSON Schema cannot say (lines for the same item are merged
//! before the line and quantity limits are counted) are in the descriptions.

use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{
    ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};

use crate::domain::command::DEFAULT_RELEASE_REASON;
use crate::domain::ids::DEFAULT_LOCATION;
use crate::limits::{
    DEFAULT_EVENTS_PER_READ, DEFAULT_TTL_SECONDS, MAX_ADJUST_DELTA, MAX_CURSOR_PART_DIGITS,
    MAX_EVENTS_PER_READ, MAX_EXPECTED_DATE, MAX_ID_LEN, MAX_LINES_PER_RESERVATION,
    MAX_METADATA_ID_LEN, MAX_QUANTITY, MAX_RAW_LINES_PER_RESERVATION, MAX_REASON_LEN,
    MAX_STREAM_PREFIX_LEN, MAX_TTL_SECONDS, MIN_EXPECTED_DATE, MIN_TTL_SECONDS,
};

/// The characters of an id, as a regular expression character class.
const ID_CHARACTERS: &str = "A-Za-z0-9._:-";

/// Free text (a reason, a stream prefix): anything but control characters
/// (Unicode category Cc, which is what `char::is_control` tests) and the
/// format characters that make a line read other than it is
/// (`domain::text::REFUSED_FORMAT_CHARACTERS`). The
/// length is left to `minLength`/`maxLength`, which count code points in
/// every dialect (a regex quantifier in ECMA-262 without the `u` flag counts
/// a character beyond the BMP twice).
fn no_control_or_format_characters() -> String {
    let mut class = String::from(r"\u0000-\u001F\u007F-\u009F");
    for &(lo, hi) in crate::domain::text::REFUSED_FORMAT_CHARACTERS {
        class.push_str(&format!("\\u{:04X}", lo as u32));
        if hi != lo {
            class.push_str(&format!("-\\u{:04X}", hi as u32));
        }
    }
    format!("^[^{class}]+$")
}

/// The pattern of an id: 1 to `MAX_ID_LEN` characters of `A-Z a-z 0-9 . _ : -`,
/// but not `.` or `..`. Written without lookahead, which not every regex
/// dialect has: an id starts with a character that is no dot, or with one
/// dot and such a character, or with two dots and anything.
pub fn id_pattern() -> String {
    let any = ID_CHARACTERS;
    let no_dot = ID_CHARACTERS.replace('.', "");
    let (n1, n2) = (MAX_ID_LEN - 1, MAX_ID_LEN - 2);
    format!(
        "^([{no_dot}][{any}]{{0,{n1}}}|\\.[{no_dot}][{any}]{{0,{n2}}}|\\.\\.[{any}]{{1,{n2}}})$"
    )
}

/// The pattern of free text (its length is `minLength`/`maxLength`).
pub fn text_pattern() -> String {
    no_control_or_format_characters()
}

/// The pattern of a correlation or causation id: 1 to `MAX_METADATA_ID_LEN`
/// printable ASCII characters (space to `~`), neither first nor last a
/// space. HTTP strips spaces around a header value, so a value that began
/// or ended with one would not arrive as it was sent.
pub fn metadata_id_pattern() -> String {
    let inner = MAX_METADATA_ID_LEN - 2;
    format!("^[!-~]([ -~]{{0,{inner}}}[!-~])?$")
}

/// The pattern of a log cursor: `TX:POSITION`, two whole numbers.
pub fn cursor_pattern() -> String {
    format!("^[0-9]{{1,{MAX_CURSOR_PART_DIGITS}}}:[0-9]{{1,{MAX_CURSOR_PART_DIGITS}}}$")
}

fn string(pattern: String, max_len: usize, description: impl Into<String>) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(max_len))
        .pattern(Some(pattern))
        .description(Some(description))
}

fn integer(min: i64, max: i64, description: impl Into<String>) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(min))
        .maximum(Some(max))
        .description(Some(description))
}

/// An optional field: `null` is read as left out, as serde reads `Option`.
fn or_null(b: ObjectBuilder, of: Type) -> ObjectBuilder {
    b.schema_type(SchemaType::from_iter([of, Type::Null]))
}

/// Any id: a SKU, an order id, a command id.
pub fn id() -> Schema {
    string(
        id_pattern(),
        MAX_ID_LEN,
        format!("1 to {MAX_ID_LEN} characters of A-Z a-z 0-9 . _ : -"),
    )
    .into()
}

/// A location; `default` when left out.
pub fn location() -> Schema {
    let b = string(
        id_pattern(),
        MAX_ID_LEN,
        format!("A warehouse or store, an id like any other; {DEFAULT_LOCATION:?} when left out."),
    )
    .default(Some(DEFAULT_LOCATION.into()));
    or_null(b, Type::String).into()
}

/// A transfer's source.
pub fn from_location() -> Schema {
    string(
        id_pattern(),
        MAX_ID_LEN,
        "Where the stock leaves, an id like a location; its available stock must cover the quantity."
            .to_owned(),
    )
    .into()
}

/// A transfer's destination: what JSON Schema cannot say is in its words.
pub fn to_location() -> Schema {
    string(
        id_pattern(),
        MAX_ID_LEN,
        "Where the stock arrives, an id like a location. Another location than from_location \
         (the same one is INVALID_ARGUMENT)."
            .to_owned(),
    )
    .into()
}

/// A stock count's counted units: 0 is a count too (an empty shelf).
pub fn counted() -> Schema {
    integer(
        0,
        i64::from(MAX_QUANTITY),
        "Units found on the shelf, a whole number; 0 for none.",
    )
    .into()
}

/// An item's per-order limit: required, `null` to lift it.
pub fn max_per_order() -> Schema {
    let b = integer(
        0,
        i64::from(MAX_QUANTITY),
        "The most units of the item one order may reserve, a whole number; 0 stops new \
         reservations of the item. `null` lifts the limit. Required, so that a field left \
         out never lifts one.",
    );
    or_null(b, Type::Integer).into()
}

/// An item's reorder point: required, `null` to remove it.
pub fn reorder_point() -> Schema {
    let b = integer(
        0,
        i64::from(MAX_QUANTITY),
        "The item is low while its available units are below this, a whole number; 0 is \
         never reached. `null` removes the point. Required, so that a field left out never \
         removes one.",
    );
    or_null(b, Type::Integer).into()
}

/// The units an expected receipt expects in all.
pub fn expected_units() -> Schema {
    integer(
        1,
        i64::from(MAX_QUANTITY),
        "The units expected in all, a whole number; units already delivered count towards them.",
    )
    .into()
}

/// A quantity on a receipt or a reservation line.
pub fn quantity() -> Schema {
    integer(
        1,
        i64::from(MAX_QUANTITY),
        "Units, a whole number. On a reservation, lines for the same item are added up \
         first, and their sum is held to the same bounds.",
    )
    .into()
}

/// The expected receipt a receipt is delivered against; `null` or left out
/// for none.
pub fn expected_id() -> Schema {
    or_null(
        string(
            id_pattern(),
            MAX_ID_LEN,
            "The expected receipt this receipt delivers against: its units are no longer \
             incoming. Left out or null for none.",
        ),
        Type::String,
    )
    .into()
}

/// A calendar date, `YYYY-MM-DD`, from `MIN_EXPECTED_DATE` to
/// `MAX_EXPECTED_DATE` (the years four digits hold and PostgreSQL's `date`
/// shares).
pub fn date() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Date,
        )))
        .description(Some(format!(
            "A date, YYYY-MM-DD, from {MIN_EXPECTED_DATE} to {MAX_EXPECTED_DATE}."
        )))
        .into()
}

/// Whether a reserve lets what is not on hand wait for expected stock.
pub fn backorder() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::Boolean)
        .default(Some(false.into()))
        .description(Some(
            "Let the units not on hand wait for stock that is expected (a backorder, or a \
             pre-order when nothing is on hand), within what can be promised by \
             `latest_arrival`. They are filled first come, first served as stock arrives.",
        ))
        .into()
}

/// The latest date a backorder accepts stock to arrive by.
pub fn latest_arrival() -> Schema {
    let b = ObjectBuilder::new()
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Date,
        )))
        .description(Some(format!(
            "With `backorder`: only stock expected on or before this date (YYYY-MM-DD, from \
             {MIN_EXPECTED_DATE} to {MAX_EXPECTED_DATE}) counts; every expected unit counts \
             when it is left out or null. Read only with `backorder`: true."
        )));
    or_null(b, Type::String).into()
}

/// An adjustment's change to on-hand stock: never zero.
pub fn delta() -> Schema {
    let max = i64::from(MAX_ADJUST_DELTA);
    OneOfBuilder::new()
        .item(integer(-max, -1, "Units taken out of stock."))
        .item(integer(1, max, "Units added to stock."))
        .description(Some(
            "The change to on-hand stock, a whole number, never 0: negative for \
             damage or loss, positive for found stock.",
        ))
        .into()
}

/// A reason for an adjustment or a release.
pub fn reason() -> Schema {
    string(
        text_pattern(),
        MAX_REASON_LEN,
        format!(
            "Why, in words: 1 to {MAX_REASON_LEN} characters, no control characters, no bidirectional or invisible format characters."
        ),
    )
    .into()
}

/// A release's reason: optional, with a default.
pub fn release_reason() -> Schema {
    let b = string(
        text_pattern(),
        MAX_REASON_LEN,
        format!(
            "Why, in words: 1 to {MAX_REASON_LEN} characters, no control characters, no bidirectional or invisible format characters; \
             {DEFAULT_RELEASE_REASON:?} when left out."
        ),
    )
    .default(Some(DEFAULT_RELEASE_REASON.into()));
    or_null(b, Type::String).into()
}

/// A reservation's time to live, in seconds.
pub fn ttl_seconds() -> Schema {
    let b = integer(
        i64::from(MIN_TTL_SECONDS),
        i64::from(MAX_TTL_SECONDS),
        "Seconds until the reservation expires unless confirmed.",
    )
    .default(Some(DEFAULT_TTL_SECONDS.into()));
    or_null(b, Type::Integer).into()
}

/// An extension's time to live, in seconds: required, from now.
pub fn extension_ttl() -> Schema {
    integer(
        i64::from(MIN_TTL_SECONDS),
        i64::from(MAX_TTL_SECONDS),
        format!(
            "Seconds from now until the reservation expires. The new expiry must be later \
             than the current one (else EXPIRY_NOT_LATER), and no hold may last longer \
             than {MAX_TTL_SECONDS} seconds from its reserve in all (else HOLD_TOO_LONG)."
        ),
    )
    .into()
}

/// The vendor extension on `lines` that gives the limit on lines after
/// merging, for tools (the contract check reads it) that cannot read prose.
pub const MERGED_LINES_EXTENSION: &str = "x-max-items-after-merging";

/// A reservation's lines, as sent.
pub fn lines() -> Schema {
    ArrayBuilder::new()
        .items(RefOr::Ref(Ref::from_schema_name("LineRequest")))
        .min_items(Some(1))
        .max_items(Some(MAX_RAW_LINES_PER_RESERVATION))
        .extensions(Some(Extensions::from_iter([(
            MERGED_LINES_EXTENSION,
            serde_json::json!(MAX_LINES_PER_RESERVATION),
        )])))
        .description(Some(format!(
            "The items to hold, all or nothing. Lines for the same item (sku and location) \
             are added up into one; after that there must be at most \
             {MAX_LINES_PER_RESERVATION} lines, and each sum must be a valid quantity. \
             A request is refused before any line is read when it has more than \
             {MAX_RAW_LINES_PER_RESERVATION}."
        )))
        .into()
}

/// A correlation or causation id, sent as a header.
pub fn metadata_id() -> Schema {
    string(
        metadata_id_pattern(),
        MAX_METADATA_ID_LEN,
        format!(
            "Kept in the metadata of the events the command appends: 1 to \
             {MAX_METADATA_ID_LEN} printable ASCII characters, neither first nor last a space."
        ),
    )
    .into()
}

/// How many events one read of the log returns.
pub fn events_limit() -> Schema {
    integer(1, MAX_EVENTS_PER_READ, "Most events in the page.")
        .default(Some(DEFAULT_EVENTS_PER_READ.into()))
        .into()
}

/// Where a read of the log starts.
pub fn cursor() -> Schema {
    string(
        cursor_pattern(),
        2 * MAX_CURSOR_PART_DIGITS + 1,
        "A place in the log, TX:POSITION: the `next` of a page, or the `id` of a streamed \
         event. Reading starts after it; at the start of the log when left out.",
    )
    .into()
}

/// A string holding a JSON document.
pub fn json_text() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .content_media_type("application/json")
        .into()
}

/// A stream prefix to filter a read of the log by.
pub fn stream_prefix() -> Schema {
    string(
        text_pattern(),
        MAX_STREAM_PREFIX_LEN,
        "Only events of streams whose name starts with this, e.g. `reservation:`.",
    )
    .into()
}

/// A past moment, as a time.
pub fn as_of_time() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::DateTime,
        )))
        .description(Some(
            "An RFC 3339 time: the figures at that moment, replayed from the log. A moment \
             the log may still change at (at or after the start of the oldest open \
             transaction, or in the future) is clamped to just before it, and the answer's \
             `as_of.clamped` says so. Not together with `as_of_position`.",
        ))
        .into()
}

/// A past moment, as a log position.
pub fn as_of_position() -> Schema {
    integer(
        0,
        i64::MAX,
        "A log position: the figures with every event up to it, replayed from the log; \
         only committed events below the safe horizon count (clamped to the last of them; \
         `as_of.clamped` says so). Not together with `as_of`.",
    )
    .into()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use regex::Regex;

    use super::*;
    use crate::domain::ids::check_id;

    fn matches(pattern: &str, s: &str) -> bool {
        Regex::new(pattern)
            .expect("the pattern compiles")
            .is_match(s)
    }

    /// Characters from every class a rule tells apart: id characters, other
    /// ASCII, spaces, control characters (C0, DEL, C1), format characters
    /// (refused and taken) and beyond ASCII.
    fn text() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            proptest::char::range('a', 'c'),
            Just('Z'),
            Just('7'),
            Just('.'),
            Just('_'),
            Just(':'),
            Just('-'),
            Just(' '),
            Just('/'),
            Just('~'),
            Just('\0'),
            Just('\n'),
            Just('\u{7f}'),
            Just('\u{85}'),
            Just('é'),
            Just('\u{1F600}'),
            Just('\u{202E}'),
            Just('\u{200B}'),
            Just('\u{200D}'),
            Just('\u{FEFF}'),
            Just('\u{E0041}'),
        ];
        proptest::collection::vec(c, 0..140).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #[test]
        fn the_id_pattern_is_the_id_rule(
            s in prop_oneof![text(), "[A-Za-z0-9._:-]{0,70}", "[ -~]{0,130}"]
        ) {
            prop_assert_eq!(matches(&id_pattern(), &s), check_id("id", &s).is_ok(), "{:?}", s);
        }

        #[test]
        fn the_reason_pattern_is_the_reason_rule(
            s in prop_oneof![text(), "[a-c\u{e9}\u{1F600}]{190,210}"]
        ) {
            let valid = crate::domain::command::release("r", Some(&s)).is_ok();
            let length = (1..=MAX_REASON_LEN).contains(&s.chars().count());
            prop_assert_eq!(matches(&text_pattern(), &s) && length, valid, "{:?}", s);
        }

        #[test]
        fn the_metadata_pattern_is_the_metadata_rule(s in prop_oneof![text(), "[ -~]{0,130}"]) {
            let mut ctx = crate::domain::CommandContext::with_id("key:k", uuid::Uuid::nil());
            ctx.correlation_id = Some(s.clone());
            prop_assert_eq!(matches(&metadata_id_pattern(), &s), ctx.validate().is_ok(), "{:?}", s);
        }
    }

    #[test]
    fn the_patterns_say_their_limits() {
        assert!(matches(&id_pattern(), &"a".repeat(MAX_ID_LEN)));
        for dots in [".", ".."] {
            assert!(!matches(&id_pattern(), dots));
        }
        for ok in [
            "...",
            ".a",
            "..a",
            "a.",
            "a..",
            "a",
            &".".repeat(MAX_ID_LEN),
        ] {
            assert!(matches(&id_pattern(), ok), "{ok}");
        }
        assert!(!matches(&id_pattern(), &".".repeat(MAX_ID_LEN + 1)));
        assert!(!matches(
            &id_pattern(),
            &format!("..{}", "a".repeat(MAX_ID_LEN - 1))
        ));
        assert!(!matches(&id_pattern(), &"a".repeat(MAX_ID_LEN + 1)));
        assert!(matches(
            &metadata_id_pattern(),
            &"a".repeat(MAX_METADATA_ID_LEN)
        ));
        assert!(matches(&metadata_id_pattern(), "a"));
        assert!(matches(&metadata_id_pattern(), "a b"));
        assert!(!matches(
            &metadata_id_pattern(),
            &"a".repeat(MAX_METADATA_ID_LEN + 1)
        ));
        assert!(matches(&cursor_pattern(), "0:0"));
        assert!(!matches(&cursor_pattern(), "-1:0"));
        assert!(!matches(
            &cursor_pattern(),
            &format!("{}:0", "9".repeat(19))
        ));
    }
}
