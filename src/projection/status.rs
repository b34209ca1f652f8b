//! How far each projection is behind the log, and whether it is rebuilding.

use serde::Serialize;
use tokio_postgres::GenericClient;

use crate::projection::{ReadModel, Slot, ALL};
use crate::store::{Cursor, StoreError};

#[derive(Clone, Debug, Serialize)]
pub struct SlotStatus {
    #[serde(serialize_with = "as_string")]
    pub checkpoint: Cursor,
    pub events_applied: i64,
    /// Committed events after the checkpoint (at least this many when capped).
    pub lag_events: i64,
    pub lag_capped: bool,
    /// Age of the oldest event not yet applied; 0 when caught up.
    pub lag_seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProjectionStatus {
    pub name: &'static str,
    /// "live", or "rebuilding" while a rebuild copy exists.
    pub state: &'static str,
    /// False when the live rows were built by another definition: rebuild it.
    pub definition_current: bool,
    pub live: SlotStatus,
    pub rebuild: Option<SlotStatus>,
}

fn as_string<S: serde::Serializer>(c: &Cursor, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(c)
}

async fn slot(
    client: &impl GenericClient,
    cursor: Cursor,
    applied: i64,
) -> Result<SlotStatus, StoreError> {
    let lag = crate::store::lag::after(client, cursor).await?;
    Ok(SlotStatus {
        checkpoint: cursor,
        events_applied: applied,
        lag_events: lag.events,
        lag_capped: lag.capped,
        lag_seconds: lag.seconds,
    })
}

pub async fn status_of(
    client: &impl GenericClient,
    p: &'static dyn ReadModel,
) -> Result<ProjectionStatus, StoreError> {
    let rows = client
        .query(
            "SELECT slot, tx_id::text::bigint, position, events_applied, definition_checksum
             FROM projection_checkpoints WHERE name = $1",
            &[&p.name()],
        )
        .await?;
    let mut live = None;
    let mut rebuild = None;
    let mut current = false;
    for r in rows {
        let slot_name: String = r.get(0);
        let cursor = Cursor {
            tx_id: r.get(1),
            position: r.get(2),
        };
        // The snapshot at the cut (`projection::snapshot`) is no copy
        // anyone reads or waits for.
        if slot_name == Slot::Snapshot.as_str() {
            continue;
        }
        let s = slot(client, cursor, r.get(3)).await?;
        if slot_name == Slot::Live.as_str() {
            current = r.get::<_, String>(4) == p.checksum();
            live = Some(s);
        } else {
            rebuild = Some(s);
        }
    }
    let live = live.ok_or_else(|| {
        StoreError::Database(format!("projection {} is not installed", p.name()).into())
    })?;
    Ok(ProjectionStatus {
        name: p.name(),
        state: if rebuild.is_some() {
            "rebuilding"
        } else {
            "live"
        },
        definition_current: current,
        live,
        rebuild,
    })
}

pub async fn status(client: &impl GenericClient) -> Result<Vec<ProjectionStatus>, StoreError> {
    let mut out = Vec::new();
    for &p in ALL {
        out.push(status_of(client, p).await?);
    }
    Ok(out)
}
