//! Reading: one reservation from its stream, one item's balance, and the log
//! in safe commit order.
//!
//! Safe commit order: positions are handed out at insert time but transactions
//! commit in another order, so a reader that follows positions alone skips an
//! event whose transaction was still open when a later one was read. We take
//! only events whose writing transaction is older than every transaction still
//! in flight in this database (`tx_id` below the safe horizon, see
//! `horizon.rs`), ordered by (tx_id, position), and keep that pair as the
//! cursor. Nothing can ever appear
//! below the horizon again, so the cursor never has to go back.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper as Client;
use serde_json::{json, Value};

use crate::domain::backorder::Backlog;
use crate::domain::{
    Balance, Expectation, ExpectedId, Item, RecordedEvent, Rejection, ReservationId,
    ReservationView, StreamId,
};
use crate::limits::{MAX_CURSOR_PART_DIGITS, MAX_EVENTS_SCANNED_PER_FILTERED_READ};
use crate::store::error::Cause;
use crate::store::load::fold_stream;
use crate::store::rows::{recorded_event, EVENT_COLUMNS};
use crate::store::StoreError;

/// A position in safe commit order: (writing transaction, position).
/// Printed as `TX:POSITION`; `0:0` is the start of the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    pub tx_id: i64,
    pub position: i64,
}

impl Cursor {
    pub const START: Cursor = Cursor {
        tx_id: 0,
        position: 0,
    };

    pub fn of(e: &RecordedEvent) -> Cursor {
        Cursor {
            tx_id: e.tx_id,
            position: e.position,
        }
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.tx_id, self.position)
    }
}

impl FromStr for Cursor {
    type Err = Rejection;
    fn from_str(s: &str) -> Result<Self, Rejection> {
        let bad = || Rejection::invalid("after", "a cursor is TX:POSITION, as returned in `next`");
        // Digits only, and few enough to fit: exactly the published pattern
        // (`api::contract::cursor_pattern`), so no sign, space or overflow slips by.
        let number = |part: &str| -> Result<i64, Rejection> {
            if part.is_empty()
                || part.len() > MAX_CURSOR_PART_DIGITS
                || !part.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(bad());
            }
            part.parse().map_err(|_| bad())
        };
        let (tx, pos) = s.split_once(':').ok_or_else(bad)?;
        Ok(Cursor {
            tx_id: number(tx)?,
            position: number(pos)?,
        })
    }
}

/// One page of the log and where the next read starts. Served through
/// `event_json`, which shows each event as it was written.
#[derive(Debug)]
pub struct EventPage {
    pub events: Vec<RecordedEvent>,
    pub next: Cursor,
}

/// The statement that reads a page of the log in safe commit order (public
/// so a test can EXPLAIN it). Parameters: the cursor's transaction id (as
/// text) and position, the limit, the stream prefix (or null), the horizon
/// (as text).
pub fn events_page_sql() -> String {
    format!(
        "SELECT {EVENT_COLUMNS} FROM events
         WHERE (tx_id, position) > ($1::text::xid8, $2)
           AND tx_id < $5::text::xid8
           AND ($4::text IS NULL OR starts_with(stream, $4))
         -- Qualified: the select list's `tx_id::text::bigint` is also named
         -- tx_id, and an unqualified name would sort by it, which no index
         -- gives: every page would sort the whole rest of the log.
         ORDER BY events.tx_id, events.position
         LIMIT $3"
    )
}

/// The place `MAX_EVENTS_SCANNED_PER_FILTERED_READ` events after the cursor
/// (parameters as `events_page_sql`'s first two and its horizon, then the
/// count less one): an index-only walk of the commit order, no filter.
/// Qualified ordering, as in `events_page_sql`: unqualified, `tx_id` would
/// name the select list's bigint, and the walk would become a sort of the
/// whole rest of the log.
pub const SCAN_BOUND_SQL: &str = "SELECT events.tx_id::text::bigint, events.position FROM events
     WHERE (tx_id, position) > ($1::text::xid8, $2) AND tx_id < $3::text::xid8
     ORDER BY events.tx_id, events.position
     OFFSET $4 LIMIT 1";

