//! The outcome table of expected receipts (docs/domain.md, "Expected
//! receipts"), one case per row, decided by the pure core; and the fold
//! refusing streams the core never writes.

use crate::domain::event::{
    ExpectedReceiptCancelled, ExpectedReceiptChanged, ExpectedReceiptDelivered, ReceiptExpected,
};
use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use uuid::Uuid;

use super::*;
use crate::domain::command::{
    CancelExpected, ChangeExpectedRequest, Command, ExpectRequest, ReceiveRequest,
};
use crate::domain::decide::{apply, decide, Decision, LedgerState, Outcome};
use crate::domain::{EventType, Rejection, RejectionCode};
use crate::limits::MAX_EXPECTED_EVENTS;

fn now() -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000, 0).unwrap()
}

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2027, 1, d).unwrap()
}

fn expect(id: &str, qty: i64, on: &str) -> Command {
    ExpectRequest {
        expected_id: id.into(),
        sku: "jacket".into(),
        location: None,
        quantity: qty,
        expected_on: on.into(),
    }
    .validate()
    .unwrap()
}

fn change(id: &str, change_id: &str, qty: i64, on: &str) -> Command {
    ChangeExpectedRequest {
        change_id: change_id.into(),
        quantity: qty,
        expected_on: on.into(),
    }
    .validate(id)
    .unwrap()
}

fn receive(receipt: &str, sku: &str, qty: i64, against: &str) -> Command {
    ReceiveRequest {
        receipt_id: receipt.into(),
        sku: sku.into(),
        location: None,
        quantity: qty,
        against: Some(against.into()),
    }
    .validate()
    .unwrap()
}

fn cancel(id: &str) -> Command {
    CancelExpected::validate(id).unwrap()
}

/// Runs a command and folds it in, as the store would after commit.
fn run(state: &mut LedgerState, cmd: &Command) -> Result<Decision, Rejection> {
    let id = Uuid::new_v4();
    let d = decide(state, cmd, id, now())?;
    apply(state, &d, id, now());
    Ok(d)
}

/// Where the expected receipt `po1` (10 jackets on 2027-01-10) stands
/// before the command of a row.
#[derive(Clone, Copy, Debug)]
enum Setup {
    Nothing,
    Open,
    /// 4 of 10 delivered by `r1`.
    PartlyDelivered,
    /// Changed under `c1` to 12 on 2027-01-11.
    Changed,
    Cancelled,
    /// Changed under `c1`, then cancelled.
    ChangedThenCancelled,
    /// 4 delivered by `r1`, then cancelled.
    DeliveredThenCancelled,
}

fn setup(s: Setup) -> LedgerState {
    let mut st = LedgerState::default();
    let then: &[Command] = match s {
        Setup::Nothing => &[],
        Setup::Open => &[expect("po1", 10, "2027-01-10")],
        Setup::PartlyDelivered => &[
            expect("po1", 10, "2027-01-10"),
            receive("r1", "jacket", 4, "po1"),
        ],
        Setup::Changed => &[
            expect("po1", 10, "2027-01-10"),
            change("po1", "c1", 12, "2027-01-11"),
        ],
        Setup::Cancelled => &[expect("po1", 10, "2027-01-10"), cancel("po1")],
        Setup::ChangedThenCancelled => &[
            expect("po1", 10, "2027-01-10"),
            change("po1", "c1", 12, "2027-01-11"),
            cancel("po1"),
        ],
        Setup::DeliveredThenCancelled => &[
            expect("po1", 10, "2027-01-10"),
            receive("r1", "jacket", 4, "po1"),
            cancel("po1"),
        ],
    };
    for c in then {
        run(&mut st, c).unwrap();
    }
    st
}

/// What a row expects: the types appended and the units still expected
/// after, or a rejection's code (and nothing written).
#[derive(Debug)]
enum Want {
    Appends(Vec<EventType>, u32),
    Replays(u32),
    Refused(RejectionCode),
}

/// Every row of the table, by command.
fn rows() -> Vec<(&'static str, Setup, Command, Want)> {
    [expect_rows(), change_rows(), receive_rows(), cancel_rows()]
        .into_iter()
        .flatten()
        .collect()
}

