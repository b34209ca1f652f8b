//! Rate limits per key (API key name, or client address), by `governor`'s
//! GCRA: a burst, then a steady rate. Memory is bounded: once more than
//! `MAX_CACHED_KEYS` keys are tracked, keys whose bucket has refilled (which
//! are indistinguishable from new ones) are forgotten.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use moka::sync::Cache;

use crate::limits::{MAX_CACHED_KEYS, RATE_BLOCKED_MEMORY_SECONDS};

pub struct RateLimiter {
    limiter: DefaultKeyedRateLimiter<String>,
    clock: DefaultClock,
}

impl RateLimiter {
    /// `per_second` steady, `burst` at once; zero is taken as one.
    pub fn new(per_second: u32, burst: u32) -> Self {
        let one = NonZeroU32::MIN;
        let quota = Quota::per_second(NonZeroU32::new(per_second).unwrap_or(one))
            .allow_burst(NonZeroU32::new(burst).unwrap_or(one));
        RateLimiter {
            limiter: DefaultKeyedRateLimiter::keyed(quota),
            clock: DefaultClock::default(),
        }
    }

    /// Takes a token for `key`, or says how many whole seconds until one is
    /// free (at least one: it becomes a `Retry-After`).
    pub fn check(&self, key: &str) -> Result<(), u64> {
        if self.limiter.len() >= MAX_CACHED_KEYS {
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&key.to_owned())
            .map_err(|not_until| {
                let wait = not_until.wait_time_from(self.clock.now());
                wait.as_secs_f64().ceil().max(1.0) as u64
            })
    }
}

/// A budget that only some requests use up, checked before the costly work
/// and charged after it, once the work turned out to be chargeable (a key
/// lookup that found no key). A refused charge blocks the key until its
/// bucket has a token again.
pub struct ChargedAfter {
    limiter: RateLimiter,
    blocked: Cache<String, Instant>,
}

impl ChargedAfter {
    pub fn new(per_second: u32, burst: u32) -> Self {
        ChargedAfter {
            limiter: RateLimiter::new(per_second, burst),
            blocked: Cache::builder()
                .max_capacity(MAX_CACHED_KEYS as u64)
                .time_to_live(Duration::from_secs(RATE_BLOCKED_MEMORY_SECONDS))
                .build(),
        }
    }

    /// Whether `key` may start costly work now, or how many seconds until it may.
    pub fn allowed(&self, key: &str) -> Result<(), u64> {
        match self.blocked.get(key) {
            Some(until) if until > Instant::now() => {
                let wait = until.saturating_duration_since(Instant::now());
                Err(wait.as_secs_f64().ceil().max(1.0) as u64)
            }
            Some(_) | None => Ok(()),
        }
    }

    /// Uses up one unit of `key`'s budget.
    pub fn charge(&self, key: &str) {
        if let Err(seconds) = self.limiter.check(key) {
            let until = Instant::now() + Duration::from_secs(seconds);
            self.blocked.insert(key.to_owned(), until);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charged_budget_blocks_only_once_spent() {
        let budget = ChargedAfter::new(1, 2);
        assert!(budget.allowed("a").is_ok());
        budget.charge("a");
        budget.charge("a");
        assert!(budget.allowed("a").is_ok(), "the burst is not spent yet");
        budget.charge("a");
        assert_eq!(budget.allowed("a"), Err(1));
        assert!(budget.allowed("b").is_ok(), "budgets are per key");
    }

    #[test]
    fn the_bucket_refuses_past_the_burst_and_names_a_wait() {
        let limiter = RateLimiter::new(1, 2);
        assert!(limiter.check("k").is_ok());
        assert!(limiter.check("k").is_ok());
        assert_eq!(limiter.check("k"), Err(1));
        assert!(limiter.check("other").is_ok(), "buckets are per key");
    }

    #[test]
    fn memory_stays_bounded_by_forgetting_full_buckets() {
        let limiter = RateLimiter::new(1_000_000, 1);
        for i in 0..(MAX_CACHED_KEYS * 2) {
            let _ = limiter.check(&format!("k{i}"));
        }
        assert!(limiter.limiter.len() <= MAX_CACHED_KEYS + 1);
    }
}
