//! Backorders and pre-orders, decided by the pure core: one case per row of
//! the outcome table in `docs/domain.md` ("Backorders and pre-orders"), then
//! first come, first served under every order of fills, and the fold
//! refusing streams the core never writes.

use crate::domain::event::{
    BackorderDropped, BackorderFilled, BackorderPlaced, ReservationConfirmed, ReservationCreated,
};
use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use uuid::Uuid;

use crate::domain::backorder::{Backlog, Waiting};
use crate::domain::command::{
    self, ChangeExpectedRequest, Command, ConfirmLinesRequest, ExpectRequest, ExtendRequest,
    LineRequest, ReceiveRequest, ReleaseLinesRequest, ReserveRequest,
};
use crate::domain::decide::{apply, decide, Decision, LedgerState, Outcome};
use crate::domain::event::{DropReason, Event, EventType};
use crate::domain::ids::{Item, Location, OrderId, ReservationId, Sku};
use crate::domain::reservation::{Reservation, StreamViolation};
use crate::domain::{Line, Rejection, RejectionCode};
use crate::limits::{MAX_RESERVATION_EVENTS, MAX_WAITING_PER_ITEM};

fn t(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
}

fn item() -> Item {
    Item {
        sku: Sku::parse("sku", "apple").unwrap(),
        location: Location::parse_or_default("location", None).unwrap(),
    }
}

