//! API keys: created with a role, shown once, stored only as a SHA-256 hash,
//! revocable. The server looks keys up by the hash of what a caller presents.

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper as Client;
use serde::Serialize;
use uuid::Uuid;

use crate::domain::fingerprint::sha256_hex;
use crate::domain::ids::check_id;
use crate::domain::Rejection;
use crate::store::error::Cause;
use crate::store::StoreError;

/// What a key may do (see the HTTP contract).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Append commands and read.
    Writer,
    /// Read stock, reservations, orders.
    Reader,
    /// Read everything, including the log and projection status.
    Auditor,
    /// Everything.
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Writer => "writer",
            Role::Reader => "reader",
            Role::Auditor => "auditor",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Result<Role, Rejection> {
        match s {
            "writer" => Ok(Role::Writer),
            "reader" => Ok(Role::Reader),
            "auditor" => Ok(Role::Auditor),
            "admin" => Ok(Role::Admin),
            _ => Err(Rejection::invalid(
                "role",
                "must be writer, reader, auditor or admin",
            )),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ApiKey {
    pub id: Uuid,
    pub name: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// The prefix of every key, so a leaked one is recognisable in logs and scanners.
pub const KEY_PREFIX: &str = "sl_";

/// The stored form of a presented key.
pub fn hash_key(key: &str) -> String {
    sha256_hex(key.as_bytes())
}

fn from_row(r: &tokio_postgres::Row) -> Result<ApiKey, StoreError> {
    let role: String = r.get(2);
    Ok(ApiKey {
        id: r.get(0),
        name: r.get(1),
        role: Role::parse(&role)
            .map_err(|e| StoreError::Corrupt(Cause::with_source("api key role", e)))?,
        created_at: r.get(3),
        revoked_at: r.get(4),
    })
}

const COLUMNS: &str = "id, name, role, created_at, revoked_at";

/// Creates a key; returns it and the secret, which is not stored anywhere.
pub async fn create(
    client: &Client,
    name: Option<&str>,
    role: Role,
) -> Result<Result<(ApiKey, String), Rejection>, StoreError> {
    let id = Uuid::new_v4();
    let name = match name {
        Some(n) => n.to_owned(),
        None => format!("{}-{}", role.as_str(), &id.simple().to_string()[..8]),
    };
    if let Err(r) = check_id("name", &name) {
        return Ok(Err(r));
    }
    // 244 random bits from two version-4 UUIDs (the OS random source).
    let secret = format!(
        "{KEY_PREFIX}{}{}",
        Uuid::new_v4().simple(),
        Uuid::new_v4().simple()
    );
    let row = client
        .query_opt(
            &format!(
                "INSERT INTO api_keys (id, name, role, key_hash) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (name) DO NOTHING RETURNING {COLUMNS}"
            ),
            &[&id, &name, &role.as_str(), &hash_key(&secret)],
        )
        .await?;
    match row {
        Some(r) => Ok(Ok((from_row(&r)?, secret))),
        None => Ok(Err(Rejection::invalid(
            "name",
            format!("a key named {name} already exists"),
        ))),
    }
}

pub async fn list(client: &Client) -> Result<Vec<ApiKey>, StoreError> {
    client
        .query(
            &format!("SELECT {COLUMNS} FROM api_keys ORDER BY created_at"),
            &[],
        )
        .await?
        .iter()
        .map(from_row)
        .collect()
}

/// Revokes the key with this name or id; `None` if there is none.
pub async fn revoke(client: &Client, name_or_id: &str) -> Result<Option<ApiKey>, StoreError> {
    let id = Uuid::parse_str(name_or_id).ok();
    let row = client
        .query_opt(
            &format!(
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
                 WHERE name = $1 OR id = $2 RETURNING {COLUMNS}"
            ),
            &[&name_or_id, &id],
        )
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// The live (not revoked) key whose hash is `key_hash`.
pub async fn find(client: &Client, key_hash: &str) -> Result<Option<(ApiKey, String)>, StoreError> {
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {COLUMNS}, key_hash FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL"
        ))
        .await?;
    let row = client.query_opt(&stmt, &[&key_hash]).await?;
    row.map(|r| Ok((from_row(&r)?, r.get(5)))).transpose()
}
