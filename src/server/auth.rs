//! Who is calling, and may they. A caller presents `Authorization: Bearer
//! <key>`; the server hashes it, finds the live key with that hash (cached
//! for a few seconds), compares the hashes in constant time, charges the
//! key's rate limit, and hands the handler a `Caller` that each route checks
//! for the role it needs. In development mode every caller is an admin.

use std::marker::PhantomData;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use crate::limits::MAX_API_KEY_LEN;
use crate::server::error::ApiError;
use crate::server::key_cache::Found;
use crate::server::AppState;
use crate::store::keys::{self, Role};

/// What a route needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Append commands: writer, admin.
    Write,
    /// Read stock, reservations, orders: every role.
    Read,
    /// List reservations or orders the caller did not name (ids it may not
    /// know): the roles that act on them or audit them, not a reader, whose
    /// key (a storefront's, say) reads what it names and no more.
    List,
    /// Read the log and projection status: auditor, admin.
    Audit,
}

impl Access {
    pub fn allows(self, role: Role) -> bool {
        match self {
            Access::Write => matches!(role, Role::Writer | Role::Admin),
            Access::Read => true,
            Access::List => !matches!(role, Role::Reader),
            Access::Audit => matches!(role, Role::Auditor | Role::Admin),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Access::Write => "append commands",
            Access::Read => "read",
            Access::List => "list reservations or orders by other than their ids",
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
    /// Whether this caller sees who sent each command (the key's name, the
    /// command's id, its correlation id and request fingerprint) in the
    /// events it reads: the roles that send commands or audit them do; a
    /// reader, which only needs the state of things, does not.
    pub fn sees_command_metadata(&self) -> bool {
        !matches!(self.role, Role::Reader)
    }

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

/// What a route needs, as a type: `Can<ToWrite>` and friends.
pub trait Need: Send + Sync + 'static {
    const ACCESS: Access;
}

/// Appending commands.
pub struct ToWrite;
/// Reading stock, reservations and orders.
pub struct ToRead;
/// Listing reservations or orders.
pub struct ToList;
/// Reading the log and projection status.
pub struct ToAudit;

impl Need for ToWrite {
    const ACCESS: Access = Access::Write;
}
impl Need for ToRead {
    const ACCESS: Access = Access::Read;
}
impl Need for ToList {
    const ACCESS: Access = Access::List;
}
impl Need for ToAudit {
    const ACCESS: Access = Access::Audit;
}

/// A caller allowed `A`. A route takes it as its first extractor, so the key,
/// the rate limit and the role are checked before the path, the query or
/// the body is read: a reader that sends a malformed command gets 403, not 400.
pub struct Can<A> {
    pub caller: Caller,
    need: PhantomData<A>,
}

impl<A: Need> FromRequestParts<AppState> for Can<A> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, state).await?;
        caller.require(A::ACCESS)?;
        Ok(Can {
            caller,
            need: PhantomData,
        })
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

/// The key presented in `Authorization: Bearer <key>`; the scheme's case does
/// not matter (RFC 9110 §11.1).
pub(crate) fn presented_key(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, key) = value.trim_start().split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty() && key.len() <= MAX_API_KEY_LEN)
        .then_some(key)
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
            authenticate(parts, state).await?
        };
        state
            .limiter
            .check(&caller.name)
            .map_err(|retry_after| ApiError::RateLimited { retry_after })?;
        Ok(caller)
    }
}

/// The caller behind the presented key, from the cache or the database.
async fn authenticate(parts: &Parts, state: &AppState) -> Result<Caller, ApiError> {
    let presented = presented_key(&parts.headers).ok_or(ApiError::Unauthenticated)?;
    let hash = keys::hash_key(presented);
    let found = match state.keys.get(&hash) {
        Some(cached) => cached,
        None => look_up(parts, state, hash.clone()).await?,
    };
    let (key, stored) = found.ok_or(ApiError::Unauthenticated)?;
    if !constant_time_eq(&stored, &hash) {
        return Err(ApiError::Unauthenticated);
    }
    Ok(Caller {
        name: key.name,
        role: key.role,
    })
}

/// Whether the key behind `hash` is still live, with a role allowed
/// `access`: for an answer that outlives its request (an event stream),
/// asked again every key-cache period (at least a second apart). It reads
/// the database, not the cache, so a revoked key's stream ends within one
/// such period of the revocation, as its plain requests start to get 401.
/// A lookup that cannot be made now (the database is away) does not end it:
/// the stream's own reads fail then.
pub(crate) async fn still_allowed(state: &AppState, hash: &str, access: Access) -> bool {
    let found = match state.store.find_key(hash).await {
        Ok(found) => found,
        Err(_) => return true,
    };
    state.keys.put(hash.to_owned(), found.clone());
    found.is_some_and(|(key, stored)| constant_time_eq(&stored, hash) && access.allows(key.role))
}

/// A key not in the cache costs a query: at most a few run at once in the
/// whole server, each checks the client address's budget first, and only a
/// lookup that found no key uses it up. So made-up keys cannot become a flood
/// of queries, a live key never costs its address anything, and concurrent
/// unknown keys overshoot the budget by at most the lookups in flight.
async fn look_up(parts: &Parts, state: &AppState, hash: String) -> Result<Found, ApiError> {
    let address = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "unknown".to_owned(), |c| c.0.ip().to_string());
    let _in_flight = state
        .lookups_in_flight
        .acquire()
        .await
        .map_err(|_| ApiError::unavailable("the server is shutting down"))?;
    let counted = |outcome| state.metrics.key_lookup(outcome);
    state.lookups.allowed(&address).map_err(|retry_after| {
        counted("refused");
        ApiError::RateLimited { retry_after }
    })?;
    let found = match state.store.find_key(&hash).await {
        Ok(found) => found,
        // The database is away (a failover, a restart): a key seen live
        // lately still lets its command in to wait for it (`key_cache`).
        Err(e) if e.is_retryable() => match state.keys.stale(&hash) {
            Some(key) => {
                tracing::warn!(error = %e, key = %key.0.name, "key lookup failed; honouring it as last seen");
                counted("stale");
                return Ok(Some(key));
            }
            None => {
                counted("failed");
                return Err(e.into());
            }
        },
        Err(e) => {
            counted("failed");
            return Err(e.into());
        }
    };
    state.keys.put(hash, found.clone());
    if found.is_none() {
        counted("unknown");
        state.lookups.charge(&address);
    } else {
        counted("found");
    }
    Ok(found)
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
    fn hashes_compare_exactly() {
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "ab"));
    }
}
