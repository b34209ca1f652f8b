//! The Rust client (clients/rust) against a real server: typed commands and
//! reads with the server's own types, rejections as codes, retries across a
//! server restarted mid-call and a database away (503 with `Retry-After`),
//! a deadline that ends a call, and a subscription that resumes across cut
//! connections and a restart without skipping or repeating an event.

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use common::server::{addr, server_behind_proxy, test_config, TestServer};
use stockledger::server::ServerConfig;
use stockledger_client::{
    new_id, Client, Error, LineRequest, ReceiveRequest, RejectionCode, ReservationState,
    ReserveRequest, RetryPolicy,
};
use tokio_util::sync::CancellationToken;

fn receipt(id: &str, sku: &str, quantity: i64) -> ReceiveRequest {
    ReceiveRequest {
        receipt_id: id.into(),
        sku: sku.into(),
        location: None,
        quantity,
        against: None,
    }
}

fn reservation(id: &str, order: &str, sku: &str, quantity: i64) -> ReserveRequest {
    ReserveRequest {
        reservation_id: id.into(),
        order_id: order.into(),
        lines: vec![LineRequest {
            sku: sku.into(),
            location: None,
            quantity,
        }],
        ttl_seconds: None,
        backorder: false,
        latest_arrival: None,
    }
}

fn client(s: &TestServer, role: &str) -> Client {
    Client::new(&s.base, Some(&s.keys[role])).unwrap()
}

/// A server on `at` over `s`'s database, as a restarted process would be.
async fn serve_again(s: &TestServer, at: SocketAddr, config: ServerConfig) -> CancellationToken {
    let listener = tokio::net::TcpListener::bind(at).await.unwrap();
    let shutdown = CancellationToken::new();
    tokio::spawn(stockledger::server::serve(
        listener,
        s.db.store.clone(),
        config,
        shutdown.clone(),
    ));
    shutdown
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_and_reads_are_typed_and_rejections_are_codes() {
    let s = TestServer::start(test_config()).await;
    let c = client(&s, "admin");
    let got = c.receive(&receipt("in-1", "apple", 5)).await.unwrap();
    assert_eq!((got.quantity, got.replayed), (5, false));
    let again = c.receive(&receipt("in-1", "apple", 5)).await.unwrap();
    assert!(again.replayed, "the same request again is a replay");

    let id = new_id("r");
    let held = c
        .reserve(&reservation(&id, "o-1", "apple", 3))
        .await
        .unwrap();
    assert_eq!(held.state, ReservationState::Reserved);
    assert_eq!(held.lines[0].open, 3);
    let short = c
        .reserve(&reservation("r-2", "o-2", "apple", 3))
        .await
        .unwrap_err();
    assert_eq!(
        short.rejection(),
        Some(RejectionCode::InsufficientStock),
        "{short}"
    );
    let Error::Rejected { details, .. } = &short else {
        panic!("{short:?}")
    };
    assert_eq!(details["shortfalls"][0]["available"], 2, "{details}");

    let confirmed = c.confirm(&id).await.unwrap();
    assert_eq!(confirmed.state, ReservationState::Confirmed);
    let late = c.release(&id, Some("changed my mind")).await.unwrap_err();
    assert_eq!(
        late.rejection(),
        Some(RejectionCode::AlreadyConfirmed),
        "{late}"
    );
    let read = c.reservation(&id).await.unwrap();
    assert_eq!(read.events.len(), 2, "{read:?}");

    s.db.project_all().await;
    let stock = c.stock("apple", None).await.unwrap();
    assert_eq!((stock.on_hand, stock.reserved), (2, 0), "{stock:?}");
    let order = c.order("o-1").await.unwrap();
    assert_eq!(order.reservation_id, id);
    let page = c.events(None, Some(10), None).await.unwrap();
    assert_eq!(page.events.len(), 3);
    assert_eq!(c.me().await.unwrap().role, "admin");
    assert!(c
        .expiring_reservations()
        .await
        .unwrap()
        .reservations
        .is_empty());

    // A reader may not write: the API's own code, not a rejection.
    let reader = client(&s, "reader");
    let refused = reader
        .receive(&receipt("in-2", "apple", 1))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::Api { status: 403, code, .. } if code == "FORBIDDEN"),
        "{refused:?}"
    );
    let nobody = Client::new(&s.base, Some("sk_made_up")).unwrap();
    let unknown = nobody.stock("apple", None).await.unwrap_err();
    assert_eq!(unknown.code(), Some("UNAUTHENTICATED"), "{unknown:?}");
}