/// Reads up to `limit` events after `after` in safe commit order, optionally
/// only from streams starting with `stream_prefix`. The callers bound
/// `limit` (`MAX_EVENTS_PER_READ` for readers, `RELAY_BATCH_EVENTS` for the
/// relay).
///
/// A filtered read looks at no more than
/// `MAX_EVENTS_SCANNED_PER_FILTERED_READ` events: when it stops there short
/// of `limit`, its `next` is the last place it looked at, so the next page
/// goes on from there (an empty page whose `next` moved is not the end; a
/// `next` equal to `after` is).
pub async fn events(
    client: &Client,
    after: Cursor,
    limit: i64,
    stream_prefix: Option<&str>,
) -> Result<EventPage, StoreError> {
    let page = page(client, after, limit, stream_prefix).await?;
    // A page that starts before the cut would skip what left the database
    // and look whole: refused, naming where the log here is whole. Checked
    // after the page is read: the cut commits before any event leaves, so a
    // page that missed some sees it.
    crate::store::cut::refuse_before(&**client, after, || format!("the log after {after}")).await?;
    Ok(page)
}

/// Where the log ends now, in safe commit order: the cursor of its last
/// event below the safe horizon, so that a reader starting after it misses
/// nothing committed later (`GET /v1/events/head`). The cut's cursor when no
/// event is left after it, the start of the log when there is none at all.
pub async fn head(client: &Client) -> Result<Cursor, StoreError> {
    let horizon = crate::store::horizon::safe_horizon(client).await?;
    let stmt = client
        .prepare_cached(
            "SELECT events.tx_id::text::bigint, events.position FROM events
             WHERE tx_id < $1::text::xid8
             ORDER BY events.tx_id DESC, events.position DESC LIMIT 1",
        )
        .await?;
    if let Some(row) = client.query_opt(&stmt, &[&horizon.to_string()]).await? {
        return Ok(Cursor {
            tx_id: row.get(0),
            position: row.get(1),
        });
    }
    Ok(crate::store::cut::cut(&**client)
        .await?
        .unwrap_or(Cursor::START))
}

/// One page, as `events` describes it.
async fn page(
    client: &Client,
    after: Cursor,
    limit: i64,
    stream_prefix: Option<&str>,
) -> Result<EventPage, StoreError> {
    let horizon = crate::store::horizon::safe_horizon(client).await?;
    let bound = match stream_prefix {
        None => None,
        Some(_) => {
            let stmt = client.prepare_cached(SCAN_BOUND_SQL).await?;
            client
                .query_opt(
                    &stmt,
                    &[
                        &after.tx_id.to_string(),
                        &after.position,
                        &horizon.to_string(),
                        &(MAX_EVENTS_SCANNED_PER_FILTERED_READ - 1),
                    ],
                )
                .await?
                .map(|row| Cursor {
                    tx_id: row.get(0),
                    position: row.get(1),
                })
        }
    };
    if let Some(bound) = bound {
        return events_before(client, after, bound, limit, stream_prefix).await;
    }
    let events = query_events(
        client,
        &events_page_sql(),
        &[
            &after.tx_id.to_string(),
            &after.position,
            &limit,
            &stream_prefix,
            &horizon.to_string(),
        ],
    )
    .await?;
    let next = events.last().map_or(after, Cursor::of);
    Ok(EventPage { events, next })
}

/// A filtered page of the events after `after` up to and including `bound`;
/// its `next` is `bound` unless the page filled up first.
async fn events_before(
    client: &Client,
    after: Cursor,
    bound: Cursor,
    limit: i64,
    stream_prefix: Option<&str>,
) -> Result<EventPage, StoreError> {
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM events
         WHERE (tx_id, position) > ($1::text::xid8, $2)
           AND (tx_id, position) <= ($5::text::xid8, $6)
           AND starts_with(stream, $4)
         ORDER BY events.tx_id, events.position
         LIMIT $3"
    );
    let events = query_events(
        client,
        &sql,
        &[
            &after.tx_id.to_string(),
            &after.position,
            &limit,
            &stream_prefix,
            &bound.tx_id.to_string(),
            &bound.position,
        ],
    )
    .await?;
    let full = i64::try_from(events.len()).is_ok_and(|n| n >= limit);
    let next = match events.last() {
        Some(last) if full => Cursor::of(last),
        _ => bound,
    };
    Ok(EventPage { events, next })
}

