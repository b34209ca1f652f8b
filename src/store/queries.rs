//! The reads of `Store`: everything the server and the CLI ask of the
//! database that is not a command goes through one of these.

use std::time::Duration;

use deadpool_postgres::{Object, Status};
use tracing::warn;

use crate::domain::{Balance, Item, OrderId, RecordedEvent, Rejection, ReservationId};
use crate::limits::{MAX_EVENTS_PER_READ, READ_STANDBY_RETRY_MS, RELAY_BATCH_EVENTS};
use crate::store::history::{self, AsOf, AsOfFigures};
use crate::store::keys::{self, ApiKey, Role};
use crate::store::read::{self, Cursor, EventPage, ReservationDetails};
use crate::store::{pool, Store, StoreError};

impl Store {
    /// A connection for reads that may be served by a standby (`with_reads`):
    /// one there if it can be had, else one on the primary. After a standby
    /// could not be reached, reads go to the primary for
    /// `READ_STANDBY_RETRY_MS` before a standby is tried again, so a missing
    /// standby costs one failed connection attempt per interval, not one per read.
    async fn read_connection(&self) -> Result<Object, StoreError> {
        let Some(down) = &self.standby_down else {
            return pool::get(&self.pool).await;
        };
        let now = tokio::time::Instant::now();
        let skip = down
            .lock()
            .expect("standby state")
            .is_some_and(|until| now < until);
        if !skip {
            match pool::get(&self.reads).await {
                Ok(client) => return Ok(client),
                Err(StoreError::Unavailable(why)) => {
                    warn!(%why, "no standby to read from; reading on the primary for a while");
                    *down.lock().expect("standby state") =
                        Some(now + Duration::from_millis(READ_STANDBY_RETRY_MS));
                }
                Err(e) => return Err(e),
            }
        }
        pool::get(&self.pool).await
    }

    pub async fn reservation(
        &self,
        id: &ReservationId,
    ) -> Result<Option<ReservationDetails>, StoreError> {
        pool::reading(&self.pool, async |c| read::reservation(c, id).await).await
    }

    /// An expected receipt as its stream says it stands, with its events.
    pub async fn expected_receipt(
        &self,
        id: &crate::domain::ExpectedId,
    ) -> Result<Option<(crate::domain::Expectation, Vec<RecordedEvent>)>, StoreError> {
        pool::reading(&self.pool, async |c| read::expected_receipt(c, id).await).await
    }

    pub async fn balance(&self, item: &Item) -> Result<Option<Balance>, StoreError> {
        pool::reading(&self.pool, async |c| read::balance(c, item).await).await
    }

    pub async fn events(
        &self,
        after: Cursor,
        limit: i64,
        stream_prefix: Option<&str>,
    ) -> Result<EventPage, StoreError> {
        let limit = limit.clamp(1, MAX_EVENTS_PER_READ);
        pool::read_on(self.read_connection().await?, async |c| {
            read::events(c, after, limit, stream_prefix).await
        })
        .await
    }

    /// Where the log ends now (`read::head`).
    pub async fn events_head(&self) -> Result<Cursor, StoreError> {
        pool::read_on(self.read_connection().await?, async |c| read::head(c).await).await
    }

    /// Refuses (`HISTORY_ARCHIVED`) a read of the log from `after` on that
    /// would start before the cut: for a subscription, checked once before
    /// it begins, so the subscriber gets the refusal, not an empty stream.
    pub async fn refuse_before_cut(&self, after: Cursor) -> Result<(), StoreError> {
        pool::read_on(self.read_connection().await?, async |c| {
            crate::store::cut::refuse_before(&***c, after, || format!("the log after {after}"))
                .await
        })
        .await
    }

    /// A batch of the log for the relay: like `events`, up to
    /// `RELAY_BATCH_EVENTS` at once.
    pub async fn log_batch(&self, after: Cursor, limit: i64) -> Result<EventPage, StoreError> {
        let limit = limit.clamp(1, RELAY_BATCH_EVENTS);
        pool::read_on(self.read_connection().await?, async |c| {
            read::events(c, after, limit, None).await
        })
        .await
    }

    /// An item's figures at a past moment, replayed from the log and capped
    /// where the log is stable (see `history`).
    pub async fn stock_as_of(&self, item: &Item, as_of: AsOf) -> Result<AsOfFigures, StoreError> {
        pool::reading(&self.pool, async |c| {
            history::figures_as_of(c, item, as_of).await
        })
        .await
    }

    /// Every event that moved `item`, oldest first (on a standby when the
    /// store reads there: it stops at the safe horizon, as pages do).
    pub async fn item_history(&self, item: &Item) -> Result<Vec<RecordedEvent>, StoreError> {
        pool::read_on(self.read_connection().await?, async |c| {
            history::item_events(c, item).await
        })
        .await
    }

    /// The reservation holding `order` with its whole history.
    pub async fn order_history(
        &self,
        order: &OrderId,
    ) -> Result<Option<ReservationDetails>, StoreError> {
        pool::read_on(
            self.read_connection().await?,
            async |c| match history::reservation_of_order(c, order).await? {
                Some(id) => read::reservation(c, &id).await,
                None => Ok(None),
            },
        )
        .await
    }

    /// Whether this store's connections are a superuser's: then nothing but
    /// a digest kept outside stops a bug or a stolen connection string from
    /// rewriting the log (docs/auditing.md, "Roles").
    pub async fn connected_as_superuser(&self) -> Result<bool, StoreError> {
        pool::reading(&self.pool, async |client| {
            let row = client
                .query_one(
                    "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
                    &[],
                )
                .await?;
            Ok(row.get(0))
        })
        .await
    }

    /// The pool's size, idle connections and waiting callers.
    pub fn pool_status(&self) -> Status {
        self.pool.status()
    }

    /// The live key whose hash is `key_hash`, with its stored hash.
    pub async fn find_key(&self, key_hash: &str) -> Result<Option<(ApiKey, String)>, StoreError> {
        pool::reading(&self.pool, async |c| keys::find(c, key_hash).await).await
    }

    /// Creates a key; the answer carries its secret, shown once.
    pub async fn create_key(
        &self,
        name: Option<&str>,
        role: Role,
    ) -> Result<Result<(ApiKey, String), Rejection>, StoreError> {
        pool::reading(&self.pool, async |c| keys::create(c, name, role).await).await
    }

    pub async fn list_keys(&self) -> Result<Vec<ApiKey>, StoreError> {
        pool::reading(&self.pool, async |c| keys::list(c).await).await
    }

    /// Revokes the key with this name or id; `None` if there is none.
    pub async fn revoke_key(&self, name_or_id: &str) -> Result<Option<ApiKey>, StoreError> {
        pool::reading(&self.pool, async |c| keys::revoke(c, name_or_id).await).await
    }
}
