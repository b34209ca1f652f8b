//! Recently looked-up API keys, by hash, in two bounded caches with a time to
//! live (`moka`). Live keys and absent ones are kept apart: a flood of
//! made-up keys fills (and evicts from) only the absent side, never pushing a
//! good key out.
//!
//! Live keys are also kept for `KEY_STALE_GRACE_SECONDS` as a fallback: while
//! the database cannot be reached (a failover), a key seen live that recently
//! is still honoured, so its commands can wait for the new primary instead of
//! being refused at the door. A key revoked during the outage works until the
//! grace runs out; the commands themselves still need the database.

use std::time::Duration;

use moka::sync::Cache;

use crate::limits::{KEY_STALE_GRACE_SECONDS, MAX_CACHED_KEYS};
use crate::store::keys::ApiKey;

/// A looked-up key with its stored hash, or `None` for no such live key.
pub type Found = Option<(ApiKey, String)>;

pub struct KeyCache {
    live: Cache<String, (ApiKey, String)>,
    absent: Cache<String, ()>,
    /// Live keys for the grace period, used only when a lookup cannot be made.
    stale: Cache<String, (ApiKey, String)>,
}

impl KeyCache {
    pub fn new(ttl: Duration) -> Self {
        KeyCache {
            live: Cache::builder()
                .max_capacity(MAX_CACHED_KEYS as u64)
                .time_to_live(ttl)
                .build(),
            absent: Cache::builder()
                .max_capacity(MAX_CACHED_KEYS as u64)
                .time_to_live(ttl)
                .build(),
            stale: Cache::builder()
                .max_capacity(MAX_CACHED_KEYS as u64)
                .time_to_live(Duration::from_secs(KEY_STALE_GRACE_SECONDS))
                .build(),
        }
    }

    /// A key seen live within the grace period, for when it cannot be
    /// looked up now.
    pub fn stale(&self, hash: &str) -> Option<(ApiKey, String)> {
        self.stale.get(hash)
    }

    /// `Some(found)` when the hash was looked up within the time to live.
    pub fn get(&self, hash: &str) -> Option<Found> {
        if let Some(key) = self.live.get(hash) {
            return Some(Some(key));
        }
        self.absent.get(hash).map(|()| None)
    }

    pub fn put(&self, hash: String, found: Found) {
        match found {
            Some(key) => {
                self.stale.insert(hash.clone(), key.clone());
                self.live.insert(hash, key);
            }
            None => {
                self.stale.invalidate(&hash);
                self.absent.insert(hash, ());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::keys::Role;

    fn live_key() -> ApiKey {
        ApiKey {
            id: uuid::Uuid::new_v4(),
            name: "good".into(),
            role: Role::Writer,
            created_at: chrono::Utc::now(),
            revoked_at: None,
        }
    }

    #[test]
    fn made_up_keys_never_push_a_live_key_out_of_the_cache() {
        let cache = KeyCache::new(Duration::from_secs(60));
        let key = live_key();
        cache.put("good".into(), Some((key, "good".into())));
        for i in 0..(MAX_CACHED_KEYS * 2) {
            cache.put(format!("bad{i}"), None);
        }
        cache.absent.run_pending_tasks();
        assert!(
            matches!(cache.get("good"), Some(Some(_))),
            "the live key stays"
        );
        assert!(cache.absent.entry_count() <= MAX_CACHED_KEYS as u64);
    }

    #[test]
    fn a_live_key_outlasts_its_time_to_live_as_a_fallback_but_not_a_revoked_one() {
        let cache = KeyCache::new(Duration::from_millis(1));
        let key = live_key();
        cache.put("good".into(), Some((key, "good".into())));
        std::thread::sleep(Duration::from_millis(20));
        assert!(cache.get("good").is_none(), "looked up again when possible");
        assert!(cache.stale("good").is_some(), "honoured when not");
        cache.put("good".into(), None);
        assert!(cache.stale("good").is_none(), "a key found gone is gone");
    }

    #[test]
    fn entries_expire() {
        let cache = KeyCache::new(Duration::from_millis(1));
        cache.put("gone".into(), None);
        std::thread::sleep(Duration::from_millis(20));
        assert!(cache.get("gone").is_none());
    }
}
