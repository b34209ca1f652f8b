//! `StockAdjusted`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event_type::TypeRow;
use crate::domain::stream::StreamKind;
use crate::domain::text::shown;

/// A correction of on-hand stock by `delta` units (damage, loss, a found
/// box), for `reason`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockAdjusted {
    pub sku: Sku,
    pub location: Location,
    pub delta: i32,
    pub reason: String,
}

impl Fact for StockAdjusted {
    about_one_item!(|e: &Self| i64::from(e.delta));

    fn summary(&self) -> String {
        let StockAdjusted {
            sku,
            location,
            delta,
            reason,
        } = self;
        format!("adjusted {delta:+} × {sku}@{location} ({})", shown(reason))
    }

    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, i64::from(self.delta));
        row.rest.reason = Some(self.reason.clone());
    }
}

impl FactType for StockAdjusted {
    const ROW: TypeRow = TypeRow::single(StreamKind::Adjustment, (1, 0, 0, 0));

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        let (item, delta) = c.one_item()?;
        Ok(StockAdjusted {
            sku: item.sku,
            location: item.location,
            delta: i32::try_from(delta).map_err(|_| format!("delta {delta}"))?,
            reason: need(rest.reason, "reason")?,
        })
    }
}
