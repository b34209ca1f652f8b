//! One case per row of the outcome table in `shared/design/domain.md`, decided
//! by the pure core. The same table runs through the store in
//! `tests/outcomes.rs`.

use super::*;
use crate::domain::command::{self, AdjustRequest, LineRequest, ReceiveRequest, ReserveRequest};
use chrono::TimeZone;

fn t(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
}

fn reserve(order: &str, qty: i64) -> Command {
    ReserveRequest {
        reservation_id: "r1".into(),
        order_id: order.into(),
        lines: vec![LineRequest {
            sku: "apple".into(),
            location: None,
            quantity: qty,
        }],
        ttl_seconds: Some(60),
    }
    .validate()
    .unwrap()
}

fn receive(id: &str, qty: i64) -> Command {
    ReceiveRequest {
        receipt_id: id.into(),
        sku: "apple".into(),
        location: None,
        quantity: qty,
    }
    .validate()
    .unwrap()
}

fn item() -> Item {
    Item {
        sku: crate::domain::Sku::parse("sku", "apple").unwrap(),
        location: crate::domain::Location::parse_or_default("location", None).unwrap(),
    }
}

/// Runs a command and folds it in, as the store would after commit.
fn run(state: &mut LedgerState, cmd: &Command, at: DateTime<Utc>) -> Result<Decision, Rejection> {
    let id = Uuid::new_v4();
    let d = decide(state, cmd, id, at)?;
    apply(state, &d, id, at);
    Ok(d)
}

#[derive(Clone, Copy, Debug)]
enum Setup {
    None,
    Reserved,
    Confirmed,
    Released,
    Expired,
    Tombstone,
}

fn setup(s: Setup) -> LedgerState {
    let mut st = LedgerState::default();
    run(&mut st, &receive("in-1", 10), t(0)).unwrap();
    let reserve_it = !matches!(s, Setup::None | Setup::Tombstone);
    if reserve_it {
        run(&mut st, &reserve("o1", 2), t(0)).unwrap();
    }
    let follow = match s {
        Setup::Confirmed => Some((command::confirm("r1").unwrap(), t(1))),
        Setup::Released => Some((command::release("r1", None).unwrap(), t(1))),
        Setup::Expired => Some((command::expire("r1").unwrap(), t(61))),
        Setup::Tombstone => Some((command::release("r1", None).unwrap(), t(0))),
        Setup::None | Setup::Reserved => None,
    };
    if let Some((cmd, at)) = follow {
        run(&mut st, &cmd, at).unwrap();
    }
    st
}

