//! `StockCounted`: one of the log's facts.

use serde::{Deserialize, Serialize};

use crate::domain::ids::{Location, Sku};
use crate::domain::event::fact::{Fact, FactType};
use crate::domain::event::row::{need, Columns, Rest, RowWriter};
use crate::domain::event_type::TypeRow;
use crate::domain::stream::StreamKind;

/// A stock take found `counted` units where the books had `books`: the
/// difference is the event's change of on-hand stock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockCounted {
    pub sku: Sku,
    pub location: Location,
    pub counted: u32,
    pub books: i64,
}

impl StockCounted {
    /// The change of on-hand stock: what was counted less what the books had.
    fn change(&self) -> i64 {
        i64::from(self.counted) - self.books
    }
}

impl Fact for StockCounted {
    about_one_item!(Self::change);

    fn summary(&self) -> String {
        let StockCounted {
            sku,
            location,
            counted,
            books,
        } = self;
        let change = self.change();
        format!("counted {counted} × {sku}@{location} (the books said {books}: {change:+})")
    }

    /// Its line is the change; `data` keeps what was counted.
    fn write_row<'a>(&'a self, row: &mut RowWriter<'a>) {
        row.item(&self.sku, &self.location, self.change());
        row.rest.counted = Some(self.counted);
    }
}

impl FactType for StockCounted {
    const ROW: TypeRow = TypeRow::single(StreamKind::Count, (1, 0, 0, 0));

    fn read_row(c: &Columns<'_>, rest: Rest) -> Result<Self, String> {
        let (item, change) = c.one_item()?;
        let counted = need(rest.counted, "counted")?;
        Ok(StockCounted {
            sku: item.sku,
            location: item.location,
            counted,
            books: i64::from(counted) - change,
        })
    }
}
