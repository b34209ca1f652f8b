//! The read models: each one a value of `ReadModel`, with its name, its
//! tables, the SQL that creates and folds them (`projections/`), and the rows a
//! replay of the log says it should hold. The projection runtime runs the SQL;
//! the audit and the rebuild's verification fold the log in Rust and compare.
//! Both iterate over `ALL`; nothing matches on a read model's name.
//!
//! Adding a read model is a folder under `projections/`, a file here that
//! implements `Rows`, and a line in `ALL` (see `docs/architecture.md`).

mod diff;
pub mod incoming;
pub mod low_stock;
pub mod order_view;
mod order_view_batch;
pub mod reservation_expiry;
mod reservation_expiry_batch;
pub mod reservation_totals;
pub mod slot;
pub mod stock_levels;
pub mod window;

use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use chrono::{DateTime, Utc};
use tokio_postgres::Client;

use crate::domain::fingerprint::sha256_hex;
use crate::domain::{Event, Reservation, StreamId};
use crate::store::StoreError;

pub(crate) use diff::{
    add_effects, compare_figures, load_figures, merge_figures, ActualFigures, Figures,
};
pub use diff::{Difference, Diffs};
pub use incoming::INCOMING;
pub use low_stock::LOW_STOCK;
pub use order_view::ORDER_VIEW;
pub use reservation_expiry::RESERVATION_EXPIRY;
pub use reservation_totals::RESERVATION_TOTALS;
pub use stock_levels::STOCK_LEVELS;

/// Every read model, in the order they are installed and reported.
pub static ALL: &[&dyn ReadModel] = &[
    &STOCK_LEVELS,
    &ORDER_VIEW,
    &RESERVATION_EXPIRY,
    &RESERVATION_TOTALS,
    &LOW_STOCK,
    &INCOMING,
];

pub fn by_name(name: &str) -> Option<&'static dyn ReadModel> {
    ALL.iter().copied().find(|p| p.name() == name)
}

/// One event of a stream, as a replay hands it to a read model.
#[derive(Clone, Copy, Debug)]
pub struct SeenEvent<'a> {
    pub seq: u32,
    pub event: &'a Event,
    pub recorded_at: DateTime<Utc>,
    pub position: i64,
    /// The writing transaction.
    pub tx_id: i64,
}

/// The part of one stream a copy has seen (its checkpoint may fall inside
/// the stream), valid by the stream's rules.
#[derive(Clone, Copy, Debug)]
pub struct StreamSeen<'a> {
    pub stream: &'a StreamId,
    pub events: &'a [SeenEvent<'a>],
    /// For a reservation stream, the reservation those events fold into.
    pub reservation: Option<&'a Reservation>,
}

/// What a read model's rows should be, and how to read and compare them:
/// the typed half of a read model, one implementation per model.
pub trait Rows: Sync + 'static {
    /// The expected rows, folded from the log.
    type Expected: Default + Send + 'static;
    /// The rows as a copy's tables hold them.
    type Actual: Send + 'static;

    /// Folds the part of one stream a copy has seen into the expected rows.
    fn fold(expected: &mut Self::Expected, seen: &StreamSeen<'_>);
    /// Adds rows folded from another partition of the same log.
    fn merge(into: &mut Self::Expected, other: Self::Expected);
    /// Reads the table(s) in `schema` (a trusted name of ours, never input).
    fn load(
        client: &Client,
        schema: &str,
    ) -> impl Future<Output = Result<Self::Actual, StoreError>> + Send;
    /// Names every difference between the expected and the actual rows.
    fn compare(expected: Self::Expected, actual: Self::Actual, diffs: &mut Diffs);
}