/// The events a statement selecting `EVENT_COLUMNS` returns, decoded.
async fn query_events(
    client: &Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<RecordedEvent>, StoreError> {
    let stmt = client.prepare_cached(sql).await?;
    client
        .query(&stmt, params)
        .await?
        .iter()
        .map(recorded_event)
        .collect()
}

/// A reservation with its whole history, read from the log (always current).
#[derive(Debug, Clone)]
pub struct ReservationDetails {
    pub view: ReservationView,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub events: Vec<RecordedEvent>,
}

impl ReservationDetails {
    /// The reservation as a command's own commit left it, from the events
    /// its batch loaded and appended (`Answered::timeline`: cut at the
    /// command's own event, also when it is re-run after a lost COMMIT reply
    /// and appends nothing); `None` without events. The view is folded from
    /// those events, so such a command is shown the reservation its own
    /// event left, not what later steps made of it; `view` (the decision's)
    /// stands only if they do not fold.
    pub fn committed(view: ReservationView, events: Vec<RecordedEvent>) -> Option<Self> {
        let created_at = events.first()?.recorded_at;
        let updated_at = events.last()?.recorded_at;
        let folded = fold_stream(&view.reservation_id, &events)
            .map(|r| ReservationView::from(&r))
            .unwrap_or(view);
        Some(ReservationDetails {
            view: folded,
            created_at,
            updated_at,
            events,
        })
    }
}

/// The compact form of an event used in timelines: the event as it was
/// written, in `version` of its type's shape (`domain::shape`), which is what
/// a seal's leaf covers.
pub fn event_json(e: &RecordedEvent) -> Value {
    json!({
        "position": e.position,
        "stream": e.stream,
        "seq": e.seq,
        "type": e.event.type_name(),
        "version": e.version,
        "data": e.written_data(),
        "metadata": e.metadata,
        "recorded_at": e.recorded_at,
    })
}

/// The event `event_json` serves, read back as this release reads it (an
/// archive file holds events in that form): its data upcast to the current
/// shape. `tx_id` is the writing transaction's, which the served form does
/// not carry.
pub fn event_from_json(json: &Value, tx_id: i64) -> Result<RecordedEvent, String> {
    let field = |name: &str| json.get(name).ok_or_else(|| format!("no {name}"));
    let text = |name: &str| {
        field(name)?
            .as_str()
            .ok_or_else(|| format!("{name} is not a string"))
    };
    let whole = |name: &str| {
        field(name)?
            .as_i64()
            .ok_or_else(|| format!("{name} is not a whole number"))
    };
    let type_name = text("type")?;
    let version = json.get("version").map_or(Ok(1), |_| whole("version"))?;
    let recorded_at: DateTime<Utc> = serde_json::from_value(field("recorded_at")?.clone())
        .map_err(|e| format!("recorded_at: {e}"))?;
    let event = crate::domain::Event::from_written(
        type_name,
        version,
        field("data")?.clone(),
        recorded_at,
    )?;
    Ok(RecordedEvent {
        position: whole("position")?,
        stream: StreamId::parse("stream", text("stream")?).map_err(|e| e.to_string())?,
        seq: u32::try_from(whole("seq")?).map_err(|e| format!("seq: {e}"))?,
        event,
        version: u16::try_from(version).map_err(|e| format!("version: {e}"))?,
        metadata: serde_json::from_value(field("metadata")?.clone())
            .map_err(|e| format!("metadata: {e}"))?,
        recorded_at,
        tx_id,
    })
}

pub async fn reservation(
    client: &Client,
    id: &ReservationId,
) -> Result<Option<ReservationDetails>, StoreError> {
    let events = stream_events(client, &StreamId::Reservation(id.clone())).await?;
    if events.is_empty() {
        return Ok(None);
    }
    let r = fold_stream(id, &events)?;
    Ok(Some(ReservationDetails {
        view: (&r).into(),
        created_at: r.created_at(),
        updated_at: r.updated_at(),
        events,
    }))
}

/// A stream's events in seq order: from the log and, for a stream open when
/// older partitions left the database, from `carried_events` (a step in
/// both while a detach copies it is taken once). A stream with no events
/// that is in the directory of archived streams is refused: it is not
/// missing, the archive holds it.
pub(crate) async fn stream_events(
    client: &Client,
    stream: &StreamId,
) -> Result<Vec<RecordedEvent>, StoreError> {
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE stream = $1
             UNION ALL
             SELECT {EVENT_COLUMNS} FROM carried_events WHERE stream = $1
             ORDER BY seq"
        ))
        .await?;
    let name = stream.to_string();
    let rows = client.query(&stmt, &[&name]).await?;
    let mut events: Vec<RecordedEvent> = Vec::with_capacity(rows.len());
    for row in &rows {
        let e = recorded_event(row)?;
        if events.last().is_none_or(|last| last.seq != e.seq) {
            events.push(e);
        }
    }
    if events.is_empty() {
        let archived = client
            .query_opt(
                "SELECT last_position FROM archived_streams WHERE stream = $1",
                &[&name],
            )
            .await?;
        if let Some(row) = archived {
            let position: i64 = row.get(0);
            let what = format!("{stream} (its last event is at position {position})");
            let cut = crate::store::cut::cut(&**client).await?.unwrap_or_default();
            return Err(crate::store::cut::archived(what, cut));
        }
    }
    Ok(events)
}

