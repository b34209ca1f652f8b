//! One batch of the log applied to every live projection at once: the live
//! runner's step.
//!
//! A batch has fixed costs (the safe horizon, a transaction, the checkpoint
//! lock and update, the batch's boundary) that are the same whatever it
//! holds; when the log grows one command at a time they are most of the
//! work. Applying every read model from one window pays them once per batch
//! instead of once per read model. Each read model keeps its own checkpoint,
//! and they need not agree (a rebuild swaps in a copy that stopped
//! elsewhere, a new read model starts from the beginning): the models at one
//! checkpoint share a window, each group its own.

use std::collections::BTreeMap;

use deadpool_postgres::{ClientWrapper, Transaction};

use crate::projection::batch::{boundary, run_apply_sql, use_slot, Applied, Boundary};
use crate::projection::{ReadModel, Slot};
use crate::read_model::window::Window;
use crate::store::{Cursor, StoreError};

/// Locks the live checkpoints of the named models, in one statement and in
/// name order (a rebuild's swap locks one of them: one order, no deadlock).
const LOCK_LIVE: &str = "
    SELECT name, tx_id::text::bigint, position FROM projection_checkpoints
    WHERE slot = $2 AND name = ANY($1)
    ORDER BY name
    FOR UPDATE";

/// Moves the named live checkpoints, which stood together, to the window's end.
const ADVANCE_LIVE: &str = "
    UPDATE projection_checkpoints
    SET tx_id = $2::text::xid8, position = $3, events_applied = events_applied + $5,
        last_event_at = greatest(last_event_at, $4), updated_at = now()
    WHERE slot = $6 AND name = ANY($1)";

/// Applies up to `max_events` events after each live checkpoint of
/// `models` to the models at it, in one transaction with their checkpoints.
/// Models whose checkpoints agree (the usual case) share one window; one far
/// behind (new, or swapped in by a rebuild) gets a window of its own, so it
/// never holds the others back while it catches up. Returns the largest
/// window's events (zero when every model is caught up) and its end.
pub async fn apply_live(
    client: &mut ClientWrapper,
    models: &[&'static dyn ReadModel],
    max_events: i64,
) -> Result<Applied, StoreError> {
    // The horizon is read before the transaction begins (see horizon.rs).
    let horizon = crate::store::horizon::safe_horizon(client).await?;
    let tx = client.transaction().await?;
    let mut groups: BTreeMap<Cursor, Vec<&'static dyn ReadModel>> = BTreeMap::new();
    for (p, at) in lock_live(&tx, models).await? {
        groups.entry(at).or_default().push(p);
    }
    let mut applied = Applied::default();
    for (at, group) in groups {
        let Some(window) = boundary(&tx, at, max_events, horizon).await? else {
            continue;
        };
        if applied.events == 0 {
            use_slot(&tx, Slot::Live).await?;
        }
        let mut shared = Window::new(at, window.to);
        for &p in &group {
            run_apply_sql(&tx, p, &mut shared).await?;
        }
        let names: Vec<&str> = group.iter().map(|p| p.name()).collect();
        advance(&tx, &window, &names).await?;
        applied.events = applied.events.max(window.events);
        applied.cursor = applied.cursor.max(window.to);
    }
    if applied.events > 0 {
        tx.commit().await?;
    }
    Ok(applied)
}

/// Each model with its live checkpoint, locked; a model without one is an error.
async fn lock_live(
    tx: &Transaction<'_>,
    models: &[&'static dyn ReadModel],
) -> Result<Vec<(&'static dyn ReadModel, Cursor)>, StoreError> {
    let names: Vec<&str> = models.iter().map(|p| p.name()).collect();
    let stmt = tx.prepare_cached(LOCK_LIVE).await?;
    let rows = tx.query(&stmt, &[&names, &Slot::Live.as_str()]).await?;
    models
        .iter()
        .map(|&p| {
            let row = rows
                .iter()
                .find(|r| r.get::<_, &str>(0) == p.name())
                .ok_or_else(|| {
                    StoreError::Database(
                        format!("projection {} has no live checkpoint", p.name()).into(),
                    )
                })?;
            let cursor = Cursor {
                tx_id: row.get(1),
                position: row.get(2),
            };
            Ok((p, cursor))
        })
        .collect()
}

async fn advance(
    tx: &Transaction<'_>,
    window: &Boundary,
    names: &[&str],
) -> Result<(), StoreError> {
    let stmt = tx.prepare_cached(ADVANCE_LIVE).await?;
    tx.execute(
        &stmt,
        &[
            &names,
            &window.to.tx_id.to_string(),
            &window.to.position,
            &window.last_at,
            &window.events,
            &Slot::Live.as_str(),
        ],
    )
    .await?;
    Ok(())
}