fn expect_rows() -> Vec<(&'static str, Setup, Command, Want)> {
    use EventType::*;
    use Setup::*;
    use Want::*;
    vec![
        (
            "expect: recorded",
            Nothing,
            expect("po1", 10, "2027-01-10"),
            Appends(vec![ReceiptExpected], 10),
        ),
        (
            "expect: a date in the past is late, not refused",
            Nothing,
            expect("po1", 10, "2001-01-01"),
            Appends(vec![ReceiptExpected], 10),
        ),
        (
            "expect: a retry",
            Open,
            expect("po1", 10, "2027-01-10"),
            Replays(10),
        ),
        (
            "expect: the id with other figures",
            Open,
            expect("po1", 9, "2027-01-10"),
            Refused(RejectionCode::IdempotencyConflict),
        ),
    ]
}

fn change_rows() -> Vec<(&'static str, Setup, Command, Want)> {
    use EventType::*;
    use Setup::*;
    use Want::*;
    vec![
        (
            "change: more",
            Open,
            change("po1", "c2", 15, "2027-01-12"),
            Appends(vec![ExpectedReceiptChanged], 15),
        ),
        (
            "change: delivered units count towards it",
            PartlyDelivered,
            change("po1", "c2", 6, "2027-01-12"),
            Appends(vec![ExpectedReceiptChanged], 2),
        ),
        (
            "change: fewer than delivered leaves nothing outstanding",
            PartlyDelivered,
            change("po1", "c2", 3, "2027-01-12"),
            Appends(vec![ExpectedReceiptChanged], 0),
        ),
        (
            "change: a retry",
            Changed,
            change("po1", "c1", 12, "2027-01-11"),
            Replays(12),
        ),
        (
            "change: the id with other figures",
            Changed,
            change("po1", "c1", 13, "2027-01-11"),
            Refused(RejectionCode::IdempotencyConflict),
        ),
        (
            "change: unknown",
            Nothing,
            change("po1", "c1", 12, "2027-01-11"),
            Refused(RejectionCode::NotFound),
        ),
        (
            "change: a retry after the cancellation",
            ChangedThenCancelled,
            change("po1", "c1", 12, "2027-01-11"),
            Replays(0),
        ),
        (
            "change: cancelled",
            Cancelled,
            change("po1", "c2", 12, "2027-01-11"),
            Refused(RejectionCode::ExpectedReceiptCancelled),
        ),
    ]
}

fn receive_rows() -> Vec<(&'static str, Setup, Command, Want)> {
    use EventType::*;
    use Setup::*;
    use Want::*;
    vec![
        (
            "receive against: short",
            Open,
            receive("r2", "jacket", 4, "po1"),
            Appends(vec![StockReceived, ExpectedReceiptDelivered], 6),
        ),
        (
            "receive against: the rest",
            PartlyDelivered,
            receive("r2", "jacket", 6, "po1"),
            Appends(vec![StockReceived, ExpectedReceiptDelivered], 0),
        ),
        (
            "receive against: over",
            PartlyDelivered,
            receive("r2", "jacket", 9, "po1"),
            Appends(vec![StockReceived, ExpectedReceiptDelivered], 0),
        ),
        (
            "receive against: after a change",
            Changed,
            receive("r2", "jacket", 5, "po1"),
            Appends(vec![StockReceived, ExpectedReceiptDelivered], 7),
        ),
        (
            "receive against: a retry",
            PartlyDelivered,
            receive("r1", "jacket", 4, "po1"),
            Replays(6),
        ),
        (
            "receive against: a retry after the cancellation",
            DeliveredThenCancelled,
            receive("r1", "jacket", 4, "po1"),
            Replays(0),
        ),
        (
            "receive against: unknown",
            Nothing,
            receive("r2", "jacket", 4, "po1"),
            Refused(RejectionCode::NotFound),
        ),
        (
            "receive against: another item",
            Open,
            receive("r2", "scarf", 4, "po1"),
            Refused(RejectionCode::ExpectedItemMismatch),
        ),
        (
            "receive against: cancelled",
            Cancelled,
            receive("r2", "jacket", 4, "po1"),
            Refused(RejectionCode::ExpectedReceiptCancelled),
        ),
    ]
}

