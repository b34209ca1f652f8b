//! A digest: the latest seal, to be kept outside the database (an auditor's
//! file, a ticket, another system). Whoever holds one can later tell whether
//! the log up to its block is still the one that was sealed.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use serde::{Deserialize, Serialize};

use crate::seal::chain::{self, Hash};
use crate::store::StoreError;

/// The `format` every digest carries.
pub const DIGEST_FORMAT: &str = "stockledger-digest/v1";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    pub format: String,
    /// The block sealed last, and the chain row and log position it ends at.
    pub block: i64,
    pub last_seq: i64,
    pub last_position: i64,
    /// The chain hash at `last_seq` and the block's seal hash, in hex.
    pub chain_head: String,
    pub seal: String,
    pub sealed_at: DateTime<Utc>,
}

/// Why a digest file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    #[error("not a digest: {0}")]
    Unreadable(#[from] serde_json::Error),
    #[error("not a digest of this format (expected {DIGEST_FORMAT})")]
    Format,
    #[error("a digest's hashes are 64 hex digits")]
    BadHash,
}

impl Digest {
    /// Reads and checks a digest as `stockledger digest --json` wrote it.
    pub fn parse(text: &str) -> Result<Digest, DigestError> {
        let d: Digest = serde_json::from_str(text)?;
        if d.format != DIGEST_FORMAT {
            return Err(DigestError::Format);
        }
        d.hashes()?;
        Ok(d)
    }

    /// The chain head and seal hash.
    pub fn hashes(&self) -> Result<(Hash, Hash), DigestError> {
        let head = chain::from_hex(&self.chain_head).ok_or(DigestError::BadHash)?;
        let seal = chain::from_hex(&self.seal).ok_or(DigestError::BadHash)?;
        Ok((head, seal))
    }
}

/// The latest seal as a digest; `None` before the first block is sealed.
pub async fn latest(client: &impl GenericClient) -> Result<Option<Digest>, StoreError> {
    let sql = "SELECT block, last_seq, last_position, chain_head, hash, sealed_at
               FROM seals ORDER BY block DESC LIMIT 1";
    let Some(row) = client.query_opt(sql, &[]).await? else {
        return Ok(None);
    };
    let hex = |i: usize| crate::domain::fingerprint::hex_bytes(row.get::<_, &[u8]>(i));
    Ok(Some(Digest {
        format: DIGEST_FORMAT.to_owned(),
        block: row.get(0),
        last_seq: row.get(1),
        last_position: row.get(2),
        chain_head: hex(3),
        seal: hex(4),
        sealed_at: row.get(5),
    }))
}
