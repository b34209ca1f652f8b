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
use crate::limits::{MAX_FILLS_PER_PASS, MAX_WAITING_PAGES_PER_PASS};
use crate::store::{pool, Store, StoreError};

/// The actor recorded on the events the worker writes.
pub const BACKORDER_ACTOR: &str = "backorder-worker";

/// The items something waits for, with their figures and backlogs (the
/// partial index `item_balances_waiting` holds exactly these rows), a page
/// at a time after an item (by location, then SKU).
const WAITING_ITEMS: &str = "
    SELECT location, sku, on_hand, reserved, confirmed, backordered, backlog
    FROM item_balances
    WHERE backordered > 0 AND (location, sku) > ($1, $2)
    ORDER BY location, sku
    LIMIT $3";

/// Where a pass of the backorder worker goes on from: the last item it
/// read (location, SKU), or the start.
pub type Cursor = Option<(String, String)>;

/// Runs until `cancel` fires; `on_filled` hears how many reservations each
/// pass wrote to. Each pass goes on where the last one stopped, so every
/// item something waits for is reached, however many there are.
pub async fn run(
    store: Store,
    interval: Duration,
    cancel: CancellationToken,
    on_filled: impl Fn(u64) + Send,
) {
    let mut cursor: Cursor = None;
    while !cancel.is_cancelled() {
        match store.fill_pass(BACKORDER_ACTOR, cursor.take()).await {
            Ok((n, next)) => {
                on_filled(n as u64);
                cursor = next;
                // Work left, or items not read yet: go again at once.
                if n >= MAX_FILLS_PER_PASS || cursor.is_some() {
                    continue;
                }
            }
            Err(e) => warn!(error = %e, "backorder pass failed; will retry"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = cancel.cancelled() => {}
        }
    }
}

impl Store {
    /// Fills and drops what waits for every item, as far as stock on hand
    /// and what is expected say now; returns how many reservations it wrote
    /// to. (The worker runs the same passes, one per wake-up.)
    pub async fn fill_due(&self, actor: &str) -> Result<usize, StoreError> {
        let mut wrote = 0;
        let mut cursor: Cursor = None;
        loop {
            let (n, next) = self.fill_pass(actor, cursor).await?;
            wrote += n;
            match next {
                None => return Ok(wrote),
                Some(at) => cursor = Some(at),
            }
        }
    }

    /// One pass: reads the items something waits for from `from` on, a
    /// page at a time, until `MAX_FILLS_PER_PASS` reservations have
    /// something to write or `MAX_WAITING_PAGES_PER_PASS` pages are read,
    /// and sends each of those reservations a `Fill`, through the normal
    /// command path. Returns how many it wrote to, and where the next pass
    /// goes on from (`None`: this one read to the end).
    pub async fn fill_pass(
        &self,
        actor: &str,
        from: Cursor,
    ) -> Result<(usize, Cursor), StoreError> {
        let (due, next) = self.waiting(from).await?;
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
        let results = super::background::run_each(self, &batch, "fill").await?;
        let wrote = results
            .iter()
            .filter(|r| matches!(r, Ok(Outcome::Reservation { .. })))
            .count();
        Ok((wrote, next))
    }

    /// The reservations with something to write, in placing order per
    /// item, from the items read from `from` on; and where reading stopped.
    async fn waiting(&self, from: Cursor) -> Result<(Vec<ReservationId>, Cursor), StoreError> {
        // A read like any other: cancelled on the server if the pass is.
        pool::reading(self.pool(), async |client| {
            let stmt = client.prepare_cached(WAITING_ITEMS).await?;
            let mut after = from.unwrap_or_default();
            let mut due: Vec<ReservationId> = Vec::new();
            for _ in 0..MAX_WAITING_PAGES_PER_PASS {
                let page = MAX_FILLS_PER_PASS as i64;
                let rows = client.query(&stmt, &[&after.0, &after.1, &page]).await?;
                for r in &rows {
                    after = (r.get(0), r.get(1));
                    due_of(r, &after, &mut due);
                }
                if (rows.len() as i64) < page {
                    return Ok((due, None));
                }
                if due.len() >= MAX_FILLS_PER_PASS {
                    break;
                }
            }
            Ok((due, Some(after)))
        })
        .await
    }
}

/// Adds the reservations of one waiting item's row that have something to
/// write. A row whose backlog cannot be read is logged and passed over:
/// one damaged row must not stop every other item's orders (the audit
/// names it).
fn due_of(r: &tokio_postgres::Row, item: &(String, String), due: &mut Vec<ReservationId>) {
    let balance = Balance {
        on_hand: r.get(2),
        reserved: r.get(3),
        confirmed: r.get(4),
        backordered: r.get(5),
    };
    let backlog: Backlog = match serde_json::from_value(r.get(6)) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(error = %e, sku = %item.1, location = %item.0, "a backlog that cannot be read");
            return;
        }
    };
    for id in backorder::due(balance, &backlog) {
        if !due.contains(&id) {
            due.push(id);
        }
    }
}