/// A reserve of `qty` apples for order `o-<id>`, waiting for stock expected
/// by `by` if `wait` (any date for `None`).
fn reserve(id: &str, qty: i64, wait: bool, by: Option<&str>) -> Command {
    ReserveRequest {
        reservation_id: id.into(),
        order_id: format!("o-{id}"),
        lines: vec![LineRequest {
            sku: "apple".into(),
            location: None,
            quantity: qty,
        }],
        ttl_seconds: Some(3600),
        backorder: wait,
        latest_arrival: by.map(str::to_owned),
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

/// Ten apples expected on 2027-01-10 under `po1`.
fn expect_ten() -> Command {
    ExpectRequest {
        expected_id: "po1".into(),
        sku: "apple".into(),
        location: None,
        quantity: 10,
        expected_on: "2027-01-10".into(),
    }
    .validate()
    .unwrap()
}

fn cut_to(qty: i64) -> Command {
    ChangeExpectedRequest {
        change_id: format!("cut-{qty}"),
        quantity: qty,
        expected_on: "2027-01-10".into(),
    }
    .validate("po1")
    .unwrap()
}

fn adjust(delta: i64) -> Command {
    command::AdjustRequest {
        adjustment_id: format!("adj{delta}"),
        sku: "apple".into(),
        location: None,
        delta,
        reason: "lost".into(),
    }
    .validate()
    .unwrap()
}

fn count(counted: i64) -> Command {
    command::CountRequest {
        count_id: format!("count{counted}"),
        sku: "apple".into(),
        location: None,
        counted,
    }
    .validate()
    .unwrap()
}

fn cancel_po() -> Command {
    command::CancelExpected::validate("po1").unwrap()
}

fn fill(id: &str) -> Command {
    command::fill(id).unwrap()
}

fn confirm_lines(id: &str, qty: i64) -> Command {
    ConfirmLinesRequest {
        confirmation_id: "c1".into(),
        lines: vec![LineRequest {
            sku: "apple".into(),
            location: None,
            quantity: qty,
        }],
    }
    .validate(id)
    .unwrap()
}

fn release_lines(id: &str, qty: i64) -> Command {
    ReleaseLinesRequest {
        release_id: "x1".into(),
        lines: vec![LineRequest {
            sku: "apple".into(),
            location: None,
            quantity: qty,
        }],
        reason: None,
    }
    .validate(id)
    .unwrap()
}

fn run(state: &mut LedgerState, cmd: &Command, at: DateTime<Utc>) -> Result<Decision, Rejection> {
    let id = Uuid::new_v4();
    let d = decide(state, cmd, id, at)?;
    apply(state, &d, id, at);
    Ok(d)
}

/// Where a row starts.
#[derive(Clone, Copy, Debug)]
enum Setup {
    /// 3 apples on hand, 10 expected on 2027-01-10.
    Expecting,
    /// As `Expecting`, and `r1` reserved 5: 3 held, 2 waiting.
    Waiting,
    /// As `Waiting`, and `r2` reserved 4, all waiting.
    TwoWaiting,
}

fn setup(s: Setup) -> LedgerState {
    let mut st = LedgerState::default();
    run(&mut st, &receive("in-1", 3), t(0)).unwrap();
    run(&mut st, &expect_ten(), t(0)).unwrap();
    if matches!(s, Setup::Waiting | Setup::TwoWaiting) {
        run(&mut st, &reserve("r1", 5, true, None), t(0)).unwrap();
    }
    if matches!(s, Setup::TwoWaiting) {
        run(&mut st, &reserve("r2", 4, true, None), t(0)).unwrap();
    }
    st
}

/// What a row wants: the event types written and the apples' figures after
/// (on hand, reserved, backordered), or a rejection.
enum Want {
    Wrote(&'static [EventType], (i64, i64, i64)),
    Nothing,
    Refused(RejectionCode),
}

use EventType::{
    BackorderDropped as Dropped, BackorderFilled as Filled, BackorderPlaced as Placed,
    ReservationConfirmed as Confirmed, ReservationCreated as Created,
    ReservationExpired as Expired, ReservationLinesConfirmed as LinesConfirmed,
    ReservationLinesReleased as LinesReleased, ReservationReleased as Released,
};

/// The reserve's rows: what it holds, what it lets wait, what it refuses.
fn reserve_rows() -> Vec<(&'static str, Setup, Vec<Command>, Want)> {
    use Setup::*;
    use Want::*;
    vec![
        (
            "without consent, more than on hand is refused",
            Expecting,
            vec![reserve("r9", 5, false, None)],
            Refused(RejectionCode::InsufficientStock),
        ),
        (
            "with consent, what is on hand is held and nothing waits",
            Expecting,
            vec![reserve("r9", 3, true, None)],
            Wrote(&[Created], (3, 3, 0)),
        ),
        (
            "with consent, the rest waits for what is expected",
            Expecting,
            vec![reserve("r9", 5, true, None)],
            Wrote(&[Created, Placed], (3, 3, 2)),
        ),
        (
            "a pre-order: nothing on hand, all of it waits",
            Waiting,
            vec![reserve("r9", 4, true, None)],
            Wrote(&[Created, Placed], (3, 3, 6)),
        ),
        (
            "more than on hand and expected together is refused",
            Expecting,
            vec![reserve("r9", 14, true, None)],
            Refused(RejectionCode::InsufficientStock),
        ),
        (
            "a latest arrival before the expected date counts nothing expected",
            Expecting,
            vec![reserve("r9", 5, true, Some("2027-01-09"))],
            Refused(RejectionCode::InsufficientStock),
        ),
        (
            "a latest arrival on the expected date counts it",
            Expecting,
            vec![reserve("r9", 5, true, Some("2027-01-10"))],
            Wrote(&[Created, Placed], (3, 3, 2)),
        ),
        (
            "what waits is promised: a second backorder gets the rest only",
            TwoWaiting,
            vec![reserve("r9", 5, true, None)],
            Refused(RejectionCode::InsufficientStock),
        ),
        (
            "stock that arrives is the queue's: a plain reserve cannot take it",
            Waiting,
            vec![receive("in-2", 2), reserve("r9", 1, false, None)],
            Refused(RejectionCode::InsufficientStock),
        ),
        (
            "stock beyond what waits is anyone's",
            Waiting,
            vec![receive("in-2", 3), reserve("r9", 1, false, None)],
            Wrote(&[Created], (6, 4, 2)),
        ),
    ]
}

/// The fill's rows: first come, first served, and what cannot come.
fn fill_rows() -> Vec<(&'static str, Setup, Vec<Command>, Want)> {
    use Setup::*;
    use Want::*;
    vec![
        (
            "nothing arrived: nothing to fill",
            Waiting,
            vec![fill("r1")],
            Nothing,
        ),
        (
            "a delivery fills the head of the queue",
            TwoWaiting,
            vec![receive("in-2", 3), fill("r1")],
            Wrote(&[Filled], (6, 5, 4)),
        ),
        (
            "the second in line gets what the first leaves",
            TwoWaiting,
            vec![receive("in-2", 3), fill("r1"), fill("r2")],
            Wrote(&[Filled], (6, 6, 3)),
        ),
        (
            "the second in line filled first still leaves the first its units",
            TwoWaiting,
            vec![receive("in-2", 3), fill("r2")],
            Wrote(&[Filled], (6, 4, 5)),
        ),
        (
            "the second in line gets nothing while the first takes it all",
            TwoWaiting,
            vec![receive("in-2", 2), fill("r2")],
            Nothing,
        ),
        (
            "a cut leaves the last placed unfillable: dropped, by name",
            TwoWaiting,
            vec![cut_to(3), fill("r2")],
            Wrote(&[Dropped], (3, 3, 3)),
        ),
        (
            "a cut that still covers the first leaves it waiting",
            TwoWaiting,
            vec![cut_to(3), fill("r1")],
            Nothing,
        ),
        (
            "a cancellation leaves both unfillable",
            TwoWaiting,
            vec![cancel_po(), fill("r1"), fill("r2")],
            Wrote(&[Dropped, Released], (3, 3, 0)),
        ),
        (
            "a fill and a drop together: some came, the rest will not",
            TwoWaiting,
            vec![cancel_po(), receive("in-2", 1), fill("r1")],
            Wrote(&[Filled, Dropped], (4, 4, 4)),
        ),
    ]
}

/// Adjustments and counts against stock that waiting orders claim: the
/// same answer before the fill is written as after it.
fn claim_rows() -> Vec<(&'static str, Setup, Vec<Command>, Want)> {
    use Setup::*;
    use Want::*;
    vec![
        (
            "stock that arrived for a waiting order cannot be adjusted away, filled or not",
            Waiting,
            vec![receive("in-2", 2), adjust(-1)],
            Refused(RejectionCode::InsufficientStock),
        ),
        (
            "the same after the fill",
            Waiting,
            vec![receive("in-2", 2), fill("r1"), adjust(-1)],
            Refused(RejectionCode::InsufficientStock),
        ),
        (
            "what nothing holds or claims can be adjusted away",
            Waiting,
            vec![receive("in-2", 3), adjust(-1)],
            Wrote(&[EventType::StockAdjusted], (5, 3, 2)),
        ),
        (
            "a count cannot find fewer than is held and claimed",
            Waiting,
            vec![receive("in-2", 2), count(4)],
            Refused(RejectionCode::InsufficientStock),
        ),
    ]
}

/// The other commands on a reservation whose units wait.
fn step_rows() -> Vec<(&'static str, Setup, Vec<Command>, Want)> {
    use Setup::*;
    use Want::*;
    vec![
        (
            "a confirm while units must still wait is refused",
            Waiting,
            vec![command::confirm("r1").unwrap()],
            Refused(RejectionCode::BackorderWaiting),
        ),
        (
            "a confirm once stock is there fills, then confirms everything",
            Waiting,
            vec![receive("in-2", 2), command::confirm("r1").unwrap()],
            Wrote(&[Filled, Confirmed], (0, 0, 0)),
        ),
        (
            "a confirm of the second in line waits for the first's turn",
            TwoWaiting,
            vec![receive("in-2", 4), command::confirm("r2").unwrap()],
            Refused(RejectionCode::BackorderWaiting),
        ),
        (
            "a release drops what waits, then settles",
            Waiting,
            vec![command::release("r1", None).unwrap()],
            Wrote(&[Dropped, Released], (3, 0, 0)),
        ),
        (
            "an expiry drops what waits, then settles",
            Waiting,
            vec![command::expire("r1").unwrap()],
            Nothing,
        ),
        (
            "part of what is held can be confirmed",
            Waiting,
            vec![confirm_lines("r1", 2)],
            Wrote(&[LinesConfirmed], (1, 1, 2)),
        ),
        (
            "all that is held can be confirmed: the order stays open",
            Waiting,
            vec![confirm_lines("r1", 3)],
            Wrote(&[LinesConfirmed], (0, 0, 2)),
        ),
        (
            "waiting units cannot be confirmed",
            Waiting,
            vec![confirm_lines("r1", 4)],
            Refused(RejectionCode::ExceedsReserved),
        ),
        (
            "all that is held can be released: the order stays open",
            Waiting,
            vec![release_lines("r1", 3)],
            Wrote(&[LinesReleased], (3, 0, 2)),
        ),
    ]
}

#[test]
fn the_backorders_table() {
    let rows = reserve_rows()
        .into_iter()
        .chain(fill_rows())
        .chain(claim_rows())
        .chain(step_rows());
    for (name, s, commands, want) in rows {
        let mut st = setup(s);
        let (last, before) = commands.split_last().unwrap();
        for c in before {
            run(&mut st, c, t(1)).unwrap_or_else(|e| panic!("{name}: setup: {e}"));
        }
        let got = run(&mut st, last, t(2));
        let b = st.balance(&item());
        match (want, got) {
            (Want::Wrote(types, figures), Ok(d)) => {
                let written: Vec<EventType> = d
                    .events
                    .iter()
                    .map(|e| e.event.event_type())
                    .filter(|t| !matches!(t, EventType::StockLow | EventType::StockRecovered))
                    .collect();
                assert_eq!(written, types, "{name}");
                assert_eq!((b.on_hand, b.reserved, b.backordered), figures, "{name}");
            }
            (Want::Nothing, Ok(d)) => assert!(d.events.is_empty(), "{name}: {:?}", d.events),
            (Want::Refused(code), Err(e)) => assert_eq!(e.code(), code, "{name}: {e}"),
            (_, got) => panic!("{name}: got {got:?}"),
        }
    }
}

/// An expiry of a reservation whose units wait: due only once its hold
/// ran out, and then it drops what waits before it settles.
#[test]
fn an_expiry_drops_what_waits_then_settles() {
    let mut st = setup(Setup::Waiting);
    let d = run(&mut st, &command::expire("r1").unwrap(), t(3601)).unwrap();
    let types: Vec<_> = d.events.iter().map(|e| e.event.event_type()).collect();
    assert_eq!(&types[..2], &[Dropped, Expired]);
    let Event::BackorderDropped(BackorderDropped { reason, .. }) = &d.events[0].event else {
        panic!("a drop first")
    };
    assert_eq!(*reason, DropReason::Expired);
    let b = st.balance(&item());
    assert_eq!((b.reserved, b.backordered), (0, 0));
    assert!(st.backlog(&item()).queue.is_empty());
}

/// The answer says which units are held and which wait, and the queue on
/// the item holds the reservations in placing order.
#[test]
fn the_answer_and_the_queue_say_what_waits() {
    let mut st = setup(Setup::TwoWaiting);
    let view = match run(&mut st, &fill("r1"), t(1)) {
        Ok(Decision {
            outcome: Outcome::NotDue { .. },
            ..
        }) => None,
        other => Some(other),
    };
    assert!(view.is_none(), "nothing to fill yet");
    let queue: Vec<(String, u32)> = st
        .backlog(&item())
        .queue
        .iter()
        .map(|w| (w.reservation_id.to_string(), w.units))
        .collect();
    assert_eq!(queue, vec![("r1".into(), 2), ("r2".into(), 4)]);
    run(&mut st, &receive("in-2", 5), t(1)).unwrap();
    let Outcome::Reservation { view, .. } = run(&mut st, &fill("r2"), t(2)).unwrap().outcome else {
        panic!("a reservation")
    };
    let line = &view.lines[0];
    assert_eq!((line.quantity, line.open, line.waiting), (4, 3, 1));
    let queue: Vec<u32> = st.backlog(&item()).queue.iter().map(|w| w.units).collect();
    assert_eq!(queue, vec![2, 1]);
}

/// First come, first served, exactly: whatever order the fills are
/// decided in, and however the deliveries are cut, each reservation ends
/// with what placing order gives it.
#[test]
fn fills_in_any_order_give_placing_order() {
    let orders: [[&str; 3]; 6] = [
        ["r1", "r2", "r3"],
        ["r1", "r3", "r2"],
        ["r2", "r1", "r3"],
        ["r2", "r3", "r1"],
        ["r3", "r1", "r2"],
        ["r3", "r2", "r1"],
    ];
    for delivered in 0..=9 {
        for order in orders {
            let mut st = setup(Setup::TwoWaiting);
            run(&mut st, &reserve("r3", 3, true, None), t(0)).unwrap();
            if delivered > 0 {
                run(&mut st, &receive("in-2", delivered), t(1)).unwrap();
            }
            for _pass in 0..2 {
                for id in order {
                    run(&mut st, &fill(id), t(2)).unwrap();
                }
            }
            // Waiting: r1 2, r2 4, r3 3, in that order.
            let mut left = delivered;
            for (id, waited) in [("r1", 2), ("r2", 4), ("r3", 3)] {
                let filled = left.min(waited);
                left -= filled;
                let p = st.reservations[&ReservationId::parse("id", id).unwrap()]
                    .placed()
                    .cloned()
                    .unwrap();
                let waiting = i64::from(p.waiting_of(&item()));
                assert_eq!(
                    waiting,
                    waited - filled,
                    "{delivered} in order {order:?}: {id}"
                );
            }
        }
    }
}

/// A full queue refuses one more waiting reservation; one that waits for
/// nothing still gets in.
#[test]
fn a_full_queue_refuses_one_more() {
    let mut st = setup(Setup::Expecting);
    let queue = (0..MAX_WAITING_PER_ITEM)
        .map(|i| Waiting {
            reservation_id: ReservationId::parse("id", &format!("q{i}")).unwrap(),
            units: 0,
        })
        .collect();
    st.backlogs.insert(
        item(),
        Backlog {
            queue,
            ..st.backlog(&item())
        },
    );
    let e = run(&mut st, &reserve("r9", 4, true, None), t(1)).unwrap_err();
    assert_eq!(e.code(), RejectionCode::BacklogFull);
    run(&mut st, &reserve("r9", 3, true, None), t(1)).unwrap();
}

/// While units wait, two places are kept: a step is refused one place
/// earlier than without them, and the drop and the settlement still fit.
#[test]
fn two_places_are_kept_while_units_wait() {
    let mut st = setup(Setup::Waiting);
    let mut extended = 0;
    let mut at = 1;
    loop {
        let ext = ExtendRequest {
            extension_id: format!("e{at}"),
            ttl_seconds: 3600,
        }
        .validate("r1")
        .unwrap();
        match run(&mut st, &ext, t(at)) {
            Ok(_) => extended += 1,
            Err(e) => {
                assert_eq!(e.code(), RejectionCode::StepLimit);
                break;
            }
        }
        at += 1;
    }
    // Seq 1 and 2 are the reserve; the last two places stay free.
    assert_eq!(extended, MAX_RESERVATION_EVENTS - 4);
    // At the edge, part of what waits cannot be dropped and the rest kept
    // waiting: there is no room left to wait, so all of it is dropped.
    run(&mut st, &cut_to(1), t(at)).unwrap();
    let d = run(&mut st, &fill("r1"), t(at)).unwrap();
    let Event::BackorderDropped(BackorderDropped { lines, reason, .. }) = &d.events[0].event else {
        panic!("a drop: {:?}", d.events)
    };
    assert_eq!((lines[0].quantity, *reason), (2, DropReason::Unfillable));
    assert_eq!(d.events.len(), 1, "3 still held: the order stays open");
    let d = run(&mut st, &command::release("r1", None).unwrap(), t(at)).unwrap();
    assert_eq!(d.events.last().unwrap().seq, MAX_RESERVATION_EVENTS);
}

fn line(q: u32) -> Line {
    Line {
        item: item(),
        quantity: q,
    }
}

fn order() -> OrderId {
    OrderId::parse("order_id", "o-r1").unwrap()
}

fn created(lines: Vec<Line>) -> Event {
    Event::ReservationCreated(ReservationCreated {
        order_id: order(),
        lines,
        expires_at: t(3600),
        ttl_seconds: 3600,
        request_hash: "h".into(),
    })
}

fn placed(q: u32) -> Event {
    Event::BackorderPlaced(BackorderPlaced {
        order_id: order(),
        lines: vec![line(q)],
        latest_arrival: NaiveDate::from_ymd_opt(2027, 1, 10),
    })
}

fn waits_for(lines: Vec<Line>) -> Event {
    Event::BackorderPlaced(BackorderPlaced {
        order_id: order(),
        lines,
        latest_arrival: None,
    })
}

fn fold_all(events: &[Event]) -> Result<Reservation, StreamViolation> {
    let id = ReservationId::parse("id", "r1").unwrap();
    let mut current = None;
    for (i, e) in events.iter().enumerate() {
        current = Some(Reservation::fold(
            current,
            &id,
            i as u32 + 1,
            e,
            Uuid::nil(),
            t(1),
        )?);
    }
    Ok(current.expect("events"))
}

fn filled(q: u32) -> Event {
    Event::BackorderFilled(BackorderFilled {
        order_id: order(),
        lines: vec![line(q)],
    })
}

fn dropped(q: u32, reason: DropReason) -> Event {
    Event::BackorderDropped(BackorderDropped {
        order_id: order(),
        lines: vec![line(q)],
        reason,
    })
}

fn confirmed(q: u32) -> Event {
    Event::ReservationConfirmed(ReservationConfirmed {
        order_id: order(),
        lines: if q == 0 { vec![] } else { vec![line(q)] },
        confirmation_id: None,
    })
}

/// The strict fold refuses backorder streams the core never writes.
#[test]
fn the_fold_refuses_backorder_streams_the_core_never_writes() {
    let broken: Vec<(&str, Vec<Event>)> = vec![
        (
            "a wait after seq 2",
            vec![created(vec![line(1)]), filled(1), placed(2)],
        ),
        (
            "a pre-order that never says what waits",
            vec![created(vec![]), confirmed(0)],
        ),
        (
            "a fill of more than waits",
            vec![created(vec![]), placed(2), filled(3)],
        ),
        (
            "a settlement while units wait",
            vec![created(vec![line(1)]), placed(2), confirmed(1)],
        ),
        (
            "a release's drop of part of what waits",
            vec![created(vec![]), placed(2), dropped(1, DropReason::Released)],
        ),
        (
            "a second wait",
            vec![created(vec![line(1)]), placed(2), placed(1)],
        ),
        (
            "a wait of nothing",
            vec![created(vec![]), waits_for(vec![])],
        ),
        (
            "a fill of nothing",
            vec![created(vec![]), placed(2), filled(0)],
        ),
        (
            "a release's drop followed by anything but the release",
            vec![
                created(vec![line(1)]),
                placed(2),
                dropped(2, DropReason::Released),
                filled(1),
            ],
        ),
        (
            "an expiry's drop before the hold ran out",
            vec![
                created(vec![line(1)]),
                placed(2),
                dropped(2, DropReason::Expired),
            ],
        ),
    ];
    for (name, events) in broken {
        assert!(fold_all(&events).is_err(), "{name}");
    }
}

/// A pre-order filled in part, the rest dropped, the filled part confirmed:
/// the fold follows every step.
#[test]
fn the_fold_follows_a_pre_order_filled_in_part() {
    let fine = vec![
        created(vec![]),
        placed(2),
        filled(1),
        dropped(1, DropReason::Unfillable),
        confirmed(1),
    ];
    let r = fold_all(&fine).unwrap();
    let p = r.placed().unwrap();
    assert_eq!((p.progress[0].confirmed, p.progress[0].dropped), (1, 1));
}

/// An item with `MAX_EXPECTED_PER_ITEM` open expected receipts refuses
/// one more; a change of one it has still goes through.
#[test]
fn a_full_list_of_expected_receipts_refuses_one_more() {
    let mut st = setup(Setup::Expecting);
    let mut backlog = st.backlog(&item());
    for i in 1..crate::limits::MAX_EXPECTED_PER_ITEM {
        let id = crate::domain::ExpectedId::parse("id", &format!("po-{i}")).unwrap();
        let due = crate::domain::backorder::Due {
            on: NaiveDate::from_ymd_opt(2027, 1, 10).unwrap(),
            units: 1,
        };
        backlog.incoming.insert(id, due);
    }
    st.backlogs.insert(item(), backlog);
    let more = ExpectRequest {
        expected_id: "po-more".into(),
        sku: "apple".into(),
        location: None,
        quantity: 1,
        expected_on: "2027-01-10".into(),
    }
    .validate()
    .unwrap();
    let e = run(&mut st, &more, t(1)).unwrap_err();
    assert_eq!(e.code(), RejectionCode::BacklogFull);
    run(&mut st, &cut_to(4), t(1)).unwrap();
}
