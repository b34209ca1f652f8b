//! One case per row of the outcome table in `shared/design/domain.md`, decided
//! by the pure core. The same table runs through the store in
//! `tests/outcomes.rs`.

use super::*;
use crate::domain::command::{self, AdjustRequest, LineRequest, ReceiveRequest, ReserveRequest};
use crate::domain::event::{Balance, Event};
use crate::domain::event::{
    OrderLimitSet, ReservationConfirmed, ReservationCreated, ReservationExtended,
    ReservationLinesConfirmed, ReservationReleased, StockCounted, StockLow, StockRecovered,
};

use crate::domain::ids::*;
use crate::domain::reservation::ReservationState;
use crate::domain::{EventType, RejectionCode};
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
        backorder: false,
        latest_arrival: None,
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
        against: None,
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

/// A partial confirm of `qty` apples under `id`.
fn cl(id: &str, sku: &str, qty: i64) -> Command {
    command::ConfirmLinesRequest {
        confirmation_id: id.into(),
        lines: vec![LineRequest {
            sku: sku.into(),
            location: None,
            quantity: qty,
        }],
    }
    .validate("r1")
    .unwrap()
}

/// A partial release of `qty` apples under `id`.
fn rl(id: &str, qty: i64) -> Command {
    command::ReleaseLinesRequest {
        release_id: id.into(),
        lines: vec![LineRequest {
            sku: "apple".into(),
            location: None,
            quantity: qty,
        }],
        reason: None,
    }
    .validate("r1")
    .unwrap()
}

fn ext(id: &str, ttl: i64) -> Command {
    command::ExtendRequest {
        extension_id: id.into(),
        ttl_seconds: ttl,
    }
    .validate("r1")
    .unwrap()
}

#[derive(Clone, Copy, Debug)]
enum Setup {
    None,
    Reserved,
    Confirmed,
    Released,
    Expired,
    Tombstone,
    /// 2 reserved, 1 confirmed under `c1` at second 1.
    PartlyConfirmed,
    /// 2 reserved, 1 released under `x1` at second 1.
    PartlyReleased,
    /// Held until second 121 by extension `e1` (120 s) at second 1.
    Extended,
    /// Confirmed, then its events left the database with an archived
    /// partition: the store loads only its directory entry and its order.
    Archived,
}

fn setup(s: Setup) -> LedgerState {
    let mut st = LedgerState::default();
    run(&mut st, &receive("in-1", 10), t(0)).unwrap();
    let reserve_it = !matches!(s, Setup::None | Setup::Tombstone);
    if reserve_it {
        run(&mut st, &reserve("o1", 2), t(0)).unwrap();
    }
    let follow = match s {
        Setup::Confirmed | Setup::Archived => Some((command::confirm("r1").unwrap(), t(1))),
        Setup::Released => Some((command::release("r1", None).unwrap(), t(1))),
        Setup::Expired => Some((command::expire("r1").unwrap(), t(61))),
        Setup::Tombstone => Some((command::release("r1", None).unwrap(), t(0))),
        Setup::PartlyConfirmed => Some((cl("c1", "apple", 1), t(1))),
        Setup::PartlyReleased => Some((rl("x1", 1), t(1))),
        Setup::Extended => Some((ext("e1", 120), t(1))),
        Setup::None | Setup::Reserved => None,
    };
    if let Some((cmd, at)) = follow {
        run(&mut st, &cmd, at).unwrap();
    }
    if matches!(s, Setup::Archived) {
        let r1 = crate::domain::ReservationId::parse("reservation_id", "r1").unwrap();
        st.reservations.remove(&r1);
        let stream = StreamId::Reservation(r1);
        let at = ArchivedStream {
            last_seq: 2,
            position: 7,
        };
        st.archived.insert(stream, at);
    }
    st
}

