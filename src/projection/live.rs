//! One batch of the log applied to every live projection at once: the live
//! runner's step.
//!
//! A batch has fixed costs (the safe horizon, a transaction, the checkpoint
//! lock and update, the batch's boundary) that are the same whatever it
//! holds; when the log grows one command at a time they are most of the
//! work. Applying every read model from one window pays them once per batch
//! instead of once per read model. Each read model keeps its own checkpoint,
//! and they need not agree (a rebuild swaps in a copy that stopped
//! elsewhere): the window starts at the furthest-behind checkpoint, and each
//! model applies only the part of it after its own.

use deadpool_postgres::{ClientWrapper, Transaction};

use crate::projection::batch::{boundary, run_apply_sql, use_slot, Applied, Boundary};
use crate::projection::{ReadModel, Slot};
use crate::store::{Cursor, StoreError};

/// Locks the live checkpoints of the named models, in one statement and in
/// name order (a rebuild's swap locks one of them: one order, no deadlock).
const LOCK_LIVE: &str = "
    SELECT name, tx_id::text::bigint, position FROM projection_checkpoints
    WHERE slot = 'live' AND name = ANY($1)
    ORDER BY name
    FOR UPDATE";

/// Moves the named live checkpoints to the batch's end, each by the events
/// it applied.
const ADVANCE_LIVE: &str = "
    UPDATE projection_checkpoints AS c
    SET tx_id = $2::text::xid8, position = $3, events_applied = c.events_applied + a.events,
        last_event_at = greatest(c.last_event_at, $4), updated_at = now()
    FROM unnest($1::text[], $5::bigint[]) AS a(name, events)
    WHERE c.slot = 'live' AND c.name = a.name";

/// Events in `(from, to]`, for a model whose checkpoint is inside the window.
const COUNT_RANGE: &str = "
    SELECT count(*) FROM events
    WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
      AND (tx_id, position) <= ($3::text::xid8, $4::bigint)";

/// Applies up to `max_events` events after the furthest-behind live
/// checkpoint of `models` to each of them, in one transaction with their
/// checkpoints. Returns the window's events (zero when every model is caught up).
pub async fn apply_live(
    client: &mut ClientWrapper,
    models: &[&'static dyn ReadModel],
    max_events: i64,
) -> Result<Applied, StoreError> {
    // The horizon is read before the transaction begins (see horizon.rs).
    let horizon = crate::store::horizon::safe_horizon(client).await?;
    let tx = client.transaction().await?;
    let cursors = lock_live(&tx, models).await?;
    let from = cursors.iter().map(|(_, c)| *c).min().unwrap_or_default();
    let Some(window) = boundary(&tx, from, max_events, horizon).await? else {
        return Ok(Applied {
            events: 0,
            cursor: from,
        });
    };
    use_slot(&tx, Slot::Live).await?;
    let (mut names, mut counts) = (Vec::new(), Vec::new());
    for (p, at) in cursors {
        if at >= window.to {
            continue;
        }
        run_apply_sql(&tx, p, at, window.to).await?;
        names.push(p.name());
        counts.push(if at == from {
            window.events
        } else {
            count_range(&tx, at, window.to).await?
        });
    }
    advance(&tx, &window, &names, &counts).await?;
    tx.commit().await?;
    Ok(Applied {
        events: window.events,
        cursor: window.to,
    })
}

/// Each model with its live checkpoint, locked; a model without one is an error.
async fn lock_live(
    tx: &Transaction<'_>,
    models: &[&'static dyn ReadModel],
) -> Result<Vec<(&'static dyn ReadModel, Cursor)>, StoreError> {
    let names: Vec<&str> = models.iter().map(|p| p.name()).collect();
    let stmt = tx.prepare_cached(LOCK_LIVE).await?;
    let rows = tx.query(&stmt, &[&names]).await?;
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

async fn count_range(tx: &Transaction<'_>, from: Cursor, to: Cursor) -> Result<i64, StoreError> {
    let stmt = tx.prepare_cached(COUNT_RANGE).await?;
    let row = tx
        .query_one(
            &stmt,
            &[
                &from.tx_id.to_string(),
                &from.position,
                &to.tx_id.to_string(),
                &to.position,
            ],
        )
        .await?;
    Ok(row.get(0))
}

async fn advance(
    tx: &Transaction<'_>,
    window: &Boundary,
    names: &[&str],
    counts: &[i64],
) -> Result<(), StoreError> {
    let stmt = tx.prepare_cached(ADVANCE_LIVE).await?;
    tx.execute(
        &stmt,
        &[
            &names,
            &window.to.tx_id.to_string(),
            &window.to.position,
            &window.last_at,
            &counts,
        ],
    )
    .await?;
    Ok(())
}