fn cancel_rows() -> Vec<(&'static str, Setup, Command, Want)> {
    use EventType::*;
    use Setup::*;
    use Want::*;
    vec![
        (
            "cancel: open",
            PartlyDelivered,
            cancel("po1"),
            Appends(vec![ExpectedReceiptCancelled], 0),
        ),
        (
            "cancel: already cancelled",
            Cancelled,
            cancel("po1"),
            Replays(0),
        ),
        (
            "cancel: unknown",
            Nothing,
            cancel("po1"),
            Refused(RejectionCode::NotFound),
        ),
    ]
}

/// The expected receipt `po1` as the state holds it.
fn po1(st: &LedgerState) -> &Expectation {
    st.expectations
        .get(&ExpectedId::parse("id", "po1").unwrap())
        .expect("po1")
}

#[test]
fn the_expected_receipts_table() {
    for (name, s, cmd, want) in rows() {
        let mut st = setup(s);
        let got = run(&mut st, &cmd);
        match (want, got) {
            (Want::Appends(types, outstanding), Ok(d)) => {
                let appended: Vec<EventType> =
                    d.events.iter().map(|e| e.event.event_type()).collect();
                assert_eq!(appended, types, "{name}");
                assert_eq!(po1(&st).outstanding(), outstanding, "{name}");
                assert!(!d.outcome.replayed(), "{name}");
            }
            (Want::Replays(outstanding), Ok(d)) => {
                assert!(d.events.is_empty(), "{name}: {d:?}");
                assert!(d.outcome.replayed(), "{name}");
                assert_eq!(po1(&st).outstanding(), outstanding, "{name}");
            }
            (Want::Refused(code), Err(r)) => {
                assert_eq!(r.code(), code, "{name}: {r}");
            }
            (want, got) => panic!("{name}: wanted {want:?}, got {got:?}"),
        }
    }
}

/// A receipt's answer names what it was delivered against, and the
/// expected receipt's answer what a command left.
#[test]
fn answers_say_where_the_expected_receipt_stands() {
    let mut st = setup(Setup::Open);
    let d = run(&mut st, &receive("r2", "jacket", 4, "po1")).unwrap();
    assert!(matches!(
        d.outcome,
        Outcome::Received { against: Some(ref a), .. } if a == "po1"
    ));
    let d = run(&mut st, &change("po1", "c1", 12, "2027-01-11")).unwrap();
    let Outcome::Expected { view, .. } = d.outcome else {
        panic!("{:?}", d.outcome)
    };
    assert_eq!(
        (
            view.quantity,
            view.delivered,
            view.outstanding,
            view.expected_on
        ),
        (12, 4, 8, day(11))
    );
    let d = run(&mut st, &cancel("po1")).unwrap();
    let Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled { withdrawn, .. }) =
        d.events[0].event
    else {
        panic!("{:?}", d.events)
    };
    assert_eq!(withdrawn, 8);
}

/// Two deliveries in one batch take consecutive places in the stream.
#[test]
fn deliveries_decided_one_after_another_take_the_next_places() {
    let mut st = setup(Setup::Open);
    let a = run(&mut st, &receive("r2", "jacket", 3, "po1")).unwrap();
    let b = run(&mut st, &receive("r3", "jacket", 3, "po1")).unwrap();
    assert_eq!((a.events[1].seq, b.events[1].seq), (2, 3));
    assert_eq!(po1(&st).outstanding(), 4);
}

/// Changes and deliveries stop one place short of the last, which is kept
/// for the cancellation.
#[test]
fn the_last_place_is_kept_for_the_cancellation() {
    let mut st = setup(Setup::Open);
    for i in 2..MAX_EXPECTED_EVENTS {
        let c = change("po1", &format!("c{i}"), 10 + i64::from(i), "2027-01-10");
        run(&mut st, &c).unwrap();
    }
    let full = run(&mut st, &change("po1", "one-more", 5, "2027-01-10"));
    assert_eq!(full.unwrap_err().code(), RejectionCode::ExpectedReceiptFull);
    let r = run(&mut st, &receive("r9", "jacket", 1, "po1"));
    assert_eq!(r.unwrap_err().code(), RejectionCode::ExpectedReceiptFull);
    let d = run(&mut st, &cancel("po1")).unwrap();
    assert_eq!(d.events[0].seq, MAX_EXPECTED_EVENTS);
}

