//! The expiry worker: every interval, expires the reservations that are due,
//! through the same command path as everything else.
//!
//! It finds candidates in the `reservation_expiry` read model and sends each
//! an `Expire` command, which decides from the log at the database clock. So
//! it is idempotent, several processes may run it at once (the second expiry
//! of a reservation answers "not due"), and a confirm or release racing it
//! settles exactly as the outcome table says.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::domain::command::Expire;
use crate::domain::{Command, CommandContext, Outcome};
use crate::limits::MAX_EXPIRIES_PER_PASS;
use crate::read_model::reservation_expiry;
use crate::store::{pool, Store, StoreError};

/// The actor recorded on expiry events.
pub const EXPIRY_ACTOR: &str = "expiry-worker";

/// Runs until `cancel` fires; `on_expired` hears how many each pass expired.
pub async fn run(
    store: Store,
    interval: Duration,
    batch: i64,
    cancel: CancellationToken,
    on_expired: impl Fn(u64) + Send,
) {
    while !cancel.is_cancelled() {
        match store.expire_due(EXPIRY_ACTOR, batch).await {
            // A full pass may mean more are due: go again at once.
            Ok(n) if n as i64 >= batch => {
                on_expired(n as u64);
                continue;
            }
            Ok(n) => on_expired(n as u64),
            Err(e) => warn!(error = %e, "expiry pass failed; will retry"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = cancel.cancelled() => {}
        }
    }
}

impl Store {
    /// Expires every reservation that is due now (as far as the expiry
    /// projection knows), through the normal command path; returns how many
    /// it expired.
    pub async fn expire_due(&self, actor: &str, limit: i64) -> Result<usize, StoreError> {
        let limit = limit.clamp(1, MAX_EXPIRIES_PER_PASS);
        let due = pool::reading(self.pool(), async |client| {
            reservation_expiry::due(client, limit).await
        })
        .await?;
        let batch: Vec<_> = due
            .into_iter()
            .map(|id| {
                (
                    Command::Expire(Expire { reservation_id: id }),
                    CommandContext::new(actor),
                )
            })
            .collect();
        // Each expiry is answered on its own: one bad reservation (a corrupt
        // stream, a bug) or one held lock must not keep every other due
        // reservation holding stock. One that fails is still due: the next
        // pass tries it again.
        let results = super::background::run_each(self, &batch, "expire").await?;
        Ok(results
            .iter()
            .filter(|r| {
                matches!(
                    r,
                    Ok(Outcome::Reservation {
                        replayed: false,
                        ..
                    })
                )
            })
            .count())
    }
}
