//! Partial confirms and releases and extended holds, through the store,
//! HTTP and the CLI, and racing what they race in production: a partial
//! confirm against the expiry and against a release of the same lines, an
//! extension against the expiry. After each: no oversell, no figure below
//! zero, every unit accounted for once, and the audit clean.

mod common;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use common::*;
use serde_json::json;
use stockledger::domain::{Outcome, Rejection, ReservationView};

/// The reservation in a successful answer.
fn view(outcome: &Outcome) -> &ReservationView {
    match outcome {
        Outcome::Reservation { view, .. } => view,
        other => panic!("not a reservation: {other:?}"),
    }
}

fn code(r: &Rejection) -> &'static str {
    r.code().as_str()
}

/// (open, confirmed, released, expired) of line `i` of a reservation.
fn progress(v: &ReservationView, i: usize) -> (u32, u32, u32, u32) {
    let l = &v.lines[i];
    (l.open, l.confirmed, l.released, l.expired)
}

async fn current(db: &TestDb, id: &str) -> ReservationView {
    let rid = stockledger::domain::ReservationId::parse("id", id).unwrap();
    let details = db
        .store
        .reservation(&rid)
        .await
        .unwrap()
        .expect("it exists");
    details.view
}

/// Sleeps until `at`, then `offset_ms` more (which may be negative).
async fn sleep_until(at: chrono::DateTime<Utc>, offset_ms: i64) {
    let wait = (at - Utc::now()).num_milliseconds() + offset_ms;
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(wait as u64)).await;
    }
}

#[tokio::test]
async fn an_order_ships_in_parts_and_every_view_shows_it() {
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    db.receive("in-2", "pear", 10).await;
    let made = db
        .run(reserve("r1", "o1", &[("apple", 3), ("pear", 2)], None))
        .await
        .unwrap();
    let first_expiry = view(&made).expires_at.unwrap();
    let shipped = db
        .run(confirm_lines("r1", "ship-1", &[("apple", 2)]))
        .await
        .unwrap();
    assert_eq!(view(&shipped).state.as_str(), "RESERVED");
    assert_eq!(progress(view(&shipped), 0), (1, 2, 0, 0));
    assert_eq!(db.figures("apple").await, (8, 1, 2));
    // The same shipment again is a replay; other lines under its id a conflict.
    let again = db
        .run(confirm_lines("r1", "ship-1", &[("apple", 2)]))
        .await
        .unwrap();
    assert!(again.replayed());
    let conflict = db
        .run(confirm_lines("r1", "ship-1", &[("apple", 1)]))
        .await
        .unwrap_err();
    assert_eq!(code(&conflict), "IDEMPOTENCY_CONFLICT");
    // More than is held is refused, naming the line and what is held.
    let over = db
        .run(confirm_lines("r1", "ship-2", &[("apple", 2), ("pear", 1)]))
        .await
        .unwrap_err();
    assert_eq!(code(&over), "EXCEEDS_RESERVED");
    assert_eq!(
        over.details()["lines"],
        json!([{"sku": "apple", "location": "default", "requested": 2, "reserved": 1}])
    );
    // A pear comes off the order; the hold is extended; the rest ships.
    db.run(release_lines("r1", "drop-1", &[("pear", 1)]))
        .await
        .unwrap();
    let extended = db.run(extend("r1", "more", 3_600)).await.unwrap();
    assert!(view(&extended).expires_at.unwrap() > first_expiry);
    let last = db
        .run(confirm_lines("r1", "ship-2", &[("apple", 1), ("pear", 1)]))
        .await
        .unwrap();
    assert_eq!(view(&last).state.as_str(), "CONFIRMED");
    assert_eq!(progress(view(&last), 0), (0, 3, 0, 0));
    assert_eq!(progress(view(&last), 1), (0, 1, 1, 0));
    assert_eq!(db.figures("apple").await, (7, 0, 3));
    assert_eq!(db.figures("pear").await, (9, 0, 1));
    // Settled: nothing more can be extended or released.
    let late = db.run(extend("r1", "later", 7_200)).await.unwrap_err();
    assert_eq!(code(&late), "ALREADY_CONFIRMED");
    // The per-order view shows what became of each line.
    db.project_all().await;
    let order = db
        .store
        .order_view(&stockledger::domain::OrderId::parse("id", "o1").unwrap())
        .await
        .unwrap()
        .expect("the order has a row");
    assert_eq!(
        order.state,
        stockledger::domain::ReservationState::Confirmed
    );
    assert_eq!(
        serde_json::to_value(&order.lines[1]).unwrap(),
        json!({"sku": "pear", "location": "default", "quantity": 2, "open": 0,
               "confirmed": 1, "released": 1, "expired": 0})
    );
    assert_eq!(order.history.len(), 5);
    db.assert_audit_clean().await;
}