fn fold_all(events: &[Event]) -> Result<Option<Expectation>, ExpectationViolation> {
    let id = ExpectedId::parse("id", "po1").unwrap();
    Expectation::fold_all(
        &id,
        events
            .iter()
            .enumerate()
            .map(|(i, e)| (i as u32 + 1, e, Uuid::nil(), None)),
    )
}

fn recorded() -> Event {
    Event::ReceiptExpected(ReceiptExpected {
        sku: crate::domain::Sku::parse("sku", "jacket").unwrap(),
        location: crate::domain::Location::parse("location", "default").unwrap(),
        quantity: 10,
        expected_on: day(10),
    })
}

fn delivered(qty: u32, outstanding: u32) -> Event {
    Event::ExpectedReceiptDelivered(ExpectedReceiptDelivered {
        receipt_id: crate::domain::ReceiptId::parse("id", "r1").unwrap(),
        sku: crate::domain::Sku::parse("sku", "jacket").unwrap(),
        location: crate::domain::Location::parse("location", "default").unwrap(),
        quantity: qty,
        expected_on: day(10),
        outstanding,
    })
}

/// A change to `qty` on 2027-01-12, stating `outstanding`.
fn changed(id: &str, qty: u32, outstanding: u32) -> Event {
    Event::ExpectedReceiptChanged(ExpectedReceiptChanged {
        change_id: ChangeId::parse("id", id).unwrap(),
        sku: crate::domain::Sku::parse("sku", "jacket").unwrap(),
        location: crate::domain::Location::parse("location", "default").unwrap(),
        quantity: qty,
        expected_on: day(12),
        outstanding,
    })
}

fn cancelled(withdrawn: u32) -> Event {
    Event::ExpectedReceiptCancelled(ExpectedReceiptCancelled {
        sku: crate::domain::Sku::parse("sku", "jacket").unwrap(),
        location: crate::domain::Location::parse("location", "default").unwrap(),
        expected_on: day(10),
        withdrawn,
    })
}

/// Each event states where the expected receipt stands after it; a
/// statement the events before it do not bear out is named.
#[test]
fn the_fold_refuses_streams_the_core_never_writes() {
    assert!(fold_all(&[recorded(), delivered(4, 6), cancelled(6)]).is_ok());
    let wrong: &[(&str, Vec<Event>)] = &[
        ("nothing recorded", vec![delivered(4, 6)]),
        ("recorded twice", vec![recorded(), recorded()]),
        (
            "an outstanding the deliveries do not leave",
            vec![recorded(), delivered(4, 5)],
        ),
        (
            "a withdrawal of other than the rest",
            vec![recorded(), delivered(4, 6), cancelled(5)],
        ),
        (
            "anything after the cancellation",
            vec![recorded(), cancelled(10), delivered(4, 0)],
        ),
        (
            "the same receipt twice",
            vec![recorded(), delivered(4, 6), delivered(4, 2)],
        ),
        (
            "a change whose outstanding the deliveries do not leave",
            vec![recorded(), delivered(4, 6), changed("c1", 12, 7)],
        ),
        ("a change to nothing", vec![recorded(), changed("c1", 0, 0)]),
        (
            "the same change id twice",
            vec![recorded(), changed("c1", 12, 12), changed("c1", 11, 11)],
        ),
        (
            "a delivery of another date than the stream's",
            vec![recorded(), changed("c1", 12, 12), delivered(4, 8)],
        ),
    ];
    for (name, events) in wrong {
        assert!(fold_all(events).is_err(), "{name}");
    }
    // A delivery at the last place, which is kept for the cancellation.
    let mut full = vec![recorded()];
    full.extend((2..MAX_EXPECTED_EVENTS).map(|i| changed(&format!("c{i}"), 10, 10)));
    assert!(fold_all(&full).is_ok());
    full.push(delivered(1, 9));
    assert!(fold_all(&full).is_err(), "a delivery at the last place");
}
