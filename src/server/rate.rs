//! Rate limits per key (API key name, or client address), by `governor`'s
//! GCRA: a burst, then a steady rate. Memory is bounded: once more than
//! `MAX_CACHED_KEYS` keys are tracked, keys whose bucket has refilled (which
//! are indistinguishable from new ones) are forgotten.

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::limits::MAX_CACHED_KEYS;

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
        self.limiter.check_key(&key.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            wait.as_secs_f64().ceil().max(1.0) as u64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