/// The server goes away while a command is being retried and comes back on
/// the same address: the call gets its answer, and sent again it is a replay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_retried_across_a_server_restart_gets_its_answer_once() {
    let mut s = TestServer::start(test_config()).await;
    let at = addr(&s);
    let c = client(&s, "writer").with_deadline(Duration::from_secs(20));
    c.receive(&receipt("in-1", "apple", 5)).await.unwrap();
    s.stop().await;

    let call = {
        let c = c.clone();
        tokio::spawn(async move { c.reserve(&reservation("r-1", "o-1", "apple", 2)).await })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!call.is_finished(), "the call waits for the server");
    let shutdown = serve_again(&s, at, test_config()).await;
    let held = call.await.unwrap().unwrap();
    assert_eq!(
        (held.state, held.replayed),
        (ReservationState::Reserved, Some(false))
    );
    let again = c
        .reserve(&reservation("r-1", "o-1", "apple", 2))
        .await
        .unwrap();
    assert_eq!(again.replayed, Some(true));
    let events: i64 =
        s.db.client()
            .await
            .query_one(
                "SELECT count(*) FROM events WHERE stream = 'reservation:r-1'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
    assert_eq!(events, 1, "applied once");
    shutdown.cancel();

    // With no server at all, the deadline ends the call.
    let short = c.with_deadline(Duration::from_millis(600));
    match short.stock("apple", None).await {
        Err(Error::DeadlineExceeded { attempts, .. }) => assert!(attempts >= 2, "{attempts}"),
        other => panic!("expected DeadlineExceeded, got {other:?}"),
    }
    let once = c.with_policy(RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    });
    assert!(matches!(
        once.stock("apple", None).await,
        Err(Error::Transport(_))
    ));
}

/// The database away for longer than the server's request timeout (1 s
/// here): the server answers 503 with `Retry-After`, the client waits it out
/// and sends the same request again, and gets its answer when the database
/// is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_is_waited_out_within_the_deadline() {
    let (s, proxy) = server_behind_proxy(ServerConfig {
        request_timeout: Duration::from_secs(1),
        ..common::server::quiet_config()
    })
    .await;
    let c = client(&s, "writer").with_deadline(Duration::from_secs(30));
    c.receive(&receipt("in-1", "apple", 5)).await.unwrap();
    proxy.refuse_new(true);
    proxy.cut_all();
    let call = {
        let c = c.clone();
        tokio::spawn(async move { c.receive(&receipt("in-2", "apple", 1)).await })
    };
    // Two of the server's request timeouts: at least one 503 answered.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!call.is_finished(), "the call waits out the outage");
    proxy.refuse_new(false);
    let got = match call.await.unwrap() {
        Ok(got) => got,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!((got.receipt_id.as_str(), got.replayed), ("in-2", false));
    let metrics = s
        .req(reqwest::Method::GET, "/metrics", None)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "stockledger_http_requests_total{route=\"/v1/stock/receipts\",status=\"503\"}"
        ),
        "the server answered 503 and the client came back: {metrics}"
    );

    // Not retried past its deadline, which ends the wait for the 503's
    // `Retry-After` too.
    proxy.refuse_new(true);
    proxy.cut_all();
    let short = c.with_deadline(Duration::from_millis(1800));
    match short.receive(&receipt("in-3", "apple", 1)).await {
        Err(Error::DeadlineExceeded { .. }) => {}
        other => panic!("expected DeadlineExceeded, got {other:?}"),
    }
}

/// Takes `n` events from `sub` into `seen` (cursor, position).
async fn take(sub: &mut stockledger_client::Subscription, seen: &mut Vec<(String, i64)>, n: usize) {
    for _ in 0..n {
        let d = tokio::time::timeout(Duration::from_secs(30), sub.next())
            .await
            .expect("an event within 30 s")
            .unwrap();
        seen.push((d.cursor, d.event.position));
    }
}

/// A subscription follows the log across connections cut under it and a
/// server restart, with events appended while it was away: every event of
/// the log, in order, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_resumes_across_cuts_and_a_restart_without_gaps_or_repeats() {
    use fault_proxy::{Proxy, Upstream};
    let mut s = TestServer::start(test_config()).await;
    let at = addr(&s);
    let front = Proxy::start_bytes(Upstream::Tcp(at.to_string()))
        .await
        .unwrap();
    let through = Client::new(&format!("http://{}", front.addr), Some(&s.keys["auditor"])).unwrap();
    let writer = client(&s, "writer");
    let mut sub = through
        .subscribe(None)
        .with_idle_timeout(Duration::from_secs(5));
    let mut seen = Vec::new();
    for i in 0..5 {
        writer
            .receive(&receipt(&format!("a-{i}"), "apple", 1))
            .await
            .unwrap();
    }
    take(&mut sub, &mut seen, 3).await;
    front.cut_all();
    for i in 0..3 {
        writer
            .receive(&receipt(&format!("b-{i}"), "apple", 1))
            .await
            .unwrap();
    }
    take(&mut sub, &mut seen, 4).await;

    // The server goes; events are appended while it is away (by another
    // process on the same database); it comes back on the same address.
    s.stop().await;
    for i in 0..4 {
        s.db.receive(&format!("c-{i}"), "pear", 1).await;
    }
    let shutdown = serve_again(&s, at, test_config()).await;
    take(&mut sub, &mut seen, 5).await;
    front.cut_all();
    writer.receive(&receipt("d-0", "apple", 1)).await.unwrap();
    take(&mut sub, &mut seen, 1).await;
    shutdown.cancel();

    let positions: Vec<i64> = seen.iter().map(|(_, p)| *p).collect();
    let mut sorted = positions.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(positions, sorted, "in log order, none twice: {seen:?}");
    let log: BTreeSet<i64> =
        s.db.client()
            .await
            .query("SELECT position FROM events", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
    assert_eq!(
        positions.iter().copied().collect::<BTreeSet<_>>(),
        log,
        "every event of the log"
    );
    assert!(sub.connections >= 3, "reconnected: {}", sub.connections);
}