#[derive(Debug)]
enum Expect {
    /// Success with this state; `events` appended; `replayed` flag.
    Ok(ReservationState, usize, bool),
    Rejected(RejectionCode),
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

/// One row: (row of the table, setup, command, at second, expected, effect).
fn case(
    row: &'static str,
    setup: Setup,
    cmd: Command,
    at: i64,
    expect: Expect,
    effect: (i64, i64, i64),
) -> Case {
    Case {
        row,
        setup,
        cmd,
        at,
        expect,
        effect,
    }
}

#[rustfmt::skip]
fn cases() -> Vec<Case> {
    use Expect::*;
    use RejectionCode as Code;
    use ReservationState::*;
    use Setup::{Confirmed as IsConfirmed, Expired as IsExpired, None as Nothing};
    use Setup::{Released as IsReleased, Reserved as IsReserved, Tombstone};
    use Setup::Archived as IsArchived;
    let confirm = || command::confirm("r1").unwrap();
    let release = || command::release("r1", Some("customer cancelled")).unwrap();
    let expire = || command::expire("r1").unwrap();
    vec![
        case("reserve | none -> RESERVED", Nothing, reserve("o1", 2), 5, Ok(Reserved, 1, false), (0, 2, 0)),
        case("reserve same | RESERVED -> replay", IsReserved, reserve("o1", 2), 5, Ok(Reserved, 0, true), (0, 0, 0)),
        case("reserve same | CONFIRMED -> replay", IsConfirmed, reserve("o1", 2), 5, Ok(Confirmed, 0, true), (0, 0, 0)),
        case("reserve same | EXPIRED -> replay", IsExpired, reserve("o1", 2), 90, Ok(Expired, 0, true), (0, 0, 0)),
        case("reserve different | RESERVED -> conflict", IsReserved, reserve("o1", 3), 5, Rejected(Code::IdempotencyConflict), (0, 0, 0)),
        case("reserve different order | CONFIRMED -> conflict", IsConfirmed, reserve("o2", 2), 5, Rejected(Code::IdempotencyConflict), (0, 0, 0)),
        case("reserve | RELEASED -> released", IsReleased, reserve("o1", 2), 5, Rejected(Code::ReservationReleased), (0, 0, 0)),
        case("reserve | tombstone -> released", Tombstone, reserve("o1", 2), 5, Rejected(Code::ReservationReleased), (0, 0, 0)),
        case("reserve | none, lack of stock -> insufficient", Nothing, reserve("o1", 11), 5, Rejected(Code::InsufficientStock), (0, 0, 0)),
        case("confirm | RESERVED in time -> CONFIRMED", IsReserved, confirm(), 5, Ok(Confirmed, 1, false), (-2, -2, 2)),
        case("confirm | CONFIRMED -> replay", IsConfirmed, confirm(), 5, Ok(Confirmed, 0, true), (0, 0, 0)),
        case("confirm | RESERVED past expiry -> expired", IsReserved, confirm(), 60, Rejected(Code::ReservationExpired), (0, 0, 0)),
        case("confirm | EXPIRED -> expired", IsExpired, confirm(), 90, Rejected(Code::ReservationExpired), (0, 0, 0)),
        case("confirm | RELEASED -> released", IsReleased, confirm(), 5, Rejected(Code::ReservationReleased), (0, 0, 0)),
        case("confirm | tombstone -> released", Tombstone, confirm(), 5, Rejected(Code::ReservationReleased), (0, 0, 0)),
        case("confirm | none -> not found", Nothing, confirm(), 5, Rejected(Code::ReservationNotFound), (0, 0, 0)),
        case("release | RESERVED -> RELEASED", IsReserved, release(), 5, Ok(Released, 1, false), (0, -2, 0)),
        case("release | RELEASED -> replay", IsReleased, release(), 5, Ok(Released, 0, true), (0, 0, 0)),
        case("release | EXPIRED -> replay", IsExpired, release(), 90, Ok(Expired, 0, true), (0, 0, 0)),
        case("release | CONFIRMED -> already confirmed", IsConfirmed, release(), 5, Rejected(Code::AlreadyConfirmed), (0, 0, 0)),
        case("release | none -> tombstone", Nothing, release(), 5, Ok(Released, 1, false), (0, 0, 0)),
        case("expire | RESERVED past expiry -> EXPIRED", IsReserved, expire(), 60, Ok(Expired, 1, false), (0, -2, 0)),
        case("expire | RESERVED in time -> nothing", IsReserved, expire(), 59, NotDue, (0, 0, 0)),
        case("expire | CONFIRMED -> nothing", IsConfirmed, expire(), 90, NotDue, (0, 0, 0)),
        case("expire | RELEASED -> nothing", IsReleased, expire(), 90, NotDue, (0, 0, 0)),
        case("expire | none -> nothing", Nothing, expire(), 90, NotDue, (0, 0, 0)),
        // The stream left the database (docs/archive.md, decision 3).
        case("reserve same | archived -> archived", IsArchived, reserve("o1", 2), 5, Rejected(Code::Archived), (0, 0, 0)),
        case("confirm | archived -> archived", IsArchived, confirm(), 5, Rejected(Code::Archived), (0, 0, 0)),
        case("release | archived -> archived, no tombstone", IsArchived, release(), 5, Rejected(Code::Archived), (0, 0, 0)),
        case("expire | archived -> archived", IsArchived, expire(), 90, Rejected(Code::Archived), (0, 0, 0)),
    ]
}

/// The rows of partial confirms and releases and of extensions (issue 15).
#[rustfmt::skip]
fn step_cases() -> Vec<Case> {
    use Expect::*;
    use RejectionCode as Code;
    use ReservationState::*;
    use Setup::{Confirmed as IsConfirmed, Expired as IsExpired, None as Nothing};
    use Setup::{Released as IsReleased, Reserved as IsReserved, Tombstone};
    use Setup::{Extended, PartlyConfirmed, PartlyReleased};
    let confirm = || command::confirm("r1").unwrap();
    let release = || command::release("r1", Some("customer cancelled")).unwrap();
    let expire = || command::expire("r1").unwrap();
    vec![
        case("confirm lines | RESERVED, part -> RESERVED", IsReserved, cl("c1", "apple", 1), 5, Ok(Reserved, 1, false), (-1, -1, 1)),
        case("confirm lines | RESERVED, all that is open -> CONFIRMED", IsReserved, cl("c1", "apple", 2), 5, Ok(Confirmed, 1, false), (-2, -2, 2)),
        case("confirm lines | same id, same lines -> replay", PartlyConfirmed, cl("c1", "apple", 1), 5, Ok(Reserved, 0, true), (0, 0, 0)),
        case("confirm lines | same id, other lines -> conflict", PartlyConfirmed, cl("c1", "apple", 2), 5, Rejected(Code::IdempotencyConflict), (0, 0, 0)),
        case("confirm lines | more than is open -> exceeds", PartlyConfirmed, cl("c2", "apple", 2), 5, Rejected(Code::ExceedsReserved), (0, 0, 0)),
        case("confirm lines | an item not reserved -> exceeds", IsReserved, cl("c1", "pear", 1), 5, Rejected(Code::ExceedsReserved), (0, 0, 0)),
        case("confirm lines | the rest -> CONFIRMED", PartlyConfirmed, cl("c2", "apple", 1), 5, Ok(Confirmed, 1, false), (-1, -1, 1)),
        case("confirm lines | RESERVED past expiry -> expired", IsReserved, cl("c1", "apple", 1), 60, Rejected(Code::ReservationExpired), (0, 0, 0)),
        case("confirm lines | CONFIRMED -> exceeds", IsConfirmed, cl("c9", "apple", 1), 5, Rejected(Code::ExceedsReserved), (0, 0, 0)),
        case("confirm lines | RELEASED -> released", IsReleased, cl("c1", "apple", 1), 5, Rejected(Code::ReservationReleased), (0, 0, 0)),
        case("confirm lines | EXPIRED -> expired", IsExpired, cl("c1", "apple", 1), 90, Rejected(Code::ReservationExpired), (0, 0, 0)),
        case("confirm lines | tombstone -> released", Tombstone, cl("c1", "apple", 1), 5, Rejected(Code::ReservationReleased), (0, 0, 0)),
        case("confirm lines | none -> not found", Nothing, cl("c1", "apple", 1), 5, Rejected(Code::ReservationNotFound), (0, 0, 0)),
        case("confirm | partly confirmed -> CONFIRMED, the rest", PartlyConfirmed, confirm(), 5, Ok(Confirmed, 1, false), (-1, -1, 1)),
        case("release | partly confirmed -> RELEASED, the rest", PartlyConfirmed, release(), 5, Ok(Released, 1, false), (0, -1, 0)),
        case("expire | partly confirmed, past expiry -> EXPIRED, the rest", PartlyConfirmed, expire(), 60, Ok(Expired, 1, false), (0, -1, 0)),
        // Partial release.
        case("release lines | RESERVED, part -> RESERVED", IsReserved, rl("x1", 1), 5, Ok(Reserved, 1, false), (0, -1, 0)),
        case("release lines | RESERVED, all that is open -> RELEASED", IsReserved, rl("x1", 2), 5, Ok(Released, 1, false), (0, -2, 0)),
        case("release lines | same id, same lines -> replay", PartlyReleased, rl("x1", 1), 5, Ok(Reserved, 0, true), (0, 0, 0)),
        case("release lines | same id, other lines -> conflict", PartlyReleased, rl("x1", 2), 5, Rejected(Code::IdempotencyConflict), (0, 0, 0)),
        case("release lines | more than is open -> exceeds", PartlyReleased, rl("x2", 2), 5, Rejected(Code::ExceedsReserved), (0, 0, 0)),
        case("release lines | RESERVED past expiry -> RESERVED", IsReserved, rl("x1", 1), 60, Ok(Reserved, 1, false), (0, -1, 0)),
        case("release lines | CONFIRMED -> already confirmed", IsConfirmed, rl("x1", 1), 5, Rejected(Code::AlreadyConfirmed), (0, 0, 0)),
        case("release lines | RELEASED -> released", IsReleased, rl("x1", 1), 5, Rejected(Code::ReservationReleased), (0, 0, 0)),
        case("release lines | EXPIRED -> expired", IsExpired, rl("x1", 1), 90, Rejected(Code::ReservationExpired), (0, 0, 0)),
        case("release lines | none -> not found", Nothing, rl("x1", 1), 5, Rejected(Code::ReservationNotFound), (0, 0, 0)),
        case("confirm | partly released -> CONFIRMED, the rest", PartlyReleased, confirm(), 5, Ok(Confirmed, 1, false), (-1, -1, 1)),
        // Extending a hold.
        case("extend | RESERVED -> RESERVED, later", IsReserved, ext("e1", 120), 5, Ok(Reserved, 1, false), (0, 0, 0)),
        case("extend | same id, same ttl -> replay", Extended, ext("e1", 120), 5, Ok(Reserved, 0, true), (0, 0, 0)),
        case("extend | same id, other ttl -> conflict", Extended, ext("e1", 300), 5, Rejected(Code::IdempotencyConflict), (0, 0, 0)),
        case("extend | not later -> expiry not later", IsReserved, ext("e1", 10), 5, Rejected(Code::ExpiryNotLater), (0, 0, 0)),
        case("extend | past the TTL limit -> hold too long", IsReserved, ext("e1", i64::from(crate::limits::MAX_TTL_SECONDS)), 5, Rejected(Code::HoldTooLong), (0, 0, 0)),
        case("extend | RESERVED past expiry -> expired", IsReserved, ext("e1", 120), 60, Rejected(Code::ReservationExpired), (0, 0, 0)),
        case("extend | CONFIRMED -> already confirmed", IsConfirmed, ext("e1", 120), 5, Rejected(Code::AlreadyConfirmed), (0, 0, 0)),
        case("extend | RELEASED -> released", IsReleased, ext("e1", 120), 5, Rejected(Code::ReservationReleased), (0, 0, 0)),
        case("extend | EXPIRED -> expired", IsExpired, ext("e1", 120), 90, Rejected(Code::ReservationExpired), (0, 0, 0)),
        case("extend | none -> not found", Nothing, ext("e1", 120), 5, Rejected(Code::ReservationNotFound), (0, 0, 0)),
        case("expire | extended, before the new expiry -> nothing", Extended, expire(), 90, NotDue, (0, 0, 0)),
        case("expire | extended, at the new expiry -> EXPIRED", Extended, expire(), 121, Ok(Expired, 1, false), (0, -2, 0)),
        case("confirm | extended, past the first expiry -> CONFIRMED", Extended, confirm(), 90, Ok(Confirmed, 1, false), (-2, -2, 2)),
    ]
}

#[test]
fn outcome_table() {
    for case in cases().into_iter().chain(step_cases()) {
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
                assert_eq!(r.code(), *code, "{}", case.row)
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

/// Reservation `r2` of one apple for order `o1`, which `r1` holds.
fn second_reservation_of_o1() -> Command {
    ReserveRequest {
        reservation_id: "r2".into(),
        order_id: "o1".into(),
        lines: vec![LineRequest {
            sku: "apple".into(),
            location: None,
            quantity: 1,
        }],
        ttl_seconds: None,
        backorder: false,
        latest_arrival: None,
    }
    .validate()
    .unwrap()
}

#[test]
fn a_second_reservation_for_an_order_is_refused() {
    let mut st = setup(Setup::Reserved);
    let other = second_reservation_of_o1();
    let err = run(&mut st, &other, t(1)).unwrap_err();
    assert_eq!(err.code(), RejectionCode::OrderAlreadyReserved);
    assert_eq!(err.details()["reservation_id"], "r1");
}

#[test]
fn an_archived_order_stays_reserved_and_an_archived_receipt_is_not_received_again() {
    let mut st = setup(Setup::Archived);
    let other = second_reservation_of_o1();
    let err = run(&mut st, &other, t(5)).unwrap_err();
    assert_eq!(err.code(), RejectionCode::OrderAlreadyReserved);
    // A receipt whose stream was archived: a retry is refused, never counted twice.
    let stream = StreamId::parse("stream", "receipt:in-9").unwrap();
    let at = ArchivedStream {
        last_seq: 1,
        position: 3,
    };
    st.archived.insert(stream, at);
    let before = st.balance(&item());
    let err = run(&mut st, &receive("in-9", 4), t(5)).unwrap_err();
    assert_eq!(err.code(), RejectionCode::Archived);
    assert_eq!(
        err.details(),
        serde_json::json!({"stream": "receipt:in-9", "last_seq": 1, "position": 3})
    );
    assert_eq!(st.balance(&item()), before);
    // Other streams are decided as ever.
    run(&mut st, &receive("in-10", 4), t(5)).unwrap();
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
        backorder: false,
        latest_arrival: None,
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
    assert_eq!(other.code(), RejectionCode::ReservationReleased);
}

#[test]
fn receipts_and_adjustments_are_idempotent_and_checked() {
    let mut st = setup(Setup::Reserved); // on_hand 10, reserved 2
    let replay = run(&mut st, &receive("in-1", 10), t(1)).unwrap();
    assert!(replay.outcome.replayed() && replay.events.is_empty());
    assert_eq!(
        run(&mut st, &receive("in-1", 9), t(1)).unwrap_err().code(),
        RejectionCode::IdempotencyConflict
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
    assert_eq!(err.code(), RejectionCode::InsufficientStock);
    assert_eq!(err.details()["shortfalls"][0]["available"], 8);
    run(&mut st, &adjust("adj-1", -8), t(1)).unwrap();
    assert_eq!(
        st.balance(&item()),
        Balance {
            on_hand: 2,
            reserved: 2,
            confirmed: 0,
            backordered: 0,
        }
    );
    assert!(run(&mut st, &adjust("adj-1", -8), t(2))
        .unwrap()
        .outcome
        .replayed());
}

fn transfer(id: &str, from: &str, to: &str, qty: i64) -> Command {
    crate::domain::TransferRequest {
        transfer_id: id.into(),
        sku: "apple".into(),
        from_location: from.into(),
        to_location: to.into(),
        quantity: qty,
    }
    .validate()
    .unwrap()
}

fn apple_at(location: &str) -> Item {
    Item {
        sku: crate::domain::Sku::parse("sku", "apple").unwrap(),
        location: crate::domain::Location::parse("location", location).unwrap(),
    }
}

/// The transfer rows of the outcome table: moves available stock at once,
/// replays by id, conflicts on another request, refuses a short source
/// naming its shortfall, and never touches what reservations hold.
#[test]
fn a_transfer_moves_available_stock_only_once() {
    let mut st = setup(Setup::Reserved); // apple@default: on_hand 10, reserved 2
    let moved = run(&mut st, &transfer("t1", "default", "north", 5), t(1)).unwrap();
    assert_eq!(moved.events.len(), 1);
    assert_eq!(moved.events[0].stream.to_string(), "transfer:t1");
    let at = |st: &LedgerState, l| st.balance(&apple_at(l));
    assert_eq!(
        (at(&st, "default").on_hand, at(&st, "default").reserved),
        (5, 2)
    );
    assert_eq!(
        (at(&st, "north").on_hand, at(&st, "north").reserved),
        (5, 0)
    );
    // The same request again: a replay, nothing moves.
    let again = run(&mut st, &transfer("t1", "default", "north", 5), t(2)).unwrap();
    assert!(again.outcome.replayed() && again.events.is_empty());
    // The same id for another request.
    let other = run(&mut st, &transfer("t1", "default", "north", 4), t(2)).unwrap_err();
    assert_eq!(other.code(), RejectionCode::IdempotencyConflict);
    // More than the source has available (3 of its 5 are free): refused,
    // naming the source and what it has.
    let short = run(&mut st, &transfer("t2", "default", "south", 4), t(3)).unwrap_err();
    assert_eq!(short.code(), RejectionCode::InsufficientStock);
    let shortfall = &short.details()["shortfalls"][0];
    assert_eq!(
        (
            shortfall["location"].clone(),
            shortfall["requested"].clone(),
            shortfall["available"].clone()
        ),
        (
            serde_json::json!("default"),
            serde_json::json!(4),
            serde_json::json!(3)
        )
    );
    // From a location that never had the SKU: nothing available.
    let none = run(&mut st, &transfer("t3", "east", "west", 1), t(3)).unwrap_err();
    assert_eq!(none.code(), RejectionCode::InsufficientStock);
    assert_eq!(
        at(&st, "default").on_hand + at(&st, "north").on_hand,
        10,
        "stock is moved, never made"
    );
}

#[test]
fn a_transfer_names_what_is_wrong_with_it() {
    let bad = |from: &str, to: &str, qty: i64| {
        crate::domain::TransferRequest {
            transfer_id: "t".into(),
            sku: "apple".into(),
            from_location: from.into(),
            to_location: to.into(),
            quantity: qty,
        }
        .validate()
        .unwrap_err()
        .details()["field"]
            .clone()
    };
    assert_eq!(bad("a", "a", 1), "to_location");
    assert_eq!(bad("a", "b", 0), "quantity");
    assert_eq!(bad("a b", "b", 1), "from_location");
    assert_eq!(bad("a", "", 1), "to_location");
}

fn count(id: &str, counted: i64) -> Command {
    crate::domain::CountRequest {
        count_id: id.into(),
        sku: "apple".into(),
        location: None,
        counted,
    }
    .validate()
    .unwrap()
}

/// The books a count's answer reports.
fn books(o: &Outcome) -> i64 {
    match o {
        Outcome::Counted { books, .. } => *books,
        other => panic!("not a count's answer: {other:?}"),
    }
}

/// The count rows of the outcome table: the difference from the books is
/// appended with both figures; a replay answers with the books it saw; a
/// count below what reservations hold is refused, nothing written.
#[test]
fn a_count_records_the_difference_from_the_books() {
    let mut st = setup(Setup::Reserved); // on_hand 10, reserved 2
    let d = run(&mut st, &count("c1", 7), t(1)).unwrap();
    assert_eq!(books(&d.outcome), 10);
    assert!(matches!(
        d.events[0].event,
        Event::StockCounted(StockCounted {
            counted: 7,
            books: 10,
            ..
        })
    ));
    assert_eq!(
        (st.balance(&item()).on_hand, st.balance(&item()).reserved),
        (7, 2)
    );
    // A replay, after the books moved on, still says what the count saw.
    run(&mut st, &receive("in-2", 5), t(2)).unwrap();
    let again = run(&mut st, &count("c1", 7), t(3)).unwrap();
    assert!(again.outcome.replayed() && again.events.is_empty());
    assert_eq!(books(&again.outcome), 10);
    assert_eq!(
        run(&mut st, &count("c1", 8), t(3)).unwrap_err().code(),
        RejectionCode::IdempotencyConflict
    );
    // Fewer than the 2 reserved: refused, naming what would be taken away.
    let low = run(&mut st, &count("c2", 1), t(4)).unwrap_err();
    assert_eq!(low.code(), RejectionCode::InsufficientStock);
    assert_eq!(low.details()["shortfalls"][0]["requested"], 11);
    // Exactly what is reserved, and an item never received (0 by the books).
    run(&mut st, &count("c3", 2), t(5)).unwrap();
    assert_eq!(st.balance(&item()).on_hand, 2);
    let unheard = crate::domain::CountRequest {
        count_id: "c4".into(),
        sku: "kiwi".into(),
        location: None,
        counted: 4,
    }
    .validate()
    .unwrap();
    assert_eq!(books(&run(&mut st, &unheard, t(6)).unwrap().outcome), 0);
    // A negative count is bad input.
    let negative = crate::domain::CountRequest {
        count_id: "c5".into(),
        sku: "apple".into(),
        location: None,
        counted: -1,
    }
    .validate()
    .unwrap_err();
    assert_eq!(negative.details()["field"], "counted");
}

#[test]
fn the_view_shows_what_became_of_each_line() {
    let mut st = setup(Setup::PartlyConfirmed);
    let d = run(&mut st, &rl("x1", 1), t(2)).unwrap();
    let Outcome::Reservation { view, .. } = d.outcome else {
        panic!("{:?}", d.outcome)
    };
    assert_eq!(view.state, ReservationState::Released);
    let l = &view.lines[0];
    assert_eq!(
        (l.quantity, l.open, l.confirmed, l.released, l.expired),
        (2, 0, 1, 1, 0)
    );
    // The settling event carries what was open, and the caller's id.
    assert!(matches!(
        &d.events[0].event,
        Event::ReservationReleased(ReservationReleased { lines, release_id: Some(_), .. }) if lines[0].quantity == 1
    ));
}

#[test]
fn a_reservation_takes_steps_up_to_its_limit_and_can_always_be_settled() {
    let mut st = LedgerState::default();
    run(&mut st, &receive("in-1", 1_000), t(0)).unwrap();
    let mut big = reserve("o1", 1_000);
    if let Command::Reserve(r) = &mut big {
        r.ttl_seconds = 600;
    }
    run(&mut st, &big, t(0)).unwrap();
    let max = crate::limits::MAX_RESERVATION_EVENTS;
    // Seq 1 is the reserve; partial steps may take seq 2 ..= max - 1.
    for n in 2..max {
        run(&mut st, &cl(&format!("c{n}"), "apple", 1), t(1)).unwrap();
    }
    let refused = run(&mut st, &cl("one-more", "apple", 1), t(1)).unwrap_err();
    assert_eq!(refused.code(), RejectionCode::StepLimit);
    let refused = run(&mut st, &ext("later", 900), t(1)).unwrap_err();
    assert_eq!(refused.code(), RejectionCode::StepLimit);
    let d = run(&mut st, &command::confirm("r1").unwrap(), t(1)).unwrap();
    assert_eq!(d.events[0].seq, max);
    assert_eq!(st.balance(&item()).reserved, 0);
}

fn apples(q: u32) -> Vec<Line> {
    vec![Line {
        item: item(),
        quantity: q,
    }]
}

/// A partial confirm of `q` apples of order o1 under `cid`.
fn part(q: u32, cid: &str) -> Event {
    Event::ReservationLinesConfirmed(ReservationLinesConfirmed {
        order_id: OrderId::parse("id", "o1").unwrap(),
        confirmation_id: crate::domain::ConfirmationId::parse("id", cid).unwrap(),
        lines: apples(q),
    })
}

/// Folds `e` at `seq` into `r`, recorded at second `at`.
fn fold_at(
    r: &Reservation,
    seq: u32,
    e: &Event,
    at: i64,
) -> Result<Reservation, crate::domain::StreamViolation> {
    let id = ReservationId::parse("id", "r1").unwrap();
    Reservation::fold(Some(r.clone()), &id, seq, e, Uuid::nil(), t(at))
}

/// Two apples held until second 60 (the reserve at second 0), and the same
/// after one of them was confirmed in part at second 1.
fn created_and_partly_confirmed() -> (Reservation, Reservation) {
    let id = ReservationId::parse("id", "r1").unwrap();
    let created = Event::ReservationCreated(ReservationCreated {
        order_id: OrderId::parse("id", "o1").unwrap(),
        lines: apples(2),
        expires_at: t(60),
        ttl_seconds: 60,
        request_hash: "h".into(),
    });
    let r = Reservation::fold(None, &id, 1, &created, Uuid::nil(), t(0)).unwrap();
    let r2 = fold_at(&r, 2, &part(1, "c1"), 1).unwrap();
    (r, r2)
}

#[test]
fn the_fold_refuses_partial_steps_the_core_never_writes() {
    use crate::domain::StreamViolation;
    let (r, r2) = created_and_partly_confirmed();
    // A partial step that takes everything open must be the settling event.
    assert!(matches!(
        fold_at(&r, 2, &part(2, "c1"), 1),
        Err(StreamViolation::AmountsDiffer { .. })
    ));
    // More than is open, or an id used twice.
    assert!(matches!(
        fold_at(&r2, 3, &part(1, "c1"), 1),
        Err(StreamViolation::AmountsDiffer { .. })
    ));
    // A settlement must carry what is open, not the lines as reserved.
    let whole = |q| {
        Event::ReservationConfirmed(ReservationConfirmed {
            order_id: OrderId::parse("id", "o1").unwrap(),
            lines: apples(q),
            confirmation_id: None,
        })
    };
    assert!(fold_at(&r2, 3, &whole(2), 1).is_err());
    assert!(fold_at(&r2, 3, &whole(1), 1).is_ok());
    // Nothing is confirmed in part after the hold ran out.
    let late = fold_at(&r, 2, &part(1, "c9"), 60);
    assert!(matches!(late, Err(StreamViolation::AfterExpiry { .. })));
}

#[test]
fn the_fold_refuses_extensions_the_core_never_writes() {
    use crate::domain::StreamViolation;
    let (_, r2) = created_and_partly_confirmed();
    // Extensions (recorded at second 1) go to their time to live from then;
    // an id used twice, an earlier or a wrong expiry, or one past the
    // longest hold is refused.
    let extend = |eid: &str, ttl: u32, expires_at| {
        Event::ReservationExtended(ReservationExtended {
            order_id: OrderId::parse("id", "o1").unwrap(),
            extension_id: crate::domain::ExtensionId::parse("id", eid).unwrap(),
            ttl_seconds: ttl,
            expires_at,
        })
    };
    let r3 = fold_at(&r2, 3, &extend("e1", 89, t(90)), 1).unwrap();
    assert!(matches!(
        fold_at(&r3, 4, &extend("e1", 119, t(120)), 1),
        Err(StreamViolation::StepReused { .. })
    ));
    let max = crate::limits::MAX_TTL_SECONDS;
    for bad in [
        extend("e2", 89, t(90)),
        extend("e3", 100, t(200)),
        extend("e4", max, t(1 + i64::from(max))),
    ] {
        assert!(
            matches!(
                fold_at(&r3, 4, &bad, 1),
                Err(StreamViolation::BadExtension { .. })
            ),
            "{bad:?}"
        );
    }
    // Nor is a hold extended once it ran out.
    let after = fold_at(&r2, 3, &extend("e5", 100, t(161)), 61);
    assert!(matches!(after, Err(StreamViolation::BadExtension { .. })));
}

fn limit(id: &str, sku: &str, max: Option<i64>) -> Result<Command, Rejection> {
    crate::domain::LimitRequest {
        limit_id: id.into(),
        sku: sku.into(),
        location: None,
        max_per_order: max,
    }
    .validate()
}

/// A reserve of `lines` (sku, quantity) for order `o2` under `r2`.
fn reserve_lines(lines: &[(&str, i64)]) -> Command {
    ReserveRequest {
        reservation_id: "r2".into(),
        order_id: "o2".into(),
        lines: lines
            .iter()
            .map(|(sku, quantity)| LineRequest {
                sku: (*sku).into(),
                location: None,
                quantity: *quantity,
            })
            .collect(),
        ttl_seconds: Some(60),
        backorder: false,
        latest_arrival: None,
    }
    .validate()
    .unwrap()
}

/// What a row of the limit table expects.
#[derive(Debug)]
enum LimitExpect {
    /// Accepted, appending this many events (0: a replay).
    Appends(usize),
    Rejected(RejectionCode),
}

/// The per-order limit rows of the outcome table (issue 27): apples are on
/// hand (10), 2 reserved by `r1`; each row sets limits first, in order,
/// then runs its command.
#[rustfmt::skip]
fn limit_cases() -> Vec<(&'static str, Vec<Option<i64>>, Command, LimitExpect)> {
    use LimitExpect::*;
    use RejectionCode as Code;
    let set = |id: &str, max: Option<i64>| limit(id, "apple", max).unwrap();
    vec![
        ("limit | new -> set", vec![], set("l9", Some(3)), Appends(1)),
        ("limit | same id, same limit -> replay", vec![Some(3)], set("l0", Some(3)), Appends(0)),
        ("limit | same id, other limit -> conflict", vec![Some(3)], set("l0", Some(4)), Rejected(Code::IdempotencyConflict)),
        ("limit | same id, lifted instead -> conflict", vec![Some(3)], set("l0", None), Rejected(Code::IdempotencyConflict)),
        ("limit | an item never received -> set", vec![], limit("l9", "kiwi", Some(1)).unwrap(), Appends(1)),
        ("limit | below what an open reservation holds -> set, the hold stays", vec![], set("l9", Some(1)), Appends(1)),
        ("reserve | within the limit -> RESERVED", vec![Some(3)], reserve_lines(&[("apple", 3)]), Appends(1)),
        ("reserve | over the limit -> limit exceeded", vec![Some(3)], reserve_lines(&[("apple", 4)]), Rejected(Code::OrderLimitExceeded)),
        ("reserve | over the limit and short of stock -> limit exceeded", vec![Some(3)], reserve_lines(&[("apple", 9)]), Rejected(Code::OrderLimitExceeded)),
        ("reserve | lines merged over the limit -> limit exceeded", vec![Some(3)], reserve_lines(&[("apple", 2), ("apple", 2)]), Rejected(Code::OrderLimitExceeded)),
        ("reserve | limit 0 -> limit exceeded", vec![Some(0)], reserve_lines(&[("apple", 1)]), Rejected(Code::OrderLimitExceeded)),
        ("reserve | the latest limit holds -> RESERVED", vec![Some(1), Some(5)], reserve_lines(&[("apple", 5)]), Appends(1)),
        ("reserve | limit lifted -> RESERVED", vec![Some(1), None], reserve_lines(&[("apple", 8)]), Appends(1)),
        ("reserve | no limit, short of stock -> insufficient", vec![], reserve_lines(&[("apple", 9)]), Rejected(Code::InsufficientStock)),
        ("confirm | held over a later, lower limit -> CONFIRMED", vec![Some(1)], command::confirm("r1").unwrap(), Appends(1)),
    ]
}

#[test]
fn limit_table() {
    for (row, limits, cmd, expect) in limit_cases() {
        let mut state = setup(Setup::Reserved);
        for (i, max) in limits.iter().enumerate() {
            run(
                &mut state,
                &limit(&format!("l{i}"), "apple", *max).unwrap(),
                t(1),
            )
            .unwrap();
        }
        let before = state.balance(&item());
        match (run(&mut state, &cmd, t(5)), expect) {
            (Ok(d), LimitExpect::Appends(n)) => {
                assert_eq!(d.events.len(), n, "{row}");
                assert_eq!(d.outcome.replayed(), n == 0, "{row}");
            }
            (Err(r), LimitExpect::Rejected(code)) => {
                assert_eq!(r.code(), code, "{row}");
                assert_eq!(state.balance(&item()), before, "{row}: nothing moved");
            }
            (got, want) => panic!("{row}: expected {want:?}, got {got:?}"),
        }
    }
}

/// A refusal names each line over its item's limit, and only those.
#[test]
fn a_limit_refusal_names_every_line_over_its_limit() {
    let mut st = setup(Setup::None);
    run(&mut st, &limit("l1", "apple", Some(2)).unwrap(), t(1)).unwrap();
    let r = run(&mut st, &reserve_lines(&[("apple", 3)]), t(2)).unwrap_err();
    assert_eq!(
        r.details(),
        serde_json::json!({"lines": [{"sku": "apple", "location": "default", "requested": 3, "max_per_order": 2}]})
    );
    assert_eq!(st.settings(&item()).max_per_order, Some(2));
}

/// A limit's event is the item's only change; bad values are named.
#[test]
fn a_limit_records_one_event_and_refuses_bad_values() {
    let mut st = LedgerState::default();
    let d = run(&mut st, &limit("l1", "apple", None).unwrap(), t(1)).unwrap();
    assert_eq!(
        d.events[0].event,
        Event::OrderLimitSet(OrderLimitSet {
            sku: item().sku,
            location: item().location,
            max_per_order: None,
        })
    );
    assert_eq!(st.balance(&item()), Balance::default());
    let too_big = i64::from(crate::limits::MAX_QUANTITY) + 1;
    for bad in [-1, too_big] {
        let r = limit("l2", "apple", Some(bad)).unwrap_err();
        assert_eq!(r.details()["field"], "max_per_order", "{bad}");
    }
}

fn point(id: &str, sku: &str, p: Option<i64>) -> Command {
    crate::domain::ReorderPointRequest {
        reorder_point_id: id.into(),
        sku: sku.into(),
        location: None,
        reorder_point: p,
    }
    .validate()
    .unwrap()
}

fn adjust_apples(id: &str, delta: i64) -> Command {
    AdjustRequest {
        adjustment_id: id.into(),
        sku: "apple".into(),
        location: None,
        delta,
        reason: "count".into(),
    }
    .validate()
    .unwrap()
}

/// The reorder point and low-stock rows of the outcome table (issue 27):
/// apples received 10, `r1` holds 2 (8 available); each row sets a point
/// first (`pt0`), then runs its command; the events it appends, by type.
#[rustfmt::skip]
fn alert_cases() -> Vec<(&'static str, Option<i64>, Command, Vec<EventType>)> {
    use EventType::*;
    let reserve3 = || reserve_lines(&[("apple", 3)]);
    vec![
        ("point | above available -> set, low", None, point("p9", "apple", Some(9)), vec![ReorderPointSet, StockLow]),
        ("point | at available -> set, not low", None, point("p9", "apple", Some(8)), vec![ReorderPointSet]),
        ("point | same id, same point -> replay", Some(5), point("pt0", "apple", Some(5)), vec![]),
        ("point | removed while low -> set, recovered", Some(9), point("p9", "apple", None), vec![ReorderPointSet, StockRecovered]),
        ("point | lowered under available while low -> set, recovered", Some(9), point("p9", "apple", Some(8)), vec![ReorderPointSet, StockRecovered]),
        ("point | raised while low -> set, still low", Some(9), point("p9", "apple", Some(10)), vec![ReorderPointSet]),
        ("reserve | falls below the point -> reserved, low", Some(6), reserve3(), vec![ReservationCreated, StockLow]),
        ("reserve | stays at the point -> reserved", Some(5), reserve3(), vec![ReservationCreated]),
        ("reserve | already low -> reserved, no new alert", Some(9), reserve3(), vec![ReservationCreated]),
        ("reserve | no point -> reserved", None, reserve3(), vec![ReservationCreated]),
        ("release | back at the point -> released, recovered", Some(10), command::release("r1", None).unwrap(), vec![ReservationReleased, StockRecovered]),
        ("confirm | available unchanged -> confirmed", Some(9), command::confirm("r1").unwrap(), vec![ReservationConfirmed]),
        ("expire | back at the point -> expired, recovered", Some(10), command::expire("r1").unwrap(), vec![ReservationExpired, StockRecovered]),
        ("receive | back above the point -> received, recovered", Some(9), receive("in-9", 5), vec![StockReceived, StockRecovered]),
        ("adjust | falls below the point -> adjusted, low", Some(5), adjust_apples("a1", -4), vec![StockAdjusted, StockLow]),
        ("count | falls below the point -> counted, low", Some(5), count("c1", 4), vec![StockCounted, StockLow]),
        ("reserve | refused -> nothing", Some(1), reserve_lines(&[("apple", 9)]), vec![]),
    ]
}

#[test]
fn alert_table() {
    for (row, first, cmd, want) in alert_cases() {
        let mut state = setup(Setup::Reserved);
        if let Some(p) = first {
            run(&mut state, &point("pt0", "apple", Some(p)), t(1)).unwrap();
        }
        // The expiry row runs after its hold is due.
        let at = if matches!(cmd, Command::Expire(_)) {
            61
        } else {
            5
        };
        let got: Vec<EventType> = match run(&mut state, &cmd, t(at)) {
            Ok(d) => d.events.iter().map(|e| e.event.event_type()).collect(),
            Err(_) => Vec::new(),
        };
        assert_eq!(got, want, "{row}");
    }
}

/// An alert names the item, what is available and the point, in a stream
/// of its own named after the command; crossings within one batch are
/// written once each.
#[test]
fn an_alert_says_what_crossed_and_is_written_once_per_crossing() {
    let mut st = setup(Setup::Reserved); // 8 available
    run(&mut st, &point("p1", "apple", Some(6)), t(1)).unwrap();
    let id = Uuid::new_v4();
    let d = decide(&st, &reserve_lines(&[("apple", 3)]), id, t(2)).unwrap();
    apply(&mut st, &d, id, t(2));
    let alert = &d.events[1];
    assert_eq!(alert.stream.id(), format!("{id}-1"));
    assert_eq!(alert.stream.kind(), crate::domain::StreamKind::Alert);
    assert_eq!(
        alert.event,
        Event::StockLow(StockLow {
            sku: item().sku,
            location: item().location,
            available: 5,
            reorder_point: 6
        })
    );
    // Lower still: already low, no second alert; back up: one recovery.
    let more = run(&mut st, &adjust_apples("a1", -1), t(3)).unwrap();
    assert_eq!(more.events.len(), 1);
    let back = run(&mut st, &receive("in-2", 10), t(4)).unwrap();
    assert!(matches!(
        back.events[1].event,
        Event::StockRecovered(StockRecovered {
            available: 14,
            reorder_point: Some(6),
            ..
        })
    ));
}

/// A transfer moves two items: the source may fall low while the
/// destination recovers, each with its own alert.
#[test]
fn a_transfer_alerts_on_both_ends() {
    let mut st = setup(Setup::None); // 10 apples at default
    run(&mut st, &point("p1", "apple", Some(8)), t(1)).unwrap();
    let north = crate::domain::ReorderPointRequest {
        reorder_point_id: "p2".into(),
        sku: "apple".into(),
        location: Some("north".into()),
        reorder_point: Some(1),
    }
    .validate()
    .unwrap();
    let d = run(&mut st, &north, t(2)).unwrap();
    assert_eq!(
        d.events[1].event.event_type(),
        EventType::StockLow,
        "north has none"
    );
    let moved = run(&mut st, &transfer("t1", "default", "north", 3), t(3)).unwrap();
    let types: Vec<EventType> = moved.events.iter().map(|e| e.event.event_type()).collect();
    assert_eq!(
        types,
        [
            EventType::StockTransferred,
            EventType::StockLow,
            EventType::StockRecovered
        ]
    );
}

/// A crossing a writer failed to record (an older release's, say) is
/// written by the next command on the item: crossings are decided against
/// the last alert, which the item's row keeps, not against figures alone.
#[test]
fn a_missing_alert_is_written_by_the_next_command_on_the_item() {
    let mut st = setup(Setup::Reserved); // 8 available
    st.settings.insert(
        item(),
        crate::domain::ItemSettings {
            reorder_point: Some(9),
            ..Default::default()
        },
    );
    let d = run(&mut st, &reserve_lines(&[("apple", 1)]), t(2)).unwrap();
    assert_eq!(d.events[1].event.event_type(), EventType::StockLow);
    assert!(st.settings(&item()).alerted_low);
}
