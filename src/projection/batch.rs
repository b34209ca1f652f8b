//! Applying one batch of events to one copy of a projection.

use deadpool_postgres::Transaction;

use tokio_postgres::types::ToSql;

use crate::domain::StreamKind;
use crate::projection::{ReadModel, Slot};
use crate::read_model::window::Window;
use crate::store::{Cursor, StoreError};

/// What one batch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub events: i64,
    /// The checkpoint after the batch.
    pub cursor: Cursor,
}

/// The batch after `from`: how many events, and the last one's cursor. Only
/// events below the safe horizon count, so nothing still in flight is passed.
const BOUNDARY: &str = "
    SELECT count(*), max(ARRAY[tx_id::text::bigint, position]), max(recorded_at)
    FROM (
        SELECT tx_id, position, recorded_at FROM events
        WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
          AND tx_id < $4::text::xid8
        ORDER BY tx_id, position
        LIMIT $3
    ) AS batch";

/// Applies up to `max_events` events after the checkpoint of `slot`, in one
/// transaction with the checkpoint. Returns zero events when caught up.
pub async fn apply_batch(
    client: &mut deadpool_postgres::ClientWrapper,
    p: &dyn ReadModel,
    slot: Slot,
    max_events: i64,
) -> Result<Applied, StoreError> {
    // The horizon is read before the transaction begins (see horizon.rs).
    let horizon = crate::store::horizon::safe_horizon(client).await?;
    let tx = client.transaction().await?;
    let Some(from) = lock_checkpoint(&tx, p, slot).await? else {
        return Err(StoreError::Database(
            format!(
                "projection {} has no {} checkpoint",
                p.name(),
                slot.as_str()
            )
            .into(),
        ));
    };
    let applied = apply_range(&tx, p, slot, from, max_events, horizon).await?;
    if applied.events > 0 {
        tx.commit().await?;
    }
    Ok(applied)
}

/// Locks and reads the checkpoint of `slot`; `None` if the slot does not exist.
/// The row lock serialises every writer of this copy, so even two workers
/// running at once could not apply an event twice.
pub(crate) async fn lock_checkpoint(
    tx: &Transaction<'_>,
    p: &dyn ReadModel,
    slot: Slot,
) -> Result<Option<Cursor>, StoreError> {
    let row = tx
        .query_opt(
            "SELECT tx_id::text::bigint, position FROM projection_checkpoints
             WHERE name = $1 AND slot = $2 FOR UPDATE",
            &[&p.name(), &slot.as_str()],
        )
        .await?;
    Ok(row.map(|r| Cursor {
        tx_id: r.get(0),
        position: r.get(1),
    }))
}

/// Points the transaction at the copy of `slot`. Schema names are our
/// constants, never input. JIT is off: a batch's range is over-estimated by
/// the planner, so every batch would pay to compile its plan.
///
/// A live batch commits without waiting for its WAL to be flushed: its rows
/// and its checkpoint are kept or lost together, so a crash that loses the
/// last batches only means applying them again, and no caller waits on it.
/// Its commit then costs no flush beside the commands' own.
///
/// Plans are left to PostgreSQL's default (each batch planned for its range
/// unless a generic plan is estimated as cheap): forcing generic plans saved
/// the planning, but for
/// `reservation_expiry`'s closing statement it was 150 times slower to run
/// (docs/benchmarks.md, issue 24).
pub(crate) async fn use_slot(tx: &Transaction<'_>, slot: Slot) -> Result<(), StoreError> {
    let commit = match slot {
        Slot::Live => "SET LOCAL synchronous_commit = off;",
        Slot::Rebuild | Slot::Snapshot => "",
    };
    tx.batch_execute(&format!(
        "SET LOCAL search_path = {}, public; SET LOCAL jit = off; {commit}",
        slot.schema()
    ))
    .await?;
    Ok(())
}

/// Runs the read model's statements over the events in `(from, to]`, in the
/// copy `use_slot` chose, and its batch fold over the window's events (read
/// once for every model that shares `window`).
pub(crate) async fn run_apply_sql(
    tx: &Transaction<'_>,
    p: &dyn ReadModel,
    window: &mut Window,
) -> Result<(), StoreError> {
    let (from, to) = (window.from, window.to);
    let (from_tx, to_tx) = (from.tx_id.to_string(), to.tx_id.to_string());
    // The fifth parameter, for the statements that take it, is the prefix of
    // reservation streams: the SQL never spells a stream name itself.
    let prefix = StreamKind::Reservation.prefix();
    let params: [&(dyn ToSql + Sync); 5] =
        [&from_tx, &from.position, &to_tx, &to.position, &prefix];
    for sql in p.apply_sql() {
        let stmt = tx.prepare_cached(sql).await?;
        let taken = stmt.params().len();
        assert!(
            (4..=params.len()).contains(&taken),
            "{}: an apply statement takes 4 or 5 parameters, not {taken}",
            p.name()
        );
        tx.execute(&stmt, &params[..taken]).await?;
    }
    if let Some(fold) = p.batch_fold() {
        (fold.apply)(tx, window.events(tx).await?).await?;
    }
    Ok(())
}

/// The end of the batch after `from`: up to `max_events` events below the
/// safe horizon; `None` when there is none.
pub(crate) struct Boundary {
    pub events: i64,
    pub to: Cursor,
    pub last_at: chrono::DateTime<chrono::Utc>,
}

pub(crate) async fn boundary(
    tx: &Transaction<'_>,
    from: Cursor,
    max_events: i64,
    horizon: i64,
) -> Result<Option<Boundary>, StoreError> {
    let stmt = tx.prepare_cached(BOUNDARY).await?;
    let row = tx
        .query_one(
            &stmt,
            &[
                &from.tx_id.to_string(),
                &from.position,
                &max_events,
                &horizon.to_string(),
            ],
        )
        .await?;
    let events: i64 = row.get(0);
    if events == 0 {
        return Ok(None);
    }
    // A copy whose checkpoint is before the cut (a read model new since a
    // detach) would be filled from what is left as if it were the whole
    // log: refused. After the window is read: the cut commits first.
    crate::store::cut::refuse_before(&**tx, from, || {
        "the events a read model's copy has not applied yet (the archive holds them)".to_owned()
    })
    .await?;
    let last: Vec<i64> = row.get(1);
    Ok(Some(Boundary {
        events,
        to: Cursor {
            tx_id: last[0],
            position: last[1],
        },
        last_at: row.get(2),
    }))
}

/// Applies the next batch after `from` inside `tx` and moves the checkpoint.
pub(crate) async fn apply_range(
    tx: &Transaction<'_>,
    p: &dyn ReadModel,
    slot: Slot,
    from: Cursor,
    max_events: i64,
    horizon: i64,
) -> Result<Applied, StoreError> {
    let Some(Boundary {
        events,
        to,
        last_at,
    }) = boundary(tx, from, max_events, horizon).await?
    else {
        return Ok(Applied {
            events: 0,
            cursor: from,
        });
    };
    use_slot(tx, slot).await?;
    run_apply_sql(tx, p, &mut Window::new(from, to)).await?;
    let to_tx = to.tx_id.to_string();
    tx.execute(
        "UPDATE projection_checkpoints
         SET tx_id = $3::text::xid8, position = $4, events_applied = events_applied + $5,
             last_event_at = greatest(last_event_at, $6), updated_at = now()
         WHERE name = $1 AND slot = $2",
        &[
            &p.name(),
            &slot.as_str(),
            &to_tx,
            &to.position,
            &events,
            &last_at,
        ],
    )
    .await?;
    Ok(Applied { events, cursor: to })
}
