//! The relay's checkpoint row: what it last saw acknowledged, for status and
//! lag, and to recognise a stream that was deleted or purged.

use serde::Serialize;

use crate::limits::LAG_COUNT_CAP;
use crate::relay::Stand;
use crate::store::{pool, Cursor, Store, StoreError};

/// How many events were published to `stream` (by the checkpoint); 0 when
/// the relay never published to it.
pub async fn published(store: &Store, stream: &str) -> Result<i64, StoreError> {
    let client = pool::get(store.pool()).await?;
    let row = client
        .query_opt(
            "SELECT published FROM relay_checkpoints WHERE stream_name = $1",
            &[&stream],
        )
        .await?;
    Ok(row.map_or(0, |r| r.get(0)))
}

/// Forgets what was published to `stream` (a fresh stream).
pub async fn reset(store: &Store, stream: &str) -> Result<(), StoreError> {
    let client = pool::get(store.pool()).await?;
    client
        .execute(
            "DELETE FROM relay_checkpoints WHERE stream_name = $1",
            &[&stream],
        )
        .await?;
    Ok(())
}

/// Records what the broker acknowledged.
pub async fn save(store: &Store, stream: &str, at: &Stand) -> Result<(), StoreError> {
    let client = pool::get(store.pool()).await?;
    let published = i64::try_from(at.sequence).unwrap_or(i64::MAX);
    client
        .execute(
            "INSERT INTO relay_checkpoints AS c (stream_name, tx_id, position, last_msg_id, published)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (stream_name) DO UPDATE
               SET tx_id = EXCLUDED.tx_id, position = EXCLUDED.position,
                   last_msg_id = EXCLUDED.last_msg_id, published = EXCLUDED.published,
                   updated_at = now()",
            &[
                &stream,
                &at.cursor.tx_id,
                &at.cursor.position,
                &at.last_msg_id.as_deref().unwrap_or(""),
                &published,
            ],
        )
        .await?;
    Ok(())
}

/// A relay's standing, as `stockledger relay status` and `/metrics` show it.
#[derive(Clone, Debug, Serialize)]
pub struct RelayStatus {
    pub stream: String,
    pub cursor: String,
    pub last_msg_id: String,
    pub published: i64,
    /// Committed events after the cursor, counted up to `LAG_COUNT_CAP`.
    pub lag_events: i64,
    pub lag_capped: bool,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

/// Every relay's standing.
pub async fn status(store: &Store) -> Result<Vec<RelayStatus>, StoreError> {
    // A read a request waits for: cancelled on the server if the request
    // stops waiting (`pool::reading`).
    let rows = pool::reading(store.pool(), async |client| {
        Ok(client
            .query(
            "SELECT c.stream_name, c.tx_id, c.position, c.last_msg_id, c.published, c.updated_at,
                    (SELECT count(*) FROM (
                        SELECT 1 FROM events e
                         WHERE (e.tx_id, e.position) > (c.tx_id::text::xid8, c.position)
                         LIMIT $1) behind)
               FROM relay_checkpoints c ORDER BY c.stream_name",
                &[&LAG_COUNT_CAP],
            )
            .await?)
    })
    .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let lag: i64 = r.get(6);
            RelayStatus {
                stream: r.get(0),
                cursor: Cursor {
                    tx_id: r.get(1),
                    position: r.get(2),
                }
                .to_string(),
                last_msg_id: r.get(3),
                published: r.get(4),
                lag_events: lag,
                lag_capped: lag >= LAG_COUNT_CAP,
                updated_at: r.get(5),
            }
        })
        .collect())
}
