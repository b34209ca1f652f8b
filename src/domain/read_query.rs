//! What a read may ask for, validated once for every way in: a query string
//! and a command-line flag both arrive as text, and both get the same rules
//! and the same rejections.

use chrono::{DateTime, Utc};

use crate::domain::Rejection;
use crate::limits::{DEFAULT_EVENTS_PER_READ, MAX_EVENTS_PER_READ};

/// A past moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsOf {
    /// Every event recorded at or before this time.
    Time(DateTime<Utc>),
    /// Every event at or before this log position.
    Position(i64),
}

impl AsOf {
    /// The moment asked for by `as_of` (an RFC 3339 time) or `as_of_position`
    /// (a log position); at most one of them.
    pub fn parse(time: Option<&str>, position: Option<&str>) -> Result<Option<AsOf>, Rejection> {
        match (time, position) {
            (Some(_), Some(_)) => Err(Rejection::invalid(
                "as_of",
                "give as_of or as_of_position, not both",
            )),
            (Some(t), None) => Ok(Some(AsOf::Time(
                DateTime::parse_from_rfc3339(t)
                    .map_err(|e| Rejection::invalid("as_of", format!("not an RFC 3339 time: {e}")))?
                    .with_timezone(&Utc),
            ))),
            (None, Some(p)) => Ok(Some(AsOf::Position(
                p.parse::<i64>().ok().filter(|p| *p >= 0).ok_or_else(|| {
                    Rejection::invalid("as_of_position", "must be a whole number >= 0")
                })?,
            ))),
            (None, None) => Ok(None),
        }
    }
}

/// How many events a page of the log holds: `limit`, from 1 to
/// `MAX_EVENTS_PER_READ`, or `DEFAULT_EVENTS_PER_READ` when not given.
pub fn page_limit(limit: Option<&str>) -> Result<i64, Rejection> {
    let Some(limit) = limit else {
        return Ok(DEFAULT_EVENTS_PER_READ);
    };
    limit
        .parse::<i64>()
        .ok()
        .filter(|l| (1..=MAX_EVENTS_PER_READ).contains(l))
        .ok_or_else(|| {
            Rejection::invalid("limit", format!("must be from 1 to {MAX_EVENTS_PER_READ}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(r: Result<impl std::fmt::Debug, Rejection>) -> String {
        r.expect_err("refused").to_string()
    }

    #[test]
    fn as_of_takes_a_time_or_a_position_not_both() {
        assert_eq!(AsOf::parse(None, None), Ok(None));
        assert_eq!(AsOf::parse(None, Some("7")), Ok(Some(AsOf::Position(7))));
        let t = AsOf::parse(Some("2026-12-02T10:00:00+01:00"), None).expect("valid");
        assert_eq!(
            t,
            Some(AsOf::Time("2026-12-02T09:00:00Z".parse().expect("a time")))
        );
        assert!(refused(AsOf::parse(Some("2026-12-02T09:00:00Z"), Some("7"))).contains("not both"));
        assert!(refused(AsOf::parse(Some("yesterday"), None)).contains("RFC 3339"));
        assert!(refused(AsOf::parse(None, Some("-1"))).contains(">= 0"));
        assert!(refused(AsOf::parse(None, Some("1.5"))).contains(">= 0"));
    }

    #[test]
    fn a_page_holds_one_to_the_maximum() {
        assert_eq!(page_limit(None), Ok(DEFAULT_EVENTS_PER_READ));
        assert_eq!(page_limit(Some("1")), Ok(1));
        let max = MAX_EVENTS_PER_READ.to_string();
        assert_eq!(page_limit(Some(&max)), Ok(MAX_EVENTS_PER_READ));
        for bad in ["0", "-3", "x", &(MAX_EVENTS_PER_READ + 1).to_string()] {
            assert!(
                refused(page_limit(Some(bad))).contains("from 1 to"),
                "{bad}"
            );
        }
    }
}
