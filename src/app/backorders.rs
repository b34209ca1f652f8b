//! The backorder worker: every interval, fills the backorders that stock
//! on hand can fill now and drops the ones nothing expected can cover,
//! through the same command path as everything else.
//!
//! It reads the balance rows of the items something waits for (their
//! figures and backlogs), asks the domain which reservations have something
//! to write (`backorder::due`, in placing order), and sends each a `Fill`
//! command, which decides again from the locked rows. So it is idempotent,
//! several processes may run it at once (a second fill finds nothing to
//! do), and each fill is exactly what placing order gives it, whichever
//! pass or process writes it: the units ahead in the queue are counted
//! from the queue itself, not from which fill ran first.
//!
//! Stock that arrives is claimed by the queue at once, before this worker
//! writes anything: a reserve sees available less what waits
//! (`Balance::available`), so no later order can take it in between.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::domain::backorder::{self, Backlog};
use crate::domain::command::Fill;
use crate::domain::{Balance, Command, CommandContext, Outcome, ReservationId};
use crate::limits::MAX_FILLS_PER_PASS;
use crate::store::{pool, Store, StoreError};

/// The actor recorded on the events the worker writes.
pub const BACKORDER_ACTOR: &str = "backorder-worker";

/// The items something waits for, with their figures and backlogs (the
/// partial index `item_balances_waiting` holds exactly these rows).
const WAITING_ITEMS: &str = "
    SELECT on_hand, reserved, confirmed, backordered, backlog
    FROM item_balances
    WHERE backordered > 0
    ORDER BY location, sku
    LIMIT $1";

/// Runs until `cancel` fires; `on_filled` hears how many reservations each
/// pass wrote to.
pub async fn run(
    store: Store,
    interval: Duration,
    cancel: CancellationToken,
    on_filled: impl Fn(u64) + Send,
) {
    while !cancel.is_cancelled() {
        match store.fill_due(BACKORDER_ACTOR).await {
            // A full pass may mean more are due: go again at once.
            Ok(n) if n >= MAX_FILLS_PER_PASS => {
                on_filled(n as u64);
                continue;
            }
            Ok(n) => on_filled(n as u64),
            Err(e) => warn!(error = %e, "backorder pass failed; will retry"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = cancel.cancelled() => {}
        }
    }
}

impl Store {
    /// Fills and drops what waits, as far as stock on hand and what is
    /// expected say now, through the normal command path; returns how many
    /// reservations it wrote to.
    pub async fn fill_due(&self, actor: &str) -> Result<usize, StoreError> {
        let client = pool::get(self.pool()).await?;
        let stmt = client.prepare_cached(WAITING_ITEMS).await?;
        let rows = client.query(&stmt, &[&(MAX_FILLS_PER_PASS as i64)]).await?;
        drop(client);
        let mut due: Vec<ReservationId> = Vec::new();
        for r in rows {
            let balance = Balance {
                on_hand: r.get(0),
                reserved: r.get(1),
                confirmed: r.get(2),
                backordered: r.get(3),
            };
            let backlog: Backlog = serde_json::from_value(r.get(4))
                .map_err(|e| StoreError::Corrupt(format!("a backlog: {e}").into()))?;
            for id in backorder::due(balance, &backlog) {
                if !due.contains(&id) {
                    due.push(id);
                }
            }
        }
        due.truncate(MAX_FILLS_PER_PASS);
        let batch: Vec<_> = due
            .into_iter()
            .map(|id| {
                (
                    Command::Fill(Fill { reservation_id: id }),
                    CommandContext::new(actor),
                )
            })
            .collect();
        // Each fill is answered on its own, as expiries are: one bad
        // reservation must not keep the others waiting.
        let answers = self.execute_each(&batch).await;
        let mut wrote = 0;
        for (answer, command) in answers.into_iter().zip(&batch) {
            match answer.map(|a| a.result) {
                Ok(Ok(Outcome::Reservation { .. })) => wrote += 1,
                Ok(_) => {}
                Err(e) => tracing::error!(
                    error = %e,
                    stream = %command.0.stream(),
                    "cannot fill this backorder"
                ),
            }
        }
        Ok(wrote)
    }
}
