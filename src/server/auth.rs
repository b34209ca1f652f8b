//! Who is calling, and may they. A caller presents `Authorization: Bearer
//! <key>`; the server hashes it, finds the live key with that hash (cached
//! for a few seconds), compares the hashes in constant time, charges the
//! key's rate limit, and hands the handler a `Caller` that each route checks
//! for the role it needs. In development mode every caller is an admin.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use crate::limits::{MAX_API_KEY_LEN, MAX_CACHED_KEYS};
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

/// Recently looked-up keys, by hash. Live keys and absent ones are kept
/// apart: a flood of made-up keys fills (and, when full, evicts from) only the
/// absent side, never pushing a good key out.
pub struct KeyCache {
    ttl: Duration,
    live: Mutex<HashMap<String, (Found, Instant)>>,
    absent: Mutex<HashMap<String, Instant>>,
}

impl KeyCache {
    pub fn new(ttl: Duration) -> Self {
        KeyCache {
            ttl,
            live: Mutex::new(HashMap::new()),
            absent: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, hash: &str) -> Option<Found> {
        if let Some((found, at)) = self.live.lock().expect("key cache lock").get(hash) {
            if at.elapsed() < self.ttl {
                return Some(found.clone());
            }
        }
        let absent = self.absent.lock().expect("key cache lock");
        absent
            .get(hash)
            .filter(|at| at.elapsed() < self.ttl)
            .map(|_| None)
    }

    fn put(&self, hash: String, key: Found) {
        let ttl = self.ttl;
        match key {
            Some(_) => {
                let mut live = self.live.lock().expect("key cache lock");
                make_room(&mut live, ttl, |(_, at)| *at);
                live.insert(hash, (key, Instant::now()));
            }
            None => {
                let mut absent = self.absent.lock().expect("key cache lock");
                make_room(&mut absent, ttl, |at| *at);
                absent.insert(hash, Instant::now());
            }
        }
    }
}

/// Makes room for one more entry: drops expired ones, then the oldest.
fn make_room<V>(map: &mut HashMap<String, V>, ttl: Duration, at: impl Fn(&V) -> Instant) {
    if map.len() < MAX_CACHED_KEYS {
        return;
    }
    map.retain(|_, v| at(v).elapsed() < ttl);
    if map.len() >= MAX_CACHED_KEYS {
        if let Some(oldest) = map
            .iter()
            .min_by_key(|(_, v)| at(v))
            .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
    }
}

/// The key presented in `Authorization: Bearer <key>`; the scheme's case does
/// not matter (RFC 9110 §11.1).
fn presented_key(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, key) = value.trim_start().split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty() && key.len() <= MAX_API_KEY_LEN)
        .then_some(key)
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

    /// Whether `key` has a token now, without taking it.
    pub fn peek(&self, key: &str) -> Result<(), u64> {
        let buckets = self.buckets.lock().expect("rate limiter lock");
        let Some((tokens, last)) = buckets.get(key) else {
            return Ok(());
        };
        let tokens = (tokens + last.elapsed().as_secs_f64() * self.per_second).min(self.burst);
        if tokens >= 1.0 {
            Ok(())
        } else {
            Err(((1.0 - tokens) / self.per_second).ceil().max(1.0) as u64)
        }
    }

    /// Takes a token for `key`, or says how many seconds until one is free.
    pub fn check(&self, key: &str) -> Result<(), u64> {
        let mut buckets = self.buckets.lock().expect("rate limiter lock");
        let now = Instant::now();
        if buckets.len() >= MAX_CACHED_KEYS && !buckets.contains_key(key) {
            // A bucket idle long enough to have refilled is full: forgetting
            // it changes nothing. Only then the one used longest ago goes.
            let refill = Duration::from_secs_f64(self.burst / self.per_second);
            buckets.retain(|_, (_, last)| now.duration_since(*last) < refill);
            if buckets.len() >= MAX_CACHED_KEYS {
                if let Some(k) = buckets
                    .iter()
                    .min_by_key(|(_, (_, l))| *l)
                    .map(|(k, _)| k.clone())
                {
                    buckets.remove(&k);
                }
            }
        }
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
            let presented = presented_key(&parts.headers).ok_or(ApiError::Unauthenticated)?;
            let hash = keys::hash_key(presented);
            let found = match state.keys.get(&hash) {
                Some(cached) => cached,
                None => {
                    // A key not in the cache costs a query: bounded per client
                    // address, so made-up keys cannot become a flood of queries.
                    let address = parts
                        .extensions
                        .get::<ConnectInfo<SocketAddr>>()
                        .map_or_else(|| "unknown".to_owned(), |c| c.0.ip().to_string());
                    // At most a few lookups run at once in the whole server;
                    // each then checks the address's budget, which only
                    // unknown keys use up (so a live key never costs its
                    // address anything, and concurrent unknown keys can
                    // overshoot the budget by at most the lookups in flight).
                    let _in_flight = state
                        .lookups_in_flight
                        .acquire()
                        .await
                        .map_err(|_| ApiError::unavailable("the server is shutting down"))?;
                    state
                        .lookups
                        .peek(&address)
                        .map_err(|retry_after| ApiError::RateLimited { retry_after })?;
                    let client = pool::get(state.store.pool()).await?;
                    let found = keys::find(&client, &hash).await?;
                    state.keys.put(hash.clone(), found.clone());
                    if found.is_none() {
                        let _ = state.lookups.check(&address);
                    }
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
    fn the_bearer_scheme_is_case_insensitive() {
        let mut headers = axum::http::HeaderMap::new();
        for (value, expected) in [
            ("Bearer k1", Some("k1")),
            ("bearer k1", Some("k1")),
            ("BEARER  k1 ", Some("k1")),
            ("Basic k1", None),
            ("Bearer ", None),
            ("Bearerk1", None),
        ] {
            headers.insert(AUTHORIZATION, value.parse().unwrap());
            assert_eq!(presented_key(&headers), expected, "{value:?}");
        }
    }

    #[test]
    fn made_up_keys_never_push_a_live_key_out_of_the_cache() {
        let cache = KeyCache::new(Duration::from_secs(60));
        let key = ApiKey {
            id: uuid::Uuid::new_v4(),
            name: "good".into(),
            role: Role::Writer,
            created_at: chrono::Utc::now(),
            revoked_at: None,
        };
        cache.put("good".into(), Some((key, "good".into())));
        for i in 0..(MAX_CACHED_KEYS * 2) {
            cache.put(format!("bad{i}"), None);
        }
        assert!(
            matches!(cache.get("good"), Some(Some(_))),
            "the live key stays"
        );
        assert!(matches!(
            cache.get(&format!("bad{}", MAX_CACHED_KEYS * 2 - 1)),
            Some(None)
        ));
    }

    #[test]
    fn hashes_compare_exactly() {
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "ab"));
    }
}
