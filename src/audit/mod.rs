//! The audit: read the whole log, check that every stream obeys the rules,
//! recompute every figure and every projection row in Rust, and compare with
//! the write-side balances and every projection's tables.
//!
//! Everything is read in one REPEATABLE READ snapshot, so the log, the
//! balances and the projections are seen at one moment. Balances reflect every
//! committed event; a projection reflects the events up to its own checkpoint,
//! so its expected rows are folded from exactly those events.
//!
//! The same engine verifies a rebuilt copy before it is swapped in.

mod compare;
mod expected;
mod replay;

use std::fmt;
use std::time::{Duration, Instant};

use deadpool_postgres::{ClientWrapper, Pool};
use serde::Serialize;

use crate::projection::{Projection, Slot, ALL};
use crate::store::{pool, Cursor, StoreError};

pub use replay::{Replay, Target};

/// One disagreement between the log and a table (or a rule the log breaks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// `events` for a broken rule, `item_balances`, or a projection's table.
    pub table: String,
    /// The item (`sku@location`), order, reservation or stream concerned.
    pub key: String,
    pub field: String,
    pub expected: String,
    pub actual: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}: expected {}, found {}",
            self.table, self.key, self.field, self.expected, self.actual
        )
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct AuditReport {
    pub events: u64,
    pub streams: u64,
    pub items: u64,
    pub orders: u64,
    pub seconds: f64,
    pub events_per_second: f64,
    /// Every projection compared, with the checkpoint it was compared at.
    pub projections: Vec<(String, String)>,
    pub difference_count: u64,
    /// The first differences (at most `MAX_REPORTED_DIFFERENCES`).
    pub differences: Vec<Difference>,
}

impl AuditReport {
    pub fn clean(&self) -> bool {
        self.difference_count == 0
    }
}

async fn snapshot(
    client: &mut ClientWrapper,
) -> Result<deadpool_postgres::Transaction<'_>, StoreError> {
    Ok(client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?)
}

async fn checkpoint(
    tx: &deadpool_postgres::Transaction<'_>,
    p: &Projection,
    slot: Slot,
) -> Result<Option<Cursor>, StoreError> {
    Ok(tx
        .query_opt(
            "SELECT tx_id::text::bigint, position FROM projection_checkpoints WHERE name = $1 AND slot = $2",
            &[&p.name, &slot.as_str()],
        )
        .await?
        .map(|r| Cursor { tx_id: r.get(0), position: r.get(1) }))
}

/// Audits the whole ledger.
pub async fn audit(pool: &Pool) -> Result<AuditReport, StoreError> {
    let started = Instant::now();
    let mut client = pool::get(pool).await?;
    let tx = snapshot(&mut client).await?;
    let mut targets = Vec::new();
    for p in ALL {
        if let Some(cutoff) = checkpoint(&tx, p, Slot::Live).await? {
            targets.push(Target {
                projection: p,
                cutoff,
                slot: Slot::Live,
            });
        }
    }
    let mut replay = Replay::new(targets, true);
    replay.read_log(&tx).await?;
    let result = replay.compare(&tx).await?;
    tx.commit().await?;
    Ok(report(result, started.elapsed()))
}

fn report(r: replay::Outcome, elapsed: Duration) -> AuditReport {
    let seconds = elapsed.as_secs_f64();
    AuditReport {
        events: r.events,
        streams: r.streams,
        items: r.items,
        orders: r.orders,
        seconds,
        events_per_second: if seconds > 0.0 {
            r.events as f64 / seconds
        } else {
            0.0
        },
        projections: r.compared,
        difference_count: r.difference_count,
        differences: r.differences,
    }
}

/// Verifies the rebuild copy of `p` against the log at the copy's checkpoint.
pub async fn verify_copy(
    client: &mut ClientWrapper,
    p: &'static Projection,
) -> Result<Vec<Difference>, StoreError> {
    let tx = snapshot(client).await?;
    let cutoff = checkpoint(&tx, p, Slot::Rebuild)
        .await?
        .ok_or_else(|| StoreError::Database(format!("{} has no rebuild copy to verify", p.name)))?;
    let mut replay = Replay::new(
        vec![Target {
            projection: p,
            cutoff,
            slot: Slot::Rebuild,
        }],
        false,
    );
    replay.read_log(&tx).await?;
    let result = replay.compare(&tx).await?;
    tx.commit().await?;
    Ok(result.differences)
}
