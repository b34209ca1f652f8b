//! `reservation_totals`: reservations and the units they hold, by state. What
//! `/metrics` shows as `stockledger_reservations` and
//! `stockledger_reservation_units`.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use deadpool_postgres::ClientWrapper;
use tokio_postgres::Client;

use crate::domain::{Reservation, ReservationState};
use crate::read_model::{Diffs, Model, Rows, StreamSeen};
use crate::store::StoreError;

pub struct ReservationTotals;

pub static RESERVATION_TOTALS: Model<ReservationTotals> = Model {
    name: "reservation_totals",
    tables: &["reservation_totals"],
    schema: include_str!("../../projections/reservation_totals/schema.sql"),
    apply: &[include_str!(
        "../../projections/reservation_totals/apply_1_moves.sql"
    )],
    batch: None,
    rows: PhantomData,
};

/// Reservations and units, by state as the API spells it.
pub type Totals = BTreeMap<String, (i64, i64)>;

/// The label of its differences: the model's name.
const LABEL: &str = RESERVATION_TOTALS.name;

impl Rows for ReservationTotals {
    type Expected = Totals;
    type Actual = Totals;

    /// A placed reservation counts once, in the state the copy has seen it
    /// reach; its units count where they went: held (or waiting for
    /// stock), confirmed, released (or dropped while they waited) or
    /// expired. A tombstone is no reservation.
    fn fold(expected: &mut Totals, seen: &StreamSeen<'_>) {
        let p = match seen.reservation {
            Some(Reservation::Placed(p)) => p,
            Some(Reservation::Tombstone(_)) | None => return,
        };
        // Summed here first: a key is allocated only the first time a state is seen.
        let mut units = [0i64; 4];
        for (l, g) in p.lines.iter().zip(&p.progress) {
            units[0] += i64::from(g.open(l.quantity) + g.waiting);
            units[1] += i64::from(g.confirmed);
            units[2] += i64::from(g.released + g.dropped);
            units[3] += i64::from(g.expired);
        }
        let mut add = |state: ReservationState, reservations: i64, n: i64| {
            if reservations == 0 && n == 0 {
                return;
            }
            let total = match expected.get_mut(state.as_str()) {
                Some(t) => t,
                None => expected.entry(state.as_str().to_owned()).or_default(),
            };
            total.0 += reservations;
            total.1 += n;
        };
        for (i, state) in [
            ReservationState::Reserved,
            ReservationState::Confirmed,
            ReservationState::Released,
            ReservationState::Expired,
        ]
        .into_iter()
        .enumerate()
        {
            add(state, i64::from(p.state == state), units[i]);
        }
    }

    fn merge(into: &mut Totals, other: Totals) {
        for (state, (n, units)) in other {
            let total = into.entry(state).or_default();
            total.0 += n;
            total.1 += units;
        }
    }

    async fn load(client: &Client, schema: &str) -> Result<Totals, StoreError> {
        let sql = format!("SELECT state, reservations, units FROM {schema}.reservation_totals");
        let rows = client.query(&sql, &[]).await?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), (r.get(1), r.get(2))))
            .collect())
    }

    /// A state with nothing in it may have a row of zeros or no row.
    fn compare(expected: Totals, actual: Totals, diffs: &mut Diffs) {
        let states = expected.keys().chain(actual.keys());
        let states: std::collections::BTreeSet<&String> = states.collect();
        for state in states {
            let want = expected.get(state).copied().unwrap_or_default();
            let got = actual.get(state).copied().unwrap_or_default();
            if want.0 != got.0 {
                diffs.push(LABEL, state.clone(), "reservations", want.0, got.0);
            }
            if want.1 != got.1 {
                diffs.push(LABEL, state.clone(), "units", want.1, got.1);
            }
        }
    }
}

/// The totals of the live copy, every state listed (zeros included).
pub(crate) async fn totals(client: &ClientWrapper) -> Result<Totals, StoreError> {
    let stmt = client
        .prepare_cached("SELECT state, reservations, units FROM reservation_totals")
        .await?;
    let rows = client.query(&stmt, &[]).await?;
    let mut totals: Totals = [
        ReservationState::Reserved,
        ReservationState::Confirmed,
        ReservationState::Released,
        ReservationState::Expired,
    ]
    .iter()
    .map(|s| (s.as_str().to_owned(), (0, 0)))
    .collect();
    for r in rows {
        totals.insert(r.get(0), (r.get(1), r.get(2)));
    }
    Ok(totals)
}