/// An expected receipt folded from its stream, with its events; `None` if
/// there is no such stream.
pub async fn expected_receipt(
    client: &Client,
    id: &ExpectedId,
) -> Result<Option<(Expectation, Vec<RecordedEvent>)>, StoreError> {
    let events = stream_events(client, &StreamId::Expected(id.clone())).await?;
    let folded = Expectation::fold_all(
        id,
        events.iter().map(|e| {
            (
                e.seq,
                &e.event,
                e.metadata.command_id,
                e.metadata.fingerprint.as_deref(),
            )
        }),
    )
    .map_err(|v| StoreError::Corrupt(Cause::with_source(format!("expected receipt {id}"), v)))?;
    Ok(folded.map(|e| (e, events)))
}

/// The write-side balance of one item and its backlog (what waits for it,
/// what is expected of it), read from its one row: one moment.
pub async fn balance_and_backlog(
    client: &Client,
    item: &Item,
) -> Result<Option<(Balance, Backlog)>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT on_hand, reserved, confirmed, backordered, backlog FROM item_balances
             WHERE sku = $1 AND location = $2",
        )
        .await?;
    let row = client
        .query_opt(&stmt, &[&item.sku.as_str(), &item.location.as_str()])
        .await?;
    let Some(r) = row else {
        return Ok(None);
    };
    let balance = Balance {
        on_hand: r.get(0),
        reserved: r.get(1),
        confirmed: r.get(2),
        backordered: r.get(3),
    };
    let backlog = serde_json::from_value(r.get(4))
        .map_err(|e| StoreError::Corrupt(format!("{item} has backlog: {e}").into()))?;
    Ok(Some((balance, backlog)))
}

/// The write-side balance of one item, if it was ever received.
pub async fn balance(client: &Client, item: &Item) -> Result<Option<Balance>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT on_hand, reserved, confirmed, backordered FROM item_balances
             WHERE sku = $1 AND location = $2",
        )
        .await?;
    let row = client
        .query_opt(&stmt, &[&item.sku.as_str(), &item.location.as_str()])
        .await?;
    Ok(row.map(|r| Balance {
        on_hand: r.get(0),
        reserved: r.get(1),
        confirmed: r.get(2),
        backordered: r.get(3),
    }))
}
