//! The read models, as compiled into the binary. Adding one is adding a folder
//! under `projections/` and a line here (see `projections/README.md`).

use crate::domain::fingerprint::sha256_hex;

/// A read model: its tables and the SQL that creates and folds them.
#[derive(Debug)]
pub struct Projection {
    pub name: &'static str,
    /// Every table `schema` creates; moved together when a rebuild is swapped in.
    pub tables: &'static [&'static str],
    pub schema: &'static str,
    /// Statements run in order for each batch, each with the four range parameters.
    pub apply: &'static [&'static str],
}

impl Projection {
    /// Identifies the definition the rows were built with; a change means the
    /// live rows may no longer match what the definition would build.
    pub fn checksum(&self) -> String {
        let mut all = String::from(self.schema);
        for s in self.apply {
            all.push('\u{0}');
            all.push_str(s);
        }
        sha256_hex(all.as_bytes())
    }
}

pub const STOCK_LEVELS: Projection = Projection {
    name: "stock_levels",
    tables: &["stock_levels"],
    schema: include_str!("../../projections/stock_levels/schema.sql"),
    apply: &[include_str!(
        "../../projections/stock_levels/apply_1_effects.sql"
    )],
};

pub const ORDER_VIEW: Projection = Projection {
    name: "order_view",
    tables: &["order_view"],
    schema: include_str!("../../projections/order_view/schema.sql"),
    apply: &[
        include_str!("../../projections/order_view/apply_1_created.sql"),
        include_str!("../../projections/order_view/apply_2_settled.sql"),
    ],
};

pub const RESERVATION_EXPIRY: Projection = Projection {
    name: "reservation_expiry",
    tables: &["reservation_expiry"],
    schema: include_str!("../../projections/reservation_expiry/schema.sql"),
    apply: &[
        include_str!("../../projections/reservation_expiry/apply_1_opened.sql"),
        include_str!("../../projections/reservation_expiry/apply_2_closed.sql"),
    ],
};

/// Every projection, in the order they are installed and reported.
pub const ALL: &[&Projection] = &[&STOCK_LEVELS, &ORDER_VIEW, &RESERVATION_EXPIRY];

pub fn by_name(name: &str) -> Option<&'static Projection> {
    ALL.iter().copied().find(|p| p.name == name)
}