/// Expected rows of some read model, folded from the log.
pub struct Expected(Box<dyn Any + Send>);
/// Rows of some read model, loaded from its tables.
pub struct Actual(Box<dyn Any + Send>);

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A read model, as the runtime and the audit use it.
pub trait ReadModel: Sync + 'static {
    fn name(&self) -> &'static str;
    /// Every table `schema_sql` creates; moved together when a rebuild is swapped in.
    fn tables(&self) -> &'static [&'static str];
    /// Creates the tables, with unqualified names (`search_path` picks the copy).
    fn schema_sql(&self) -> &'static str;
    /// Statements run in order for each batch (see `projections/README.md`).
    fn apply_sql(&self) -> &'static [&'static str];
    /// A batch folded in Rust, run after the statements (`order_view`).
    fn batch_fold(&self) -> Option<BatchFold>;
    fn expected(&self) -> Expected;
    fn fold(&self, expected: &mut Expected, seen: &StreamSeen<'_>);
    fn merge(&self, into: &mut Expected, other: Expected);
    fn load<'a>(
        &'a self,
        client: &'a Client,
        schema: &'a str,
    ) -> BoxFuture<'a, Result<Actual, StoreError>>;
    fn compare(&self, expected: Expected, actual: Actual, diffs: &mut Diffs);

    /// Identifies the definition the rows were built with; a change means the
    /// live rows may no longer match what the definition would build.
    fn checksum(&self) -> String {
        let mut all = String::from(self.schema_sql());
        for s in self.apply_sql() {
            all.push('\u{0}');
            all.push_str(s);
        }
        if let Some(f) = self.batch_fold() {
            all.push('\u{0}');
            all.push_str(f.version);
        }
        // SQL that joins `event_types` folds what its rows say, which Rust
        // writes: a change there is a change of this definition.
        if self.apply_sql().iter().any(|s| s.contains("event_types")) {
            all.push('\u{0}');
            all.push_str(&crate::store::event_types::signature());
        }
        sha256_hex(all.as_bytes())
    }
}

impl std::fmt::Debug for dyn ReadModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A batch of a read model folded in Rust: what it writes for the window's
/// events, in the copy the transaction's `search_path` names, and
/// the version of that definition (part of the read model's checksum: change
/// it whenever what the fold writes changes).
#[derive(Clone, Copy)]
pub struct BatchFold {
    pub version: &'static str,
    #[allow(clippy::type_complexity)]
    pub apply: for<'a> fn(
        &'a deadpool_postgres::Transaction<'a>,
        &'a [window::WindowEvent],
    ) -> BoxFuture<'a, Result<(), StoreError>>,
}

/// A read model: its SQL (or its batch fold), and its `Rows`.
pub struct Model<R> {
    pub name: &'static str,
    pub tables: &'static [&'static str],
    pub schema: &'static str,
    pub apply: &'static [&'static str],
    pub batch: Option<BatchFold>,
    pub rows: PhantomData<fn() -> R>,
}

impl<R: Rows> Model<R> {
    fn expected_of(&self, e: Expected) -> Box<R::Expected> {
        e.0.downcast()
            .unwrap_or_else(|_| panic!("{}: expected rows of another read model", self.name))
    }
}

impl<R: Rows> ReadModel for Model<R> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn tables(&self) -> &'static [&'static str] {
        self.tables
    }

    fn schema_sql(&self) -> &'static str {
        self.schema
    }

    fn apply_sql(&self) -> &'static [&'static str] {
        self.apply
    }

    fn batch_fold(&self) -> Option<BatchFold> {
        self.batch
    }

    fn expected(&self) -> Expected {
        Expected(Box::new(R::Expected::default()))
    }

    fn fold(&self, expected: &mut Expected, seen: &StreamSeen<'_>) {
        let rows = expected
            .0
            .downcast_mut()
            .unwrap_or_else(|| panic!("{}: expected rows of another read model", self.name));
        R::fold(rows, seen);
    }

    fn merge(&self, into: &mut Expected, other: Expected) {
        let other = self.expected_of(other);
        let rows = into
            .0
            .downcast_mut()
            .unwrap_or_else(|| panic!("{}: expected rows of another read model", self.name));
        R::merge(rows, *other);
    }

    fn load<'a>(
        &'a self,
        client: &'a Client,
        schema: &'a str,
    ) -> BoxFuture<'a, Result<Actual, StoreError>> {
        Box::pin(async move { Ok(Actual(Box::new(R::load(client, schema).await?))) })
    }

    fn compare(&self, expected: Expected, actual: Actual, diffs: &mut Diffs) {
        let expected = self.expected_of(expected);
        let actual: Box<R::Actual> = actual
            .0
            .downcast()
            .unwrap_or_else(|_| panic!("{}: rows loaded by another read model", self.name));
        R::compare(*expected, *actual, diffs);
    }
}