/// A partial confirm sent just as the hold runs out, against the expiry
/// worker's command: each confirm either ships its unit before the expiry
/// (and the expiry frees only the rest) or is refused as expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partial_confirm_racing_the_expiry_settles_each_unit_once() {
    let db = Arc::new(TestDb::with_pool_size(24).await);
    db.receive("in-1", "apple", 100).await;
    const N: usize = 16;
    let mut expiries = Vec::new();
    for k in 0..N {
        let made = db
            .run(reserve(
                &format!("r{k}"),
                &format!("o{k}"),
                &[("apple", 2)],
                Some(1),
            ))
            .await
            .unwrap();
        expiries.push(view(&made).expires_at.unwrap());
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (k, at) in expiries.iter().copied().enumerate() {
        let db = db.clone();
        tasks.spawn(async move {
            // Around the expiry: from 40 ms before to 40 ms after.
            sleep_until(at, (k as i64 % 9) * 10 - 40).await;
            let id = format!("r{k}");
            let (confirmed, _) = tokio::join!(
                db.run(confirm_lines(&id, "ship-1", &[("apple", 1)])),
                db.run(expire(&id)),
            );
            (k, confirmed)
        });
    }
    let mut shipped = 0;
    while let Some(done) = tasks.join_next().await {
        let (k, confirmed) = done.unwrap();
        match confirmed {
            Ok(o) => {
                assert_eq!(progress(view(&o), 0), (1, 1, 0, 0), "r{k}");
                shipped += 1;
            }
            Err(r) => assert_eq!(code(&r), "RESERVATION_EXPIRED", "r{k}"),
        }
    }
    // Whatever is still open is past its expiry: expire it, then check.
    tokio::time::sleep(Duration::from_millis(100)).await;
    for k in 0..N {
        db.run(expire(&format!("r{k}"))).await.unwrap();
    }
    let mut confirmed_units = 0;
    for k in 0..N {
        let v = current(&db, &format!("r{k}")).await;
        assert_eq!(v.state.as_str(), "EXPIRED", "r{k}");
        let (open, confirmed, released, expired) = progress(&v, 0);
        assert_eq!((open, released, confirmed + expired), (0, 0, 2), "r{k}");
        confirmed_units += confirmed;
    }
    eprintln!("{shipped} of {N} shipped a unit before they expired");
    assert_eq!(confirmed_units, shipped);
    assert_eq!(
        db.figures("apple").await,
        (100 - i64::from(shipped), 0, i64::from(shipped))
    );
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// A partial confirm and a release of the same lines at once: one of them
/// gets the units, the other is told they are gone; never both.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partial_confirm_racing_a_release_of_the_same_lines_gets_them_or_not() {
    let db = Arc::new(TestDb::with_pool_size(24).await);
    db.receive("in-1", "apple", 100).await;
    db.receive("in-2", "pear", 100).await;
    const N: usize = 16;
    for k in 0..N {
        db.run(reserve(
            &format!("r{k}"),
            &format!("o{k}"),
            &[("apple", 2), ("pear", 1)],
            None,
        ))
        .await
        .unwrap();
    }
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..N {
        let db = db.clone();
        tasks.spawn(async move {
            let id = format!("r{k}");
            // Half race a release of the same line, half a whole release.
            let other = if k % 2 == 0 {
                release_lines(&id, "drop-1", &[("apple", 2)])
            } else {
                release(&id)
            };
            let (confirmed, released) = tokio::join!(
                db.run(confirm_lines(&id, "ship-1", &[("apple", 2)])),
                db.run(other),
            );
            (k, confirmed, released)
        });
    }
    let mut apples_shipped = 0;
    while let Some(done) = tasks.join_next().await {
        let (k, confirmed, released) = done.unwrap();
        let v = current(&db, &format!("r{k}")).await;
        let (apple, pear) = (progress(&v, 0), progress(&v, 1));
        match (&confirmed, &released, k % 2) {
            (Ok(_), Err(r), 0) => {
                assert_eq!(code(r), "EXCEEDS_RESERVED", "r{k}");
                assert_eq!((apple, v.state.as_str()), ((0, 2, 0, 0), "RESERVED"));
            }
            (Err(r), Ok(_), 0) => {
                assert_eq!(code(r), "EXCEEDS_RESERVED", "r{k}");
                assert_eq!(apple, (0, 0, 2, 0), "r{k}");
            }
            // The confirm came first; the release took the pear that was left.
            (Ok(_), Ok(_), 1) => {
                assert_eq!((apple, pear), ((0, 2, 0, 0), (0, 0, 1, 0)), "r{k}");
                assert_eq!(v.state.as_str(), "RELEASED");
            }
            (Err(r), Ok(_), 1) => {
                assert_eq!(code(r), "RESERVATION_RELEASED", "r{k}");
                assert_eq!((apple, pear), ((0, 0, 2, 0), (0, 0, 1, 0)), "r{k}");
            }
            other => panic!("r{k}: {other:?}"),
        }
        apples_shipped += apple.1;
    }
    let (on_hand, reserved, confirmed) = db.figures("apple").await;
    assert_eq!(confirmed, i64::from(apples_shipped));
    assert_eq!(on_hand, 100 - confirmed);
    assert_eq!(reserved, 0, "every apple was shipped or released");
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// An extension sent just as the hold runs out, against the expiry: either
/// the hold is extended and the expiry finds it not due, or it expired and
/// the extension is refused; never an extended reservation that expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_extension_racing_the_expiry_wins_or_is_refused() {
    let db = Arc::new(TestDb::with_pool_size(24).await);
    db.receive("in-1", "apple", 100).await;
    const N: usize = 16;
    let mut expiries = Vec::new();
    for k in 0..N {
        let made = db
            .run(reserve(
                &format!("r{k}"),
                &format!("o{k}"),
                &[("apple", 1)],
                Some(1),
            ))
            .await
            .unwrap();
        expiries.push(view(&made).expires_at.unwrap());
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (k, at) in expiries.iter().copied().enumerate() {
        let db = db.clone();
        tasks.spawn(async move {
            sleep_until(at, (k as i64 % 9) * 10 - 40).await;
            let id = format!("r{k}");
            let (extended, expired) =
                tokio::join!(db.run(extend(&id, "more", 600)), db.run(expire(&id)));
            (k, at, extended, expired.unwrap())
        });
    }
    let mut kept = 0;
    while let Some(done) = tasks.join_next().await {
        let (k, first, extended, expired) = done.unwrap();
        match extended {
            Ok(o) => {
                assert!(view(&o).expires_at.unwrap() > first, "r{k}");
                assert_ne!(state_of(&expired), "EXPIRED", "r{k} was extended");
                kept += 1;
            }
            Err(r) => assert_eq!(code(&r), "RESERVATION_EXPIRED", "r{k}"),
        }
    }
    // Past every first expiry: the extended ones are still held, the others expire.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut held = 0;
    for k in 0..N {
        let id = format!("r{k}");
        db.run(expire(&id)).await.unwrap();
        let state = current(&db, &id).await.state;
        held += i64::from(state.as_str() == "RESERVED");
    }
    eprintln!("{kept} of {N} extended before they expired");
    assert_eq!(held, kept, "exactly the extended reservations are held");
    assert_eq!(db.figures("apple").await, (100, kept, 0));
    db.project_all().await;
    db.assert_audit_clean().await;
}

#[tokio::test]
async fn partial_steps_over_http_and_the_cli() {
    let mut server = common::server::TestServer::start(common::server::test_config()).await;
    let receipt = json!({"receipt_id": "in-1", "sku": "apple", "quantity": 5});
    assert_eq!(server.post("/v1/stock/receipts", receipt).await.0, 201);
    let reserve = json!({"reservation_id": "r1", "order_id": "o1",
                         "lines": [{"sku": "apple", "quantity": 3}]});
    assert_eq!(server.post("/v1/reservations", reserve).await.0, 201);
    let ship = json!({"confirmation_id": "ship-1", "lines": [{"sku": "apple", "quantity": 1}]});
    let (status, body) = server
        .post("/v1/reservations/r1/confirmations", ship.clone())
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["lines"][0]["open"], 2, "{body}");
    assert_eq!(body["events"].as_array().unwrap().len(), 2);
    let (status, body) = server.post("/v1/reservations/r1/confirmations", ship).await;
    assert_eq!((status, body["replayed"].clone()), (200, json!(true)));
    let too_many = json!({"release_id": "drop-1", "lines": [{"sku": "apple", "quantity": 5}]});
    let (status, body) = server.post("/v1/reservations/r1/releases", too_many).await;
    assert_eq!(
        (status, body["code"].clone()),
        (422, json!("EXCEEDS_RESERVED"))
    );
    let sooner = json!({"extension_id": "e1", "ttl_seconds": 1});
    let (status, body) = server.post("/v1/reservations/r1/extensions", sooner).await;
    assert_eq!(
        (status, body["code"].clone()),
        (409, json!("EXPIRY_NOT_LATER"))
    );
    let bad = json!({"extension_id": "e1", "ttl_seconds": 0});
    let (status, body) = server.post("/v1/reservations/r1/extensions", bad).await;
    assert_eq!(
        (status, body["details"]["field"].clone()),
        (400, json!("ttl_seconds"))
    );
    let (status, body) = server
        .post(
            "/v1/reservations/nope/extensions",
            json!({"extension_id": "e1", "ttl_seconds": 60}),
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (404, json!("RESERVATION_NOT_FOUND"))
    );
    // The CLI takes the same steps: one more unit, then the hold, then the rest off.
    let url = server.db.url();
    let (code, doc) = cli_json(
        &url,
        &[
            "confirm",
            "r1",
            "--confirmation-id",
            "ship-2",
            "--line",
            "apple:1",
        ],
    );
    assert_eq!(
        (code, doc["lines"][0]["confirmed"].clone()),
        (Some(0), json!(2)),
        "{doc}"
    );
    let (code, doc) = cli_json(
        &url,
        &["extend", "r1", "--extension-id", "e2", "--ttl", "3600"],
    );
    assert_eq!(
        (code, doc["state"].clone()),
        (Some(0), json!("RESERVED")),
        "{doc}"
    );
    let (code, doc) = cli_json(
        &url,
        &[
            "release",
            "r1",
            "--release-id",
            "drop-1",
            "--line",
            "apple:1",
        ],
    );
    assert_eq!(
        (code, doc["state"].clone()),
        (Some(0), json!("RELEASED")),
        "{doc}"
    );
    let (code, doc) = cli_json(
        &url,
        &[
            "confirm",
            "r1",
            "--confirmation-id",
            "ship-3",
            "--line",
            "apple:1",
        ],
    );
    assert_eq!(
        (code, doc["code"].clone()),
        (Some(3), json!("RESERVATION_RELEASED")),
        "{doc}"
    );
    server.stop().await;
}

