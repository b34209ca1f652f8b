//! History: an item's or an order's events, and an item's figures at a past
//! moment, folded from the log with the same `Event::stock_effects` as the
//! command path and the audit.
//!
//! Finding an item's events scans the log (reservation lines live inside
//! jsonb, and indexing them would slow every reservation down). That is the
//! right trade for an audit-time question; the projection answers the
//! everyday "how much now".

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper as Client;

use crate::domain::{Balance, Item, OrderId, RecordedEvent, ReservationId};
use crate::store::rows::{recorded_event, EVENT_COLUMNS};
use crate::store::StoreError;

/// A past moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsOf {
    /// Every event recorded at or before this time.
    Time(DateTime<Utc>),
    /// Every event at or before this log position.
    Position(i64),
}

/// Every event that moved `item`, oldest first, up to `as_of` when given.
pub async fn item_events(
    client: &Client,
    item: &Item,
    as_of: Option<AsOf>,
) -> Result<Vec<RecordedEvent>, StoreError> {
    let (time, position) = match as_of {
        None => (None, None),
        Some(AsOf::Time(t)) => (Some(t), None),
        Some(AsOf::Position(p)) => (None, Some(p)),
    };
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM events
             WHERE ((type IN ('StockReceived', 'StockAdjusted')
                     AND data ->> 'sku' = $1 AND data ->> 'location' = $2)
                    OR data -> 'lines' @> jsonb_build_array(jsonb_build_object('sku', $1::text, 'location', $2::text)))
               AND ($3::timestamptz IS NULL OR recorded_at <= $3)
               AND ($4::bigint IS NULL OR position <= $4)
             ORDER BY position"
        ))
        .await?;
    let rows = client
        .query(
            &stmt,
            &[
                &item.sku.as_str(),
                &item.location.as_str(),
                &time,
                &position,
            ],
        )
        .await?;
    rows.iter().map(recorded_event).collect()
}

/// Folds `item`'s share of `events` into its figures.
pub fn figures(item: &Item, events: &[RecordedEvent]) -> Balance {
    let mut b = Balance::default();
    for e in events {
        for (i, d) in e.event.stock_effects() {
            if &i == item {
                b.apply(d);
            }
        }
    }
    b
}

/// The reservation holding `order`, if any.
pub async fn reservation_of_order(
    client: &Client,
    order: &OrderId,
) -> Result<Option<ReservationId>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT substr(stream, length('reservation:') + 1) FROM events
             WHERE type = 'ReservationCreated' AND (data ->> 'order_id') = $1",
        )
        .await?;
    client
        .query_opt(&stmt, &[&order.as_str()])
        .await?
        .map(|r| {
            ReservationId::parse("reservation_id", r.get(0))
                .map_err(|e| StoreError::Corrupt(e.to_string()))
        })
        .transpose()
}

/// An item's figures from the `stock_levels` projection.
pub async fn stock_level(client: &Client, item: &Item) -> Result<Option<Balance>, StoreError> {
    let stmt = client
        .prepare_cached("SELECT on_hand, reserved, confirmed FROM stock_levels WHERE sku = $1 AND location = $2")
        .await?;
    Ok(client
        .query_opt(&stmt, &[&item.sku.as_str(), &item.location.as_str()])
        .await?
        .map(|r| Balance {
            on_hand: r.get(0),
            reserved: r.get(1),
            confirmed: r.get(2),
        }))
}

/// How far the `stock_levels` read model has come: the position and time of
/// the last event it applied.
#[derive(Clone, Copy, Debug)]
pub struct ReadModelAsOf {
    pub position: i64,
    pub recorded_at: Option<DateTime<Utc>>,
}

/// An item's figures from `stock_levels`, and how far that read model has come.
pub async fn stock_level_as_of(
    client: &Client,
    item: &Item,
) -> Result<(Option<Balance>, ReadModelAsOf), StoreError> {
    let balance = stock_level(client, item).await?;
    let stmt = client
        .prepare_cached(
            "SELECT position, last_event_at FROM projection_checkpoints WHERE name = 'stock_levels' AND slot = 'live'",
        )
        .await?;
    let row = client.query_one(&stmt, &[]).await?;
    Ok((
        balance,
        ReadModelAsOf {
            position: row.get(0),
            recorded_at: row.get(1),
        },
    ))
}

/// One row of the `order_view` read model, as JSON.
pub async fn order_view(
    client: &Client,
    order: &OrderId,
) -> Result<Option<serde_json::Value>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT jsonb_build_object(
                 'order_id', order_id, 'reservation_id', reservation_id, 'state', state, 'lines', lines,
                 'expires_at', expires_at, 'created_at', created_at, 'updated_at', updated_at,
                 'history', history)
             FROM order_view WHERE order_id = $1",
        )
        .await?;
    Ok(client
        .query_opt(&stmt, &[&order.as_str()])
        .await?
        .map(|r| r.get(0)))
}
