//! `incoming`: what each expected receipt still brings, and when, from the
//! last event of its stream. Available to promise reads it (`promise`).

use std::marker::PhantomData;

use chrono::{DateTime, NaiveDate, Utc};
use deadpool_postgres::ClientWrapper;
use rustc_hash::FxHashMap as HashMap;
use tokio_postgres::Client;

use crate::domain::Item;
use crate::read_model::{Diffs, Model, Rows, StreamSeen};
use crate::store::StoreError;

pub struct Incoming;

pub static INCOMING: Model<Incoming> = Model {
    name: "incoming",
    tables: &["incoming"],
    schema: include_str!("../../projections/incoming/schema.sql"),
    apply: &[include_str!(
        "../../projections/incoming/apply_1_expected.sql"
    )],
    batch: None,
    rows: PhantomData,
};

/// One expected receipt's row: where its last event left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncomingRow {
    pub sku: String,
    pub location: String,
    pub expected_on: NaiveDate,
    pub outstanding: i64,
    pub position: i64,
    pub updated_at: DateTime<Utc>,
}

/// Rows by stream name.
type ByStream = HashMap<String, IncomingRow>;

/// The label of its differences: the model's name.
const LABEL: &str = INCOMING.name;

impl Rows for Incoming {
    type Expected = ByStream;
    type Actual = ByStream;

    /// The stream's last event seen holds.
    fn fold(expected: &mut ByStream, seen: &StreamSeen<'_>) {
        for e in seen.events {
            let Some((sku, location, expected_on, outstanding)) =
                crate::domain::expectation::stated(e.event)
            else {
                continue;
            };
            let row = IncomingRow {
                sku: sku.to_string(),
                location: location.to_string(),
                expected_on,
                outstanding: i64::from(outstanding),
                position: e.position,
                updated_at: e.recorded_at,
            };
            keep_later(expected, seen.stream.to_string(), row);
        }
    }

    fn merge(into: &mut ByStream, other: ByStream) {
        for (key, row) in other {
            keep_later(into, key, row);
        }
    }

    async fn load(client: &Client, schema: &str) -> Result<ByStream, StoreError> {
        let sql = format!(
            "SELECT stream, sku, location, expected_on, outstanding, position, updated_at
             FROM {schema}.incoming"
        );
        let rows = client.query(&sql, &[]).await?;
        Ok(rows
            .iter()
            .map(|r| {
                let row = IncomingRow {
                    sku: r.get(1),
                    location: r.get(2),
                    expected_on: r.get(3),
                    outstanding: r.get(4),
                    position: r.get(5),
                    updated_at: r.get(6),
                };
                (r.get(0), row)
            })
            .collect())
    }

    fn compare(expected: ByStream, mut actual: ByStream, diffs: &mut Diffs) {
        for (stream, want) in expected {
            match actual.remove(&stream) {
                None => diffs.push(LABEL, stream, "row", "present", "missing"),
                Some(got) if got != want => diffs.push(
                    LABEL,
                    stream,
                    "row",
                    format!("{want:?}"),
                    format!("{got:?}"),
                ),
                Some(_) => {}
            }
        }
        for stream in actual.keys() {
            diffs.push(LABEL, stream, "row", "absent", "present");
        }
    }
}

/// Puts `row` under `key` unless a row from a later position is there.
fn keep_later(rows: &mut ByStream, key: String, row: IncomingRow) {
    match rows.get(&key) {
        Some(have) if have.position > row.position => {}
        _ => {
            rows.insert(key, row);
        }
    }
}

/// An item's figures from `stock_levels` and what its expected receipts
/// still bring, by date, from `incoming`, as one statement sees them.
pub(crate) struct Outlook {
    /// `None` when `stock_levels` has no row for the item.
    pub figures: Option<crate::domain::Balance>,
    pub due: Vec<(NaiveDate, i64)>,
    /// The position both read models have come to.
    pub position: i64,
    /// False when the two read models' checkpoints differ (a rebuild swapped
    /// one in): their rows then speak of different moments, and adding them
    /// could count a delivery twice or not at all.
    pub consistent: bool,
}

/// Reads an item's outlook from the live copies in one statement, so both
/// read models are seen at one moment.
pub(crate) async fn outlook(client: &ClientWrapper, item: &Item) -> Result<Outlook, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT s.on_hand, s.reserved, s.confirmed, cs.position,
                    (cs.tx_id, cs.position) = (ci.tx_id, ci.position),
                    ARRAY(SELECT i.expected_on FROM incoming AS i
                          WHERE i.sku = $3 AND i.location = $4 AND i.outstanding > 0
                          ORDER BY i.expected_on),
                    ARRAY(SELECT i.outstanding FROM incoming AS i
                          WHERE i.sku = $3 AND i.location = $4 AND i.outstanding > 0
                          ORDER BY i.expected_on),
                    s.backordered
             FROM projection_checkpoints AS cs
             JOIN projection_checkpoints AS ci ON ci.name = $2 AND ci.slot = $5
             LEFT JOIN stock_levels AS s ON s.sku = $3 AND s.location = $4
             WHERE cs.name = $1 AND cs.slot = $5",
        )
        .await?;
    let row = client
        .query_one(
            &stmt,
            &[
                &crate::read_model::STOCK_LEVELS.name,
                &INCOMING.name,
                &item.sku.as_str(),
                &item.location.as_str(),
                &crate::read_model::slot::Slot::Live.as_str(),
            ],
        )
        .await?;
    let on_hand: Option<i64> = row.get(0);
    let dates: Vec<NaiveDate> = row.get(5);
    let units: Vec<i64> = row.get(6);
    Ok(Outlook {
        figures: on_hand.map(|on_hand| crate::domain::Balance {
            on_hand,
            reserved: row.get(1),
            confirmed: row.get(2),
            backordered: row.get(7),
        }),
        due: dates.into_iter().zip(units).collect(),
        position: row.get(3),
        consistent: row.get(4),
    })
}
