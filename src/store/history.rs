//! History: an item's or an order's events, and an item's figures at a past
//! moment, folded from the log with the same `Event::stock_effects` as the
//! command path and the audit.
//!
//! Finding an item's events goes through one GIN index on the skus of every
//! event (`schema/0007`).
//!
//! Answers about the past are capped where the log is stable, so they never
//! change afterwards: a time at or past the oldest open transaction of this
//! database (or in the future) is clamped to just before it, and a position is
//! read with only events below the safe horizon; the answer says what it was
//! clamped to.

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper as Client;
use futures_util::TryStreamExt;

use crate::domain::event::opens_reservation_sql;
use crate::domain::{Balance, Item, OrderId, RecordedEvent, ReservationId, StreamId};
use crate::store::error::corrupt;
use crate::store::rows::{recorded_event, EVENT_COLUMNS};
use crate::store::StoreError;
use crate::store::{cut, horizon};

pub use crate::domain::AsOf;

/// The events of one item in position order, found through the GIN index on
/// `skus` (`schema/0007`); a line of the event must have the location too.
/// `$3`/`$4` bound the time or position, `$5` is the safe horizon.
const ITEM_EVENTS: &str = "
    SELECT {COLUMNS} FROM events
    WHERE skus @> ARRAY[$1::text]
      AND EXISTS (SELECT 1 FROM unnest(skus, locations) AS l(sku, location)
                  WHERE l.sku = $1 AND l.location = $2)
      AND ($3::timestamptz IS NULL OR recorded_at <= $3)
      AND ($4::bigint IS NULL OR position <= $4)
      AND tx_id < $5::text::xid8
    ORDER BY position";

/// The statement that finds one item's events (public so a test can EXPLAIN it).
pub fn item_events_sql() -> String {
    ITEM_EVENTS.replace("{COLUMNS}", EVENT_COLUMNS)
}

/// Every event that moved `item`, oldest first, below the safe horizon.
pub async fn item_events(client: &Client, item: &Item) -> Result<Vec<RecordedEvent>, StoreError> {
    let horizon = horizon::safe_horizon(client).await?;
    let stmt = client.prepare_cached(&item_events_sql()).await?;
    let none_time: Option<DateTime<Utc>> = None;
    let none_position: Option<i64> = None;
    let rows = client
        .query(
            &stmt,
            &[
                &item.sku.as_str(),
                &item.location.as_str(),
                &none_time,
                &none_position,
                &horizon.to_string(),
            ],
        )
        .await?;
    let events = rows
        .iter()
        .map(recorded_event)
        .collect::<Result<Vec<_>, _>>()?;
    // After the read: the cut commits before any event leaves (`store::cut`).
    cut::refuse_if_cut(&**client, || format!("the history of {item}")).await?;
    Ok(events)
}

/// An item's figures at a past moment, and where the answer stands.
#[derive(Clone, Copy, Debug)]
pub struct AsOfFigures {
    pub figures: Balance,
    /// The moment answered: the one asked for, or where it was clamped to.
    pub answered: AsOf,
    /// Whether the moment asked for was past the stable point.
    pub clamped: bool,
    /// The last event counted: its position and time.
    pub last: Option<(i64, DateTime<Utc>)>,
}

/// Folds `item`'s events up to `as_of` into its figures as the rows stream in
/// (never holding the item's history in memory), capped at the stable point.
pub async fn figures_as_of(
    client: &Client,
    item: &Item,
    as_of: AsOf,
) -> Result<AsOfFigures, StoreError> {
    let stable = horizon::stable(client).await?;
    let (answered, clamped) = match as_of {
        AsOf::Time(t) if t >= stable.before => (
            AsOf::Time(stable.before - chrono::Duration::microseconds(1)),
            true,
        ),
        other => (other, false),
    };
    let (time, position) = match answered {
        AsOf::Time(t) => (Some(t), None),
        AsOf::Position(p) => (None, Some(p)),
    };
    let stmt = client.prepare_cached(&item_events_sql()).await?;
    let horizon = stable.horizon.to_string();
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
        &item.sku.as_str(),
        &item.location.as_str(),
        &time,
        &position,
        &horizon,
    ];
    let rows = client.query_raw(&stmt, params).await?;
    let mut rows = std::pin::pin!(rows);
    let mut figures = Balance::default();
    let mut last = None;
    while let Some(row) = rows.try_next().await? {
        let e = recorded_event(&row)?;
        for (i, d) in e.event.stock_effects() {
            if &i == item {
                figures.apply(d);
            }
        }
        last = Some((e.position, e.recorded_at));
    }
    // A position past every event below the horizon is answered as of the
    // last such event: say so.
    let (answered, clamped) = match answered {
        AsOf::Position(p) => {
            let frontier = frontier(client, &horizon).await?;
            if p > frontier {
                (AsOf::Position(frontier), true)
            } else {
                (answered, clamped)
            }
        }
        time => (time, clamped),
    };
    // Figures are folded from the item's first event; once part of the log
    // left, no moment can be answered from what is left. Checked after the
    // fold: the cut commits before any event leaves (`store::cut`).
    cut::refuse_if_cut(&**client, || {
        format!("the figures of {item} as of a past moment")
    })
    .await?;
    Ok(AsOfFigures {
        figures,
        answered,
        clamped,
        last,
    })
}

/// The highest position of an event below the horizon (0 for an empty log).
async fn frontier(client: &Client, horizon: &str) -> Result<i64, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT coalesce(max(position), 0) FROM events WHERE tx_id < $1::text::xid8",
        )
        .await?;
    Ok(client.query_one(&stmt, &[&horizon]).await?.get(0))
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
    // The order's reservation may have left the database: carried while
    // open, in the directory once archived (schema 0022).
    let stmt = client
        .prepare_cached(concat!(
            "SELECT stream FROM events WHERE ",
            opens_reservation_sql!(),
            " AND order_id = $1
             UNION ALL
             SELECT stream FROM carried_events WHERE ",
            opens_reservation_sql!(),
            " AND order_id = $1
             UNION ALL
             SELECT stream FROM archived_streams WHERE order_id = $1
             LIMIT 1",
        ))
        .await?;
    let Some(row) = client.query_opt(&stmt, &[&order.as_str()]).await? else {
        return Ok(None);
    };
    let stream = StreamId::parse("stream", row.get(0)).map_err(corrupt)?;
    match stream.reservation_id() {
        Some(id) => Ok(Some(id.clone())),
        None => Err(StoreError::Corrupt(
            format!("{stream} holds the event that opens a reservation").into(),
        )),
    }
}
