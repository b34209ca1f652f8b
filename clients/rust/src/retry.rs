//! When a call is sent again, and for how long.
//!
//! The contract (docs/openapi.json, README "HTTP API") makes every command
//! safe to send again with the same ids: a retry gets the original answer.
//! So a call is retried on what says "not now": `503 UNAVAILABLE` and
//! `429 RATE_LIMITED` (after their `Retry-After`), and a connection that
//! could not be made or broke before an answer came. Nothing else is retried:
//! a rejection is the ledger's answer, and a `500` is a bug that a retry
//! would only repeat.

use std::time::Duration;

/// A call's deadline when the caller sets none: the server's own request
/// timeout (10 s) and a little more, so that its `503` arrives in time.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(12);

/// Attempts per call at most, whatever the deadline leaves.
pub const MAX_ATTEMPTS: u32 = 10;

/// The pause after the first failed attempt; it doubles after each.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(50);

/// The longest pause between attempts (a `Retry-After` may ask for more,
/// and gets it when the deadline allows).
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How a call is retried.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// The whole call, all attempts and pauses included.
    pub deadline: Duration,
    /// Attempts at most (1: never retried).
    pub max_attempts: u32,
    /// The pause after the first failed attempt; it doubles after each.
    pub first_backoff: Duration,
    /// The longest pause between attempts, unless `Retry-After` asks for more.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            deadline: DEFAULT_DEADLINE,
            max_attempts: MAX_ATTEMPTS,
            first_backoff: FIRST_BACKOFF,
            max_backoff: MAX_BACKOFF,
        }
    }
}

impl RetryPolicy {
    /// The pause before attempt `attempt + 1` (`attempt` from 1), at least
    /// what the server asked for, with up to a quarter of jitter so that
    /// callers refused together do not come back together.
    pub fn pause(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let doubled = self
            .first_backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let base = doubled.min(self.max_backoff);
        let jitter = base.mul_f64(jitter_fraction() * 0.25);
        (base + jitter).max(retry_after.unwrap_or_default())
    }
}

/// A fraction in [0, 1) that differs between calls (from a fresh v4
/// uuid's first 48 bits, all random: its version and variant bits come
/// later; no random-number crate for one number).
fn jitter_fraction() -> f64 {
    let bits = (uuid::Uuid::new_v4().as_u128() >> 80) as u64;
    bits as f64 / (1u64 << 48) as f64
}

/// Whether an answer with this status is one to send again.
pub fn retryable_status(status: u16) -> bool {
    status == 503 || status == 429
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_cap_and_honour_retry_after() {
        let p = RetryPolicy::default();
        let first = p.pause(1, None);
        assert!(
            first >= FIRST_BACKOFF && first < FIRST_BACKOFF.mul_f64(1.26),
            "{first:?}"
        );
        let third = p.pause(3, None);
        assert!(third >= FIRST_BACKOFF * 4, "{third:?}");
        let late = p.pause(30, None);
        assert!(
            late >= MAX_BACKOFF && late <= MAX_BACKOFF.mul_f64(1.25),
            "{late:?}"
        );
        assert_eq!(
            p.pause(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
    }

    #[test]
    fn jitter_spans_its_whole_range() {
        let draws: Vec<f64> = (0..2000).map(|_| jitter_fraction()).collect();
        assert!(draws.iter().all(|f| (0.0..1.0).contains(f)));
        assert!(draws.iter().any(|f| *f < 0.1), "low values occur");
        assert!(draws.iter().any(|f| *f > 0.9), "high values occur");
    }

    #[test]
    fn only_not_now_answers_are_retried() {
        for (status, retried) in [
            (503, true),
            (429, true),
            (500, false),
            (409, false),
            (400, false),
            (401, false),
            (200, false),
        ] {
            assert_eq!(retryable_status(status), retried, "{status}");
        }
    }
}
