//! How far a reader of the log (a projection, the sealer) is behind it: the
//! committed events after its cursor, counted up to `LAG_COUNT_CAP` so that
//! a reader far behind costs a bounded count, and the age of the oldest.

use serde::Serialize;
use tokio_postgres::GenericClient;

use crate::limits::LAG_COUNT_CAP;
use crate::store::{Cursor, StoreError};

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Lag {
    /// Committed events after the cursor (at least this many when capped).
    pub events: i64,
    pub capped: bool,
    /// Age of the oldest event after the cursor; 0 when caught up.
    pub seconds: f64,
}

/// The lag of a reader at `cursor`.
pub async fn after(client: &impl GenericClient, cursor: Cursor) -> Result<Lag, StoreError> {
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM (
                        SELECT 1 FROM events WHERE (tx_id, position) > ($1::text::xid8, $2) LIMIT $3
                     ) AS pending),
                    coalesce(extract(epoch FROM clock_timestamp() - (
                        SELECT recorded_at FROM events WHERE (tx_id, position) > ($1::text::xid8, $2)
                        ORDER BY tx_id, position LIMIT 1))::float8, 0)",
            &[&cursor.tx_id.to_string(), &cursor.position, &LAG_COUNT_CAP],
        )
        .await?;
    let events: i64 = row.get(0);
    Ok(Lag {
        events,
        capped: events >= LAG_COUNT_CAP,
        seconds: row.get(1),
    })
}