/// A command re-run after its COMMIT reply was lost (the same command id)
/// is answered with the reservation as its own event left it, whatever
/// later steps did: the timeline is cut at its event and the view folded
/// from it.
#[tokio::test]
async fn a_rerun_step_is_shown_what_its_own_commit_did() {
    use stockledger::domain::CommandContext;
    use stockledger::store::ReservationDetails;
    let db = TestDb::new().await;
    db.receive("in-1", "apple", 10).await;
    let reserve_ctx = CommandContext::new("test");
    let made = reserve("r1", "o1", &[("apple", 3)], None);
    db.store
        .execute(made.clone(), reserve_ctx.clone())
        .await
        .unwrap()
        .unwrap();
    let ship_ctx = CommandContext::new("test");
    let ship = confirm_lines("r1", "ship-1", &[("apple", 1)]);
    db.store
        .execute(ship.clone(), ship_ctx.clone())
        .await
        .unwrap()
        .unwrap();
    db.run(confirm_lines("r1", "ship-2", &[("apple", 1)]))
        .await
        .unwrap();
    db.run(release("r1")).await.unwrap();
    let answer = |cmd, ctx| {
        let store = db.store.clone();
        async move {
            let a = store.execute_answered(cmd, ctx).await.unwrap();
            let outcome = a.result.unwrap();
            assert!(!outcome.replayed());
            let view = view(&outcome).clone();
            ReservationDetails::committed(view, a.timeline).unwrap()
        }
    };
    let again = answer(ship, ship_ctx).await;
    assert_eq!(again.events.len(), 2, "created, its own shipment");
    assert_eq!(again.view.state.as_str(), "RESERVED");
    assert_eq!(progress(&again.view, 0), (2, 1, 0, 0));
    let again = answer(made, reserve_ctx).await;
    assert_eq!(again.events.len(), 1);
    assert_eq!(again.view.state.as_str(), "RESERVED");
    assert_eq!(progress(&again.view, 0), (3, 0, 0, 0));
}
