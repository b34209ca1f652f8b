//! Whole numbers as the contract reads them.
//!
//! The API description calls quantities, deltas and times to live
//! `integer`, and JSON Schema counts any number with no fractional part as
//! an integer: `2`, `2.0` and `2e0` are the same value. Clients written in
//! languages whose JSON numbers are floats send the second form, so these
//! fields take all three (decision in `docs/domain.md`). A number with a
//! fraction is refused with the field named. A number too large for 64 bits
//! is read as the largest one, which every range check then refuses with its
//! own message, so the caller learns the real bounds.

use std::fmt;

use serde::de::{self, Deserializer, Unexpected, Visitor};

struct WholeNumber;

impl Visitor<'_> for WholeNumber {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a whole number")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        Ok(i64::try_from(v).unwrap_or(i64::MAX))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        if v.is_finite() && v.fract() == 0.0 {
            // `as` saturates: out-of-range values become i64::MIN or MAX,
            // and the range check that follows refuses them.
            Ok(v as i64)
        } else {
            Err(E::invalid_value(Unexpected::Float(v), &self))
        }
    }
}

/// For `#[serde(deserialize_with)]` on a required whole-number field.
pub fn whole<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    d.deserialize_any(WholeNumber)
}

/// For `#[serde(default, deserialize_with)]` on an optional one. An explicit
/// `null` reads as absent, as it does for every optional field.
pub fn optional_whole<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    struct Optional;
    impl<'de> Visitor<'de> for Optional {
        type Value = Option<i64>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a whole number or null")
        }
        fn visit_none<E: de::Error>(self) -> Result<Option<i64>, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Option<i64>, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<i64>, D::Error> {
            whole(d).map(Some)
        }
    }
    d.deserialize_option(Optional)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    struct Body {
        #[serde(deserialize_with = "super::whole")]
        n: i64,
        #[serde(default, deserialize_with = "super::optional_whole")]
        m: Option<i64>,
    }

    fn read(json: &str) -> Result<Body, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn a_whole_number_may_be_written_as_json_schema_allows() {
        for (json, n) in [
            (r#"{"n": 2}"#, 2),
            (r#"{"n": 2.0}"#, 2),
            (r#"{"n": 2e0}"#, 2),
            (r#"{"n": -3.0}"#, -3),
            (r#"{"n": 1e300}"#, i64::MAX),
            (r#"{"n": 18446744073709551615}"#, i64::MAX),
        ] {
            assert_eq!(read(json).unwrap().n, n, "{json}");
        }
        assert_eq!(read(r#"{"n": 1, "m": 5.0}"#).unwrap().m, Some(5));
        assert_eq!(read(r#"{"n": 1, "m": null}"#).unwrap().m, None);
        assert_eq!(read(r#"{"n": 1}"#).unwrap().m, None);
    }

    #[test]
    fn anything_else_is_refused() {
        for json in [
            r#"{"n": 2.5}"#,
            r#"{"n": "2"}"#,
            r#"{"n": true}"#,
            r#"{"n": null}"#,
            r#"{"n": 1, "m": 0.5}"#,
            r#"{"n": 1, "m": "5"}"#,
        ] {
            let e = read(json).unwrap_err();
            assert!(e.contains("whole number"), "{json}: {e}");
        }
    }
}
