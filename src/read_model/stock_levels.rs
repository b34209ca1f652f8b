//! `stock_levels`: on hand, reserved, available and confirmed per item.

use std::marker::PhantomData;

use tokio_postgres::Client;

use crate::read_model::diff::{merge_figures, ActualFigures};
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
