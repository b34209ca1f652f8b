//! Who is calling, and may they. A caller presents `Authorization: Bearer
//! <key>`; the server hashes it, finds the live key with that hash (cached
//! for a few seconds), compares the hashes in constant time, charges the
//! key's rate limit, and hands the handler a `Caller` that each route checks
//! for the role it needs. In development mode every caller is an admin.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use crate::limits::MAX_CACHED_KEYS;
use crate::server::error::ApiError;
use crate::server::AppState;
use crate::store::keys::{self, ApiKey, Role};
use crate::store::pool;

/// What a route needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Append commands: writer, admin.
    Write,
    /// Read stock, reservations, orders: every role.
    Read,
    /// Read the log and projection status: auditor, admin.
    Audit,
}

impl Access {
    pub fn allows(self, role: Role) -> bool {
        match self {
            Access::Write => matches!(role, Role::Writer | Role::Admin),
            Access::Read => true,
            Access::Audit => matches!(role, Role::Auditor | Role::Admin),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Access::Write => "append commands",
            Access::Read => "read",
            Access::Audit => "read the log or projection status",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Caller {
    /// The key's name, recorded as the actor of every command it sends.
    pub name: String,
    pub role: Role,
}

impl Caller {
    pub fn require(&self, access: Access) -> Result<(), ApiError> {
        if access.allows(self.role) {
            Ok(())
        } else {
            Err(ApiError::Forbidden {
                role: self.role.as_str(),
                action: access.describe(),
            })
        }
    }
}

/// Compares two equal-length strings without stopping at the first difference.
fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A looked-up key with its stored hash, or `None` for no such live key.
type Found = Option<(ApiKey, String)>;

/// Recently looked-up keys, by hash; absent keys are remembered too, so a
/// flood of bad keys does not become a flood of queries.
pub struct KeyCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Found, Instant)>>,
}

impl KeyCache {
    pub fn new(ttl: Duration) -> Self {
        KeyCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, hash: &str) -> Option<Found> {
        let entries = self.entries.lock().expect("key cache lock");
        entries
            .get(hash)
            .filter(|(_, at)| at.elapsed() < self.ttl)
            .map(|(k, _)| k.clone())
    }

    fn put(&self, hash: String, key: Found) {
        let mut entries = self.entries.lock().expect("key cache lock");
        if entries.len() >= MAX_CACHED_KEYS {
            let ttl = self.ttl;
            entries.retain(|_, (_, at)| at.elapsed() < ttl);
            if entries.len() >= MAX_CACHED_KEYS {
                entries.clear();
            }
        }
        entries.insert(hash, (key, Instant::now()));
    }
}

/// A token bucket per key.
pub struct RateLimiter {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    pub fn new(per_second: u32, burst: u32) -> Self {
        RateLimiter {
            per_second: f64::from(per_second.max(1)),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a token for `key`, or says how many seconds until one is free.
    pub fn check(&self, key: &str) -> Result<(), u64> {
        let mut buckets = self.buckets.lock().expect("rate limiter lock");
        if buckets.len() >= MAX_CACHED_KEYS && !buckets.contains_key(key) {
            buckets.clear();
        }
        let now = Instant::now();
        let (tokens, last) = buckets.entry(key.to_owned()).or_insert((self.burst, now));
        *tokens =
            (*tokens + now.duration_since(*last).as_secs_f64() * self.per_second).min(self.burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - *tokens) / self.per_second).ceil().max(1.0) as u64)
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = if state.config.dev {
            Caller {
                name: "dev".into(),
                role: Role::Admin,
            }
        } else {
            let presented = parts
                .headers
                .get(AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim)
                .filter(|k| !k.is_empty() && k.len() <= 256)
                .ok_or(ApiError::Unauthenticated)?;
            let hash = keys::hash_key(presented);
            let found = match state.keys.get(&hash) {
                Some(cached) => cached,
                None => {
                    let client = pool::get(state.store.pool()).await?;
                    let found = keys::find(&client, &hash).await?;
                    state.keys.put(hash.clone(), found.clone());
                    found
                }
            };
            let (key, stored) = found.ok_or(ApiError::Unauthenticated)?;
            if !constant_time_eq(&stored, &hash) {
                return Err(ApiError::Unauthenticated);
            }
            Caller {
                name: key.name,
                role: key.role,
            }
        };
        state
            .limiter
            .check(&caller.name)
            .map_err(|retry_after| ApiError::RateLimited { retry_after })?;
        Ok(caller)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_get_what_the_contract_says() {
        use Access::*;
        use Role::*;
        let table = [
            (Writer, [true, true, false]),
            (Reader, [false, true, false]),
            (Auditor, [false, true, true]),
            (Admin, [true, true, true]),
        ];
        for (role, allowed) in table {
            assert_eq!(
                [Write.allows(role), Read.allows(role), Audit.allows(role)],
                allowed,
                "{role:?}"
            );
        }
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
    fn hashes_compare_exactly() {
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "ab"));
    }
}
