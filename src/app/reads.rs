//! Reads the shells ask of `Store` that the read models and the seals
//! answer: an item's current figures, an order's view, the reservation
//! totals, the latest digest, the projections' status and the log's
//! partitions.

use crate::domain::{promise, Balance, Item, OrderId, Promise};
use crate::limits::{MAX_EXPIRING_LISTED, MAX_LOW_STOCK_ITEMS};
use crate::projection::status::{self, ProjectionStatus};
use crate::read_model::low_stock::{self, LowRow};
use crate::read_model::{
    incoming, order_view, reservation_expiry, reservation_totals, stock_levels,
};
use crate::seal;
use crate::store::{pool, read, room, Store, StoreError};

/// An item's current figures and where they come from.
#[derive(Clone, Copy, Debug)]
pub struct StockNow {
    pub figures: Balance,
    /// The position and time of the last event the answer includes, as far
    /// as the `stock_levels` read model has come.
    pub position: i64,
    pub recorded_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The item is not in the read model yet (received moments ago): the
    /// figures are the write-side balance, which is current.
    pub from_balance: bool,
}

/// What can be promised of an item, and as of which position of the log.
#[derive(Clone, Debug)]
pub struct PromiseNow {
    /// The item's figures the promise starts from.
    pub figures: Balance,
    pub promise: Promise,
    /// The position `stock_levels` and `incoming` have both come to.
    pub position: i64,
}

impl Store {
    /// Available to promise for `item`, now and by each date stock is due
    /// (`domain::promise`), from the `stock_levels` and `incoming` read
    /// models at one moment. `None` for an item the ledger does not know;
    /// `Unavailable` while the two read models' checkpoints differ.
    pub async fn promise(&self, item: &Item) -> Result<Option<PromiseNow>, StoreError> {
        pool::reading(self.pool(), async |c| {
            let o = incoming::outlook(c, item).await?;
            if !o.consistent {
                return Err(StoreError::Unavailable(
                    "stock_levels and incoming are at different checkpoints (a rebuild is \
                     being swapped in); ask again"
                        .into(),
                ));
            }
            let (figures, due) = match o.figures {
                Some(f) => (f, o.due),
                // Known moments ago: the read models have not caught up.
                // The item's balance row says both halves at one moment:
                // its figures (with what waits) and what is expected of it.
                None => match read::balance_and_backlog(c, item).await? {
                    Some((b, backlog)) => {
                        let due = backlog
                            .incoming
                            .values()
                            .map(|d| (d.on, i64::from(d.units)))
                            .collect();
                        (b, due)
                    }
                    None => return Ok(None),
                },
            };
            Ok(Some(PromiseNow {
                figures,
                promise: promise(figures, &due),
                position: o.position,
            }))
        })
        .await
    }

    /// An item's current figures: the `stock_levels` row, or the write-side
    /// balance when the read model has not caught up with its first receipt.
    /// `None` for an item never received: callers answer NOT_FOUND (the CLI
    /// and the API alike, see docs/domain.md).
    pub async fn stock_now(&self, item: &Item) -> Result<Option<StockNow>, StoreError> {
        pool::reading(self.pool(), async |c| {
            let level = stock_levels::level(c, item).await?;
            let (figures, from_balance) = match level.figures {
                Some(f) => (f, false),
                None => match read::balance(c, item).await? {
                    Some(b) => (b, true),
                    None => return Ok(None),
                },
            };
            Ok(Some(StockNow {
                figures,
                position: level.position,
                recorded_at: level.recorded_at,
                from_balance,
            }))
        })
        .await
    }

    /// The `order_view` row of `order`, if the read model has it.
    pub async fn order_view(
        &self,
        order: &OrderId,
    ) -> Result<Option<order_view::OrderViewRow>, StoreError> {
        pool::reading(self.pool(), async |c| order_view::row(c, order).await).await
    }

    /// Reservations and the units they hold, by state, from the
    /// `reservation_totals` read model.
    pub async fn reservation_totals(&self) -> Result<reservation_totals::Totals, StoreError> {
        pool::reading(self.pool(), async |c| reservation_totals::totals(c).await).await
    }

    /// The items low now, by (location, sku), from the `low_stock` read
    /// model: at most `MAX_LOW_STOCK_ITEMS`, and whether there were more.
    pub async fn low_stock(&self) -> Result<(Vec<(Item, LowRow)>, bool), StoreError> {
        let rows = pool::reading(self.pool(), async |c| {
            low_stock::low_items(c, MAX_LOW_STOCK_ITEMS + 1).await
        })
        .await?;
        let truncated = rows.len() as i64 > MAX_LOW_STOCK_ITEMS;
        let mut items = Vec::with_capacity(rows.len());
        for (sku, location, row) in rows.into_iter().take(MAX_LOW_STOCK_ITEMS as usize) {
            let item = Item {
                sku: crate::domain::Sku::parse("sku", &sku)
                    .map_err(crate::store::error::corrupt)?,
                location: crate::domain::Location::parse("location", &location)
                    .map_err(crate::store::error::corrupt)?,
            };
            items.push((item, row));
        }
        Ok((items, truncated))
    }

    /// The held reservations that expire soonest, from the
    /// `reservation_expiry` read model: at most `MAX_EXPIRING_LISTED`, and
    /// whether there were more.
    pub async fn expiring_soonest(
        &self,
    ) -> Result<(Vec<(String, reservation_expiry::ExpiryRow)>, bool), StoreError> {
        let mut rows = pool::reading(self.pool(), async |c| {
            reservation_expiry::soonest(c, MAX_EXPIRING_LISTED + 1).await
        })
        .await?;
        let truncated = rows.len() as i64 > MAX_EXPIRING_LISTED;
        rows.truncate(MAX_EXPIRING_LISTED as usize);
        Ok((rows, truncated))
    }

    /// The latest seal as a digest (docs/auditing.md); `None` before the
    /// first block is sealed.
    pub async fn digest(&self) -> Result<Option<seal::Digest>, StoreError> {
        pool::reading(self.pool(), async |c| seal::digest::latest(c).await).await
    }

    /// The partitions the log and the chain have attached, by table.
    pub async fn log_partitions(&self) -> Result<Vec<(String, i64)>, StoreError> {
        pool::reading(self.pool(), async |c| room::attached(&***c).await).await
    }

    /// Every read model's checkpoint, lag and state.
    pub async fn projection_status(&self) -> Result<Vec<ProjectionStatus>, StoreError> {
        pool::reading(self.pool(), async |c| status::status(&***c).await).await
    }
}
