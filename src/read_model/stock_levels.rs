//! `stock_levels`: on hand, reserved, available and confirmed per item.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::Client;

use crate::domain::{Balance, Item};
use crate::read_model::diff::{merge_figures, ActualFigures};
use crate::read_model::slot::Slot;
use crate::read_model::{
    add_effects, compare_figures, load_figures, Diffs, Figures, Model, Rows, StreamSeen,
};
use crate::store::StoreError;

pub struct StockLevels;

pub static STOCK_LEVELS: Model<StockLevels> = Model {
    name: "stock_levels",
    tables: &["stock_levels"],
    schema: include_str!("../../projections/stock_levels/schema.sql"),
    apply: &[include_str!(
        "../../projections/stock_levels/apply_1_effects.sql"
    )],
    batch: None,
    rows: PhantomData,
};

impl Rows for StockLevels {
    type Expected = Figures;
    type Actual = ActualFigures;

    /// Every event of every stream moves the figures by its stock effects.
    fn fold(expected: &mut Figures, seen: &StreamSeen<'_>) {
        for e in seen.events {
            add_effects(expected, e.event);
        }
    }

    fn merge(into: &mut Figures, other: Figures) {
        merge_figures(into, other);
    }

    async fn load(client: &Client, schema: &str) -> Result<ActualFigures, StoreError> {
        load_figures(client, &format!("{schema}.stock_levels")).await
    }

    fn compare(expected: Figures, actual: ActualFigures, diffs: &mut Diffs) {
        compare_figures(STOCK_LEVELS.name, &expected, actual, diffs);
    }
}

/// An item's figures as the live copy holds them, with how far that copy has
/// come: the position and time of the last event it applied.
#[derive(Clone, Copy, Debug)]
pub struct Level {
    pub figures: Option<Balance>,
    pub position: i64,
    pub recorded_at: Option<DateTime<Utc>>,
}

/// Reads one item's row and the live checkpoint, in one statement.
pub(crate) async fn level(client: &ClientWrapper, item: &Item) -> Result<Level, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT s.on_hand, s.reserved, s.confirmed, c.position, c.last_event_at, s.backordered
             FROM projection_checkpoints AS c
             LEFT JOIN stock_levels AS s ON s.sku = $2 AND s.location = $3
             WHERE c.name = $1 AND c.slot = $4",
        )
        .await?;
    let name = STOCK_LEVELS.name;
    let row = client
        .query_one(
            &stmt,
            &[
                &name,
                &item.sku.as_str(),
                &item.location.as_str(),
                &Slot::Live.as_str(),
            ],
        )
        .await?;
    let on_hand: Option<i64> = row.get(0);
    Ok(Level {
        figures: on_hand.map(|on_hand| Balance {
            on_hand,
            reserved: row.get(1),
            confirmed: row.get(2),
            backordered: row.get(5),
        }),
        position: row.get(3),
        recorded_at: row.get(4),
    })
}