#[derive(Debug)]
enum Expect {
    /// Success with this state; `events` appended; `replayed` flag.
    Ok(ReservationState, usize, bool),
    Rejected(&'static str),
    NotDue,
}

struct Case {
    row: &'static str,
    setup: Setup,
    cmd: Command,
    at: i64,
    expect: Expect,
    /// (on_hand, reserved, confirmed) change of the item.
    effect: (i64, i64, i64),
}

fn cases() -> Vec<Case> {
    use Expect::*;
    use ReservationState::*;
    let confirm = || command::confirm("r1").unwrap();
    let release = || command::release("r1", Some("customer cancelled")).unwrap();
    let expire = || command::expire("r1").unwrap();
    vec![
        Case {
            row: "reserve | none -> RESERVED",
            setup: Setup::None,
            cmd: reserve("o1", 2),
            at: 5,
            expect: Ok(Reserved, 1, false),
            effect: (0, 2, 0),
        },
        Case {
            row: "reserve same | RESERVED -> replay",
            setup: Setup::Reserved,
            cmd: reserve("o1", 2),
            at: 5,
            expect: Ok(Reserved, 0, true),
            effect: (0, 0, 0),
        },
        Case {
            row: "reserve same | CONFIRMED -> replay",
            setup: Setup::Confirmed,
            cmd: reserve("o1", 2),
            at: 5,
            expect: Ok(Confirmed, 0, true),
            effect: (0, 0, 0),
        },
        Case {
            row: "reserve same | EXPIRED -> replay",
            setup: Setup::Expired,
            cmd: reserve("o1", 2),
            at: 90,
            expect: Ok(Expired, 0, true),
            effect: (0, 0, 0),
        },
        Case {
            row: "reserve different | RESERVED -> conflict",
            setup: Setup::Reserved,
            cmd: reserve("o1", 3),
            at: 5,
            expect: Rejected("IDEMPOTENCY_CONFLICT"),
            effect: (0, 0, 0),
        },
        Case {
            row: "reserve different order | CONFIRMED -> conflict",
            setup: Setup::Confirmed,
            cmd: reserve("o2", 2),
            at: 5,
            expect: Rejected("IDEMPOTENCY_CONFLICT"),
            effect: (0, 0, 0),
        },
        Case {
            row: "reserve | RELEASED -> released",
            setup: Setup::Released,
            cmd: reserve("o1", 2),
            at: 5,
            expect: Rejected("RESERVATION_RELEASED"),
            effect: (0, 0, 0),
        },
        Case {
            row: "reserve | tombstone -> released",
            setup: Setup::Tombstone,
            cmd: reserve("o1", 2),
            at: 5,
            expect: Rejected("RESERVATION_RELEASED"),
            effect: (0, 0, 0),
        },
        Case {
            row: "reserve | none, lack of stock -> insufficient",
            setup: Setup::None,
            cmd: reserve("o1", 11),
            at: 5,
            expect: Rejected("INSUFFICIENT_STOCK"),
            effect: (0, 0, 0),
        },
        Case {
            row: "confirm | RESERVED in time -> CONFIRMED",
            setup: Setup::Reserved,
            cmd: confirm(),
            at: 5,
            expect: Ok(Confirmed, 1, false),
            effect: (-2, -2, 2),
        },
        Case {
            row: "confirm | CONFIRMED -> replay",
            setup: Setup::Confirmed,
            cmd: confirm(),
            at: 5,
            expect: Ok(Confirmed, 0, true),
            effect: (0, 0, 0),
        },
        Case {
            row: "confirm | RESERVED past expiry -> expired",
            setup: Setup::Reserved,
            cmd: confirm(),
            at: 60,
            expect: Rejected("RESERVATION_EXPIRED"),
            effect: (0, 0, 0),
        },
        Case {
            row: "confirm | EXPIRED -> expired",
            setup: Setup::Expired,
            cmd: confirm(),
            at: 90,
            expect: Rejected("RESERVATION_EXPIRED"),
            effect: (0, 0, 0),
        },
        Case {
            row: "confirm | RELEASED -> released",
            setup: Setup::Released,
            cmd: confirm(),
            at: 5,
            expect: Rejected("RESERVATION_RELEASED"),
            effect: (0, 0, 0),
        },
        Case {
            row: "confirm | tombstone -> released",
            setup: Setup::Tombstone,
            cmd: confirm(),
            at: 5,
            expect: Rejected("RESERVATION_RELEASED"),
            effect: (0, 0, 0),
        },
        Case {
            row: "confirm | none -> not found",
            setup: Setup::None,
            cmd: confirm(),
            at: 5,
            expect: Rejected("RESERVATION_NOT_FOUND"),
            effect: (0, 0, 0),
        },
        Case {
            row: "release | RESERVED -> RELEASED",
            setup: Setup::Reserved,
            cmd: release(),
            at: 5,
            expect: Ok(Released, 1, false),
            effect: (0, -2, 0),
        },
        Case {
            row: "release | RELEASED -> replay",
            setup: Setup::Released,
            cmd: release(),
            at: 5,
            expect: Ok(Released, 0, true),
            effect: (0, 0, 0),
        },
        Case {
            row: "release | EXPIRED -> replay",
            setup: Setup::Expired,
            cmd: release(),
            at: 90,
            expect: Ok(Expired, 0, true),
            effect: (0, 0, 0),
        },
        Case {
            row: "release | CONFIRMED -> already confirmed",
            setup: Setup::Confirmed,
            cmd: release(),
            at: 5,
            expect: Rejected("ALREADY_CONFIRMED"),
            effect: (0, 0, 0),
        },
        Case {
            row: "release | none -> tombstone",
            setup: Setup::None,
            cmd: release(),
            at: 5,
            expect: Ok(Released, 1, false),
            effect: (0, 0, 0),
        },
        Case {
            row: "expire | RESERVED past expiry -> EXPIRED",
            setup: Setup::Reserved,
            cmd: expire(),
            at: 60,
            expect: Ok(Expired, 1, false),
            effect: (0, -2, 0),
        },
        Case {
            row: "expire | RESERVED in time -> nothing",
            setup: Setup::Reserved,
            cmd: expire(),
            at: 59,
            expect: NotDue,
            effect: (0, 0, 0),
        },
        Case {
            row: "expire | CONFIRMED -> nothing",
            setup: Setup::Confirmed,
            cmd: expire(),
            at: 90,
            expect: NotDue,
            effect: (0, 0, 0),
        },
        Case {
            row: "expire | RELEASED -> nothing",
            setup: Setup::Released,
            cmd: expire(),
            at: 90,
            expect: NotDue,
            effect: (0, 0, 0),
        },
        Case {
            row: "expire | none -> nothing",
            setup: Setup::None,
            cmd: expire(),
            at: 90,
            expect: NotDue,
            effect: (0, 0, 0),
        },
    ]
}

#[test]
fn outcome_table() {
    for case in cases() {
        let mut state = setup(case.setup);
        let before = state.balance(&item());
        let result = run(&mut state, &case.cmd, t(case.at));
        let after = state.balance(&item());
        match (&case.expect, &result) {
            (Expect::Ok(want, n, want_replayed), Ok(d)) => {
                let Outcome::Reservation { view, replayed } = &d.outcome else {
                    panic!("{}: unexpected outcome {:?}", case.row, d.outcome)
                };
                assert_eq!(view.state, *want, "{}", case.row);
                assert_eq!(*replayed, *want_replayed, "{}", case.row);
                assert_eq!(d.events.len(), *n, "{}", case.row);
            }
            (Expect::Rejected(code), Err(r)) => {
                assert_eq!(r.code().as_str(), *code, "{}", case.row)
            }
            (Expect::NotDue, Ok(d)) => {
                assert!(matches!(d.outcome, Outcome::NotDue { .. }), "{}", case.row);
                assert!(d.events.is_empty(), "{}", case.row);
            }
            (want, got) => panic!("{}: expected {want:?}, got {got:?}", case.row),
        }
        let effect = (
            after.on_hand - before.on_hand,
            after.reserved - before.reserved,
            after.confirmed - before.confirmed,
        );
        assert_eq!(effect, case.effect, "{}: stock effect", case.row);
    }
}

#[test]
fn a_second_reservation_for_an_order_is_refused() {
    let mut st = setup(Setup::Reserved);
    let other = ReserveRequest {
        reservation_id: "r2".into(),
        order_id: "o1".into(),
        lines: vec![LineRequest {
            sku: "apple".into(),
            location: None,
            quantity: 1,
        }],
        ttl_seconds: None,
    }
    .validate()
    .unwrap();
    let err = run(&mut st, &other, t(1)).unwrap_err();
    assert_eq!(err.code().as_str(), "ORDER_ALREADY_RESERVED");
    assert_eq!(err.details()["reservation_id"], "r1");
}

#[test]
fn shortfalls_name_every_short_line_and_nothing_is_decided() {
    let mut st = setup(Setup::None);
    let cmd = ReserveRequest {
        reservation_id: "r9".into(),
        order_id: "o9".into(),
        lines: vec![
            LineRequest {
                sku: "apple".into(),
                location: None,
                quantity: 11,
            },
            LineRequest {
                sku: "pear".into(),
                location: Some("north".into()),
                quantity: 1,
            },
            LineRequest {
                sku: "apple".into(),
                location: Some("north".into()),
                quantity: 1,
            },
        ],
        ttl_seconds: None,
    }
    .validate()
    .unwrap();
    let err = run(&mut st, &cmd, t(1)).unwrap_err();
    let Rejection::InsufficientStock { shortfalls } = err else {
        panic!("{err:?}")
    };
    let named: Vec<_> = shortfalls
        .iter()
        .map(|s| (s.sku.as_str(), s.location.as_str(), s.available))
        .collect();
    assert_eq!(
        named,
        vec![
            ("apple", "default", 10),
            ("apple", "north", 0),
            ("pear", "north", 0)
        ]
    );
    assert!(!st
        .reservations
        .contains_key(&ReservationId::parse("id", "r9").unwrap()));
}

#[test]
fn a_rerun_after_a_lost_commit_is_not_a_replay() {
    let mut st = setup(Setup::None);
    let cmd = reserve("o1", 2);
    let id = Uuid::new_v4();
    let first = decide(&st, &cmd, id, t(1)).unwrap();
    apply(&mut st, &first, id, t(1));
    let again = decide(&st, &cmd, id, t(2)).unwrap();
    assert!(again.events.is_empty());
    assert!(
        !again.outcome.replayed(),
        "the same command id sees its own event"
    );
    let other = decide(&st, &cmd, Uuid::new_v4(), t(2)).unwrap();
    assert!(other.outcome.replayed());
}

#[test]
fn a_rerun_after_a_lost_commit_answers_its_own_commit_even_after_a_release() {
    // The reserve committed, its COMMIT reply was lost, and another caller
    // released the reservation before the re-run: the re-run still answers
    // what its own commit did.
    let mut st = setup(Setup::None);
    let cmd = reserve("o1", 2);
    let id = Uuid::new_v4();
    let first = decide(&st, &cmd, id, t(1)).unwrap();
    apply(&mut st, &first, id, t(1));
    run(&mut st, &command::release("r1", None).unwrap(), t(2)).unwrap();
    let again = decide(&st, &cmd, id, t(3)).expect("its own commit, not RESERVATION_RELEASED");
    assert!(again.events.is_empty());
    assert_eq!(
        again.outcome, first.outcome,
        "the answer its commit produced"
    );
    // Any other caller with the same request sees the reservation as it is.
    let other = decide(&st, &cmd, Uuid::new_v4(), t(3)).unwrap_err();
    assert_eq!(other.code().as_str(), "RESERVATION_RELEASED");
}

#[test]
fn receipts_and_adjustments_are_idempotent_and_checked() {
    let mut st = setup(Setup::Reserved); // on_hand 10, reserved 2
    let replay = run(&mut st, &receive("in-1", 10), t(1)).unwrap();
    assert!(replay.outcome.replayed() && replay.events.is_empty());
    assert_eq!(
        run(&mut st, &receive("in-1", 9), t(1))
            .unwrap_err()
            .code()
            .as_str(),
        "IDEMPOTENCY_CONFLICT"
    );
    let adjust = |id: &str, delta| {
        AdjustRequest {
            adjustment_id: id.into(),
            sku: "apple".into(),
            location: None,
            delta,
            reason: "count".into(),
        }
        .validate()
        .unwrap()
    };
    let err = run(&mut st, &adjust("adj-1", -9), t(1)).unwrap_err();
    assert_eq!(err.code().as_str(), "INSUFFICIENT_STOCK");
    assert_eq!(err.details()["shortfalls"][0]["available"], 8);
    run(&mut st, &adjust("adj-1", -8), t(1)).unwrap();
    assert_eq!(
        st.balance(&item()),
        Balance {
            on_hand: 2,
            reserved: 2,
            confirmed: 0
        }
    );
    assert!(run(&mut st, &adjust("adj-1", -8), t(2))
        .unwrap()
        .outcome
        .replayed());
}
