//! Every row of the outcome table (`shared/design/domain.md`), through the
//! store and a real database: the answer, the events appended, and the
//! stock effect on the write-side balances.

mod common;

use common::*;
use stockledger::domain::Command;

#[derive(Clone, Copy, Debug)]
enum Setup {
    None,
    Reserved,
    ReservedPastExpiry,
    Confirmed,
    Released,
    Expired,
    Tombstone,
}

#[derive(Debug)]
enum Expect {
    /// Success: state, events appended, replayed.
    Ok(&'static str, i64, bool),
    Rejected(&'static str),
    NotDue,
}

struct Row {
    row: &'static str,
    setup: Setup,
    cmd: fn(&str, &str, &str) -> Command,
    expect: Expect,
    /// Change of (on_hand, reserved, confirmed).
    effect: (i64, i64, i64),
}

fn same(id: &str, order: &str, sku: &str) -> Command {
    reserve(id, order, &[(sku, 2)], Some(1))
}
fn different(id: &str, order: &str, sku: &str) -> Command {
    reserve(id, order, &[(sku, 3)], Some(1))
}
fn new_reserve(id: &str, order: &str, sku: &str) -> Command {
    reserve(id, order, &[(sku, 2)], None)
}
fn too_much(id: &str, order: &str, sku: &str) -> Command {
    reserve(id, order, &[(sku, 11)], None)
}
fn c(id: &str, _: &str, _: &str) -> Command {
    confirm(id)
}
fn r(id: &str, _: &str, _: &str) -> Command {
    release(id)
}
fn e(id: &str, _: &str, _: &str) -> Command {
    expire(id)
}

fn rows() -> Vec<Row> {
    use Expect::*;
    use Setup as S;
    vec![
        Row {
            row: "reserve | none",
            setup: S::None,
            cmd: new_reserve,
            expect: Ok("RESERVED", 1, false),
            effect: (0, 2, 0),
        },
        Row {
            row: "reserve same | RESERVED",
            setup: S::Reserved,
            cmd: same,
            expect: Ok("RESERVED", 0, true),
            effect: (0, 0, 0),
        },
        Row {
            row: "reserve same | CONFIRMED",
            setup: S::Confirmed,
            cmd: same,
            expect: Ok("CONFIRMED", 0, true),
            effect: (0, 0, 0),
        },
        Row {
            row: "reserve same | EXPIRED",
            setup: S::Expired,
            cmd: same,
            expect: Ok("EXPIRED", 0, true),
            effect: (0, 0, 0),
        },
        Row {
            row: "reserve different | RESERVED",
            setup: S::Reserved,
            cmd: different,
            expect: Rejected("IDEMPOTENCY_CONFLICT"),
            effect: (0, 0, 0),
        },
        Row {
            row: "reserve different | EXPIRED",
            setup: S::Expired,
            cmd: different,
            expect: Rejected("IDEMPOTENCY_CONFLICT"),
            effect: (0, 0, 0),
        },
        Row {
            row: "reserve | RELEASED",
            setup: S::Released,
            cmd: same,
            expect: Rejected("RESERVATION_RELEASED"),
            effect: (0, 0, 0),
        },
        Row {
            row: "reserve | tombstone",
            setup: S::Tombstone,
            cmd: same,
            expect: Rejected("RESERVATION_RELEASED"),
            effect: (0, 0, 0),
        },
        Row {
            row: "reserve | lack of stock",
            setup: S::None,
            cmd: too_much,
            expect: Rejected("INSUFFICIENT_STOCK"),
            effect: (0, 0, 0),
        },
        Row {
            row: "confirm | RESERVED",
            setup: S::Reserved,
            cmd: c,
            expect: Ok("CONFIRMED", 1, false),
            effect: (-2, -2, 2),
        },
        Row {
            row: "confirm | CONFIRMED",
            setup: S::Confirmed,
            cmd: c,
            expect: Ok("CONFIRMED", 0, true),
            effect: (0, 0, 0),
        },
        Row {
            row: "confirm | RESERVED past expiry",
            setup: S::ReservedPastExpiry,
            cmd: c,
            expect: Rejected("RESERVATION_EXPIRED"),
            effect: (0, 0, 0),
        },
        Row {
            row: "confirm | EXPIRED",
            setup: S::Expired,
            cmd: c,
            expect: Rejected("RESERVATION_EXPIRED"),
            effect: (0, 0, 0),
        },
        Row {
            row: "confirm | RELEASED",
            setup: S::Released,
            cmd: c,
            expect: Rejected("RESERVATION_RELEASED"),
            effect: (0, 0, 0),
        },
        Row {
            row: "confirm | none",
            setup: S::None,
            cmd: c,
            expect: Rejected("RESERVATION_NOT_FOUND"),
            effect: (0, 0, 0),
        },
        Row {
            row: "release | RESERVED",
            setup: S::Reserved,
            cmd: r,
            expect: Ok("RELEASED", 1, false),
            effect: (0, -2, 0),
        },
        Row {
            row: "release | RELEASED",
            setup: S::Released,
            cmd: r,
            expect: Ok("RELEASED", 0, true),
            effect: (0, 0, 0),
        },
        Row {
            row: "release | EXPIRED",
            setup: S::Expired,
            cmd: r,
            expect: Ok("EXPIRED", 0, true),
            effect: (0, 0, 0),
        },
        Row {
            row: "release | CONFIRMED",
            setup: S::Confirmed,
            cmd: r,
            expect: Rejected("ALREADY_CONFIRMED"),
            effect: (0, 0, 0),
        },
        Row {
            row: "release | none (tombstone)",
            setup: S::None,
            cmd: r,
            expect: Ok("RELEASED", 1, false),
            effect: (0, 0, 0),
        },
        Row {
            row: "expire | RESERVED past expiry",
            setup: S::ReservedPastExpiry,
            cmd: e,
            expect: Ok("EXPIRED", 1, false),
            effect: (0, -2, 0),
        },
        Row {
            row: "expire | RESERVED in time",
            setup: S::Reserved,
            cmd: e,
            expect: NotDue,
            effect: (0, 0, 0),
        },
        Row {
            row: "expire | CONFIRMED",
            setup: S::Confirmed,
            cmd: e,
            expect: NotDue,
            effect: (0, 0, 0),
        },
        Row {
            row: "expire | RELEASED",
            setup: S::Released,
            cmd: e,
            expect: NotDue,
            effect: (0, 0, 0),
        },
        Row {
            row: "expire | none",
            setup: S::None,
            cmd: e,
            expect: NotDue,
            effect: (0, 0, 0),
        },
    ]
}

#[tokio::test]
async fn every_row_of_the_outcome_table() {
    let db = TestDb::new().await;
    let rows = rows();
    // Set every row up first, each with its own ids and item, so that one wait
    // serves every row that needs an expired reservation.
    let names: Vec<(String, String, String)> = (0..rows.len())
        .map(|i| (format!("res-{i}"), format!("order-{i}"), format!("sku-{i}")))
        .collect();
    for (row, (id, order, sku)) in rows.iter().zip(&names) {
        db.receive(&format!("in-{sku}"), sku, 10).await;
        let ttl = match row.setup {
            Setup::ReservedPastExpiry | Setup::Expired => Some(1),
            _ => Some(3600),
        };
        if !matches!(row.setup, Setup::None | Setup::Tombstone) {
            db.run(reserve(id, order, &[(sku, 2)], ttl)).await.unwrap();
        }
        match row.setup {
            Setup::Confirmed => drop(db.run(confirm(id)).await.unwrap()),
            Setup::Released | Setup::Tombstone => drop(db.run(release(id)).await.unwrap()),
            _ => {}
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    for (row, (id, _, _)) in rows.iter().zip(&names) {
        if matches!(row.setup, Setup::Expired) {
            assert_eq!(state_of(&db.run(expire(id)).await.unwrap()), "EXPIRED");
        }
    }

    for (row, (id, order, sku)) in rows.iter().zip(&names) {
        // The "same" request must match the setup's request: same order and lines.
        let before_events = db.count_events().await;
        let before = db.figures(sku).await;
        let result = db.run((row.cmd)(id, order, sku)).await;
        let appended = db.count_events().await - before_events;
        let after = db.figures(sku).await;
        match (&row.expect, &result) {
            (Expect::Ok(state, n, replayed), Ok(o)) => {
                assert_eq!(state_of(o), *state, "{}", row.row);
                assert_eq!(o.replayed(), *replayed, "{}", row.row);
                assert_eq!(appended, *n, "{}: events appended", row.row);
            }
            (Expect::Rejected(code), Err(r)) => {
                assert_eq!(r.code().as_str(), *code, "{}", row.row);
                assert_eq!(appended, 0, "{}: a rejection writes nothing", row.row);
            }
            (Expect::NotDue, Ok(o)) => {
                assert_eq!(state_of(o), "NOT_DUE", "{}", row.row);
                assert_eq!(appended, 0, "{}", row.row);
            }
            (want, got) => panic!("{}: expected {want:?}, got {got:?}", row.row),
        }
        let effect = (after.0 - before.0, after.1 - before.1, after.2 - before.2);
        assert_eq!(effect, row.effect, "{}: stock effect", row.row);
    }
}
