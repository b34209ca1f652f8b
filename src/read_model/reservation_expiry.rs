//! `reservation_expiry`: open reservations by expiry, for the expiry worker.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use deadpool_postgres::ClientWrapper;
use rustc_hash::FxHashMap as HashMap;
use tokio_postgres::Client;

use crate::domain::{Reservation, ReservationId, ReservationState};
use crate::read_model::{BatchFold, Diffs, Model, Rows, StreamSeen};
use crate::store::StoreError;

pub struct ReservationExpiry;

pub static RESERVATION_EXPIRY: Model<ReservationExpiry> = Model {
    name: "reservation_expiry",
    tables: &["reservation_expiry"],
    schema: include_str!("../../projections/reservation_expiry/schema.sql"),
    // Folded in Rust (`reservation_expiry_batch.rs` says why).
    apply: &[],
    batch: Some(BatchFold {
        version: "reservation_expiry batch fold 1",
        apply: crate::read_model::reservation_expiry_batch::apply,
    }),
    rows: PhantomData,
};

/// One row, by reservation id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiryRow {
    pub order_id: String,
    pub expires_at: DateTime<Utc>,
}

type ByReservation = HashMap<String, ExpiryRow>;

/// The label of its differences: the model's name.
const LABEL: &str = RESERVATION_EXPIRY.name;

impl Rows for ReservationExpiry {
    type Expected = ByReservation;
    type Actual = ByReservation;

    /// A reservation that is still open has a row; a tombstone never does.
    fn fold(expected: &mut ByReservation, seen: &StreamSeen<'_>) {
        match seen.reservation {
            Some(Reservation::Placed(p)) if p.state == ReservationState::Reserved => {
                let row = ExpiryRow {
                    order_id: p.order_id.to_string(),
                    expires_at: p.expires_at,
                };
                expected.insert(p.reservation_id.to_string(), row);
            }
            Some(Reservation::Placed(_) | Reservation::Tombstone(_)) | None => {}
        }
    }

    fn merge(into: &mut ByReservation, other: ByReservation) {
        into.extend(other);
    }

    async fn load(client: &Client, schema: &str) -> Result<ByReservation, StoreError> {
        let sql =
            format!("SELECT reservation_id, order_id, expires_at FROM {schema}.reservation_expiry");
        let rows = client.query(&sql, &[]).await?;
        Ok(rows.iter().map(expiry_row).collect())
    }

    fn compare(expected: ByReservation, mut actual: ByReservation, diffs: &mut Diffs) {
        for (id, want) in &expected {
            let Some(got) = actual.remove(id) else {
                diffs.push(LABEL, id.clone(), "row", "present", "missing");
                continue;
            };
            if got.order_id != want.order_id {
                diffs.push(LABEL, id, "order_id", &want.order_id, got.order_id);
            }
            if got.expires_at != want.expires_at {
                let (w, g) = (want.expires_at.to_rfc3339(), got.expires_at.to_rfc3339());
                diffs.push(LABEL, id, "expires_at", w, g);
            }
        }
        for id in actual.keys() {
            diffs.push(LABEL, id.clone(), "row", "absent", "present");
        }
    }
}

/// The due reservations, oldest first. The bound is the statement's start
/// (`statement_timestamp()`, stable within the statement), never
/// `clock_timestamp()`: a volatile bound cannot be an index condition, so
/// the expiry worker walked the whole `expires_at` index every pass when
/// nothing was due (130–190 ms a pass with 300,000 open reservations,
/// docs/benchmarks.md, issue 24).
pub const DUE_SQL: &str = "SELECT reservation_id FROM reservation_expiry
     WHERE expires_at <= statement_timestamp()
     ORDER BY expires_at
     LIMIT $1";

/// Reservations whose expiry has passed by the database clock, oldest first.
/// The copy may lag or hold a reservation that was settled meanwhile: the
/// expire command decides from the log, so such a row only costs a "not due"
/// answer.
pub(crate) async fn due(
    client: &ClientWrapper,
    limit: i64,
) -> Result<Vec<ReservationId>, StoreError> {
    let stmt = client.prepare_cached(DUE_SQL).await?;
    let rows = client.query(&stmt, &[&limit]).await?;
    rows.iter()
        .map(|r| {
            ReservationId::parse("reservation_id", r.get(0)).map_err(crate::store::error::corrupt)
        })
        .collect()
}

/// The held reservations that expire soonest, soonest first: at most
/// `limit`, as (reservation id, row).
pub(crate) async fn soonest(
    client: &ClientWrapper,
    limit: i64,
) -> Result<Vec<(String, ExpiryRow)>, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT reservation_id, order_id, expires_at FROM reservation_expiry
             ORDER BY expires_at, reservation_id LIMIT $1",
        )
        .await?;
    let rows = client.query(&stmt, &[&limit]).await?;
    Ok(rows.iter().map(expiry_row).collect())
}

/// A row read as `SELECT reservation_id, order_id, expires_at`.
fn expiry_row(r: &tokio_postgres::Row) -> (String, ExpiryRow) {
    let row = ExpiryRow {
        order_id: r.get(1),
        expires_at: r.get(2),
    };
    (r.get(0), row)
}
