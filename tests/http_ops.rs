//! The server as an operator and an outsider see it: the headers on every
//! answer, development mode's address, broker credentials in the output, the
//! unauthenticated routes under a burst, metrics during a database outage,
//! workers that panic, and the connection caps under a low open-files limit.

mod common;

use std::io::Read;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::server::{
    addr, connect_from, quiet_config as quiet, server_behind_proxy, test_config, TestServer,
};
use common::*;
use futures_util::StreamExt;
use reqwest::Method;
use serde_json::json;
use stockledger::server::listener::ConnectionLimits;
use stockledger::server::supervise::PanicOnce;
use stockledger::server::ServerConfig;
use stockledger::store::{pool, Store};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

/// A client whose connections come from `from`.
fn client_from(from: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(from.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
}

fn protected(headers: &reqwest::header::HeaderMap) -> bool {
    headers.get("x-content-type-options").map(|v| v.as_bytes()) == Some(b"nosniff")
        && headers.get("cache-control").map(|v| v.as_bytes()) == Some(b"no-store")
}

// ---- case 12: headers, --dev, broker credentials -------------------------

/// Every answer, errors included, forbids sniffing and storing: successes,
/// 401, 404, 400, 405, the operational routes, and the listener's own 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_forbids_sniffing_and_storing() {
    let s = TestServer::start(quiet()).await;
    let (st, _) = s
        .post(
            "/v1/stock/receipts",
            json!({"receipt_id": "in-1", "sku": "apple", "quantity": 5}),
        )
        .await;
    assert_eq!(st, 201);
    let cases = [
        (Method::GET, "/healthz", None, 200),
        (Method::GET, "/readyz", None, 200),
        (Method::GET, "/metrics", None, 200),
        (Method::GET, "/openapi.json", None, 200),
        (Method::GET, "/v1/stock/apple", Some("reader"), 200),
        (Method::GET, "/v1/stock/apple", None, 401),
        (Method::GET, "/v1/nothing-here", Some("reader"), 404),
        (Method::DELETE, "/v1/stock/apple", Some("reader"), 405),
    ];
    for (method, path, role, status) in cases {
        let r = s.req(method.clone(), path, role).send().await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{method} {path}");
        assert!(protected(r.headers()), "{method} {path}: {:?}", r.headers());
    }
    let r = s
        .req(Method::POST, "/v1/stock/receipts", Some("writer"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(protected(r.headers()), "{:?}", r.headers());

    // The listener's own refusal: a second connection from one address.
    let tight = TestServer::start(ServerConfig {
        connections: ConnectionLimits {
            max_per_address: 1,
            ..ConnectionLimits::default()
        },
        ..quiet()
    })
    .await;
    let answer = refused_answer(&tight, 1).await;
    let lower = answer.to_ascii_lowercase();
    assert!(
        lower.contains("x-content-type-options: nosniff"),
        "{answer}"
    );
    assert!(lower.contains("cache-control: no-store"), "{answer}");
}

/// Opens `held` half-sent connections from 127.0.0.1 (kept open in the
/// returned list) and one more, which the listener must refuse: its answer.
async fn refused_answer(s: &TestServer, held: usize) -> String {
    let mut open = Vec::new();
    for _ in 0..held {
        let mut c = connect_from("127.0.0.1", addr(s)).await;
        c.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
        open.push(c);
    }
    let mut over = connect_from("127.0.0.1", addr(s)).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::io::AsyncReadExt::read_to_end(&mut over, &mut answer),
    )
    .await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    drop(open);
    answer
}

/// `serve --dev` (no keys checked) refuses a non-loopback address, from the
/// library and from the command line; on loopback it serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_mode_listens_only_on_loopback() {
    let db = TestDb::new().await;
    let dev = ServerConfig {
        dev: true,
        ..quiet()
    };
    let public = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let served = tokio::time::timeout(
        Duration::from_secs(30),
        stockledger::server::serve(
            public,
            db.store.clone(),
            dev.clone(),
            CancellationToken::new(),
        ),
    )
    .await
    .expect("serve --dev on 0.0.0.0 must refuse, not serve");
    let e = served.expect_err("serve --dev on 0.0.0.0 refused");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("loopback"), "{e}");
    assert!(dev
        .check_listen_address("127.0.0.1:8080".parse().unwrap())
        .is_ok());
    assert!(dev
        .check_listen_address("[::1]:8080".parse().unwrap())
        .is_ok());
    assert!(dev
        .check_listen_address("[::ffff:10.0.0.1]:8080".parse().unwrap())
        .is_err());
    assert!(quiet()
        .check_listen_address("0.0.0.0:8080".parse().unwrap())
        .is_ok());

    // The command line says so and exits.
    let mut child = Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .args(["serve", "--dev", "--listen", "0.0.0.0:0"])
        .env("DATABASE_URL", db.url())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if status.is_none() {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = status.unwrap_or_else(|| panic!("serve --dev on 0.0.0.0 kept running: {stderr}"));
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("loopback"), "{stderr}");
}

/// Runs the binary with `args` until `done` holds for what it has written to
/// stdout and stderr (or 30 s pass), then kills it; returns the output.
fn output_until(args: &[&str], url: &str, done: impl Fn(&str) -> bool) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .args(args)
        .env("DATABASE_URL", url)
        .env("STOCKLEDGER_LOG", "debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let readers: Vec<_> = [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ]
    .into_iter()
    .map(|mut pipe| {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    })
    .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !done(&seen.lock().unwrap()) && std::time::Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    let out = seen.lock().unwrap().clone();
    out
}

/// A broker URL with credentials is shown with its user information
/// redacted: in the relay's start-up note and in its logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_credentials_are_never_shown() {
    let db = TestDb::new().await;
    // Nothing listens there: the relay starts, says where it publishes, and
    // logs its failures to reach the broker.
    let url = format!("nats://relay-user:s3cret-pw@127.0.0.1:{}", free_port());
    let out = output_until(&["relay", "--nats-url", &url], &db.url(), |out| {
        out.matches("127.0.0.1").count() >= 3
    });
    assert!(out.contains("relaying"), "the relay started:\n{out}");
    assert!(out.contains("***@127.0.0.1"), "{out}");
    assert!(!out.contains("s3cret-pw"), "the password is shown:\n{out}");
    assert!(!out.contains("relay-user"), "the user is shown:\n{out}");
}

// ---- case 8: unauthenticated routes ---------------------------------------

/// `/readyz` answers from the state the server keeps: a burst of probes runs
/// no statement (the background check runs at its own pace, here once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_readiness_probes_runs_no_statement() {
    let (s, proxy) = server_behind_proxy(ServerConfig {
        readiness_interval: Duration::from_secs(3600),
        ops_rate_per_second: 1_000_000,
        ops_rate_burst: 1_000_000,
        ..quiet()
    })
    .await;
    eventually("ready", || async {
        let r = s.req(Method::GET, "/readyz", None).send().await.unwrap();
        r.status().as_u16() == 200
    })
    .await;
    let before = proxy.statements();
    let probes = (0..300).map(|_| {
        let r = s.req(Method::GET, "/readyz", None).send();
        async move { r.await.unwrap().status().as_u16() }
    });
    let statuses: Vec<u16> = futures_util::stream::iter(probes)
        .buffer_unordered(50)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let ran = proxy.statements() - before;
    assert!(ran <= 4, "300 probes ran {ran} statements");
}

/// `/readyz` is answered while every pooled connection is taken: it waits
/// for none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_is_answered_while_the_pool_is_exhausted() {
    let db = TestDb::new().await;
    let store = Store::new(pool::build(db.config.clone(), 2).unwrap());
    let s = TestServer::start_on(
        db,
        store.clone(),
        ServerConfig {
            readiness_interval: Duration::from_secs(3600),
            request_timeout: Duration::from_secs(3),
            ..quiet()
        },
    )
    .await;
    eventually("ready", || async {
        let r = s.req(Method::GET, "/readyz", None).send().await.unwrap();
        r.status().as_u16() == 200
    })
    .await;
    // The server's pool, both connections held by the test.
    let held = (
        store.pool().get().await.unwrap(),
        store.pool().get().await.unwrap(),
    );
    let r = s.req(Method::GET, "/readyz", None).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
    drop(held);
}

/// The routes without a key are rate-limited per client address: one
/// address's burst gets 429, another address is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_routes_are_rate_limited_per_address() {
    let s = TestServer::start(ServerConfig {
        ops_rate_per_second: 1,
        ops_rate_burst: 5,
        ..quiet()
    })
    .await;
    let one = client_from("127.0.0.1");
    let mut statuses = Vec::new();
    for path in ["/healthz", "/readyz", "/metrics", "/openapi.json"].repeat(5) {
        let r = one.get(format!("{}{path}", s.base)).send().await.unwrap();
        statuses.push(r.status().as_u16());
        if r.status().as_u16() == 429 {
            assert!(r.headers().contains_key("retry-after"));
            assert!(protected(r.headers()));
        }
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    let other = client_from("127.0.0.2");
    let r = other
        .get(format!("{}/healthz", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "another address is answered");
}

/// With `metrics_key_required`, `/metrics` answers 401 without a key and
/// 200 with one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_require_a_key() {
    let s = TestServer::start(ServerConfig {
        metrics_key_required: true,
        ..quiet()
    })
    .await;
    let r = s.req(Method::GET, "/metrics", None).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let text = r.text().await.unwrap();
    assert!(!text.contains("stockledger_"), "{text}");
    let r = s
        .req(Method::GET, "/metrics", Some("reader"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.text().await.unwrap().contains("stockledger_database_up"));
    // Without the option it stays open (the default), but for the
    // business's own figures, which need a key (any role); a key that is
    // sent must be valid.
    let open = TestServer::start(quiet()).await;
    open.db.receive("in-1", "apple", 5).await;
    open.db
        .run(reserve("r-1", "o-1", &[("apple", 2)], None))
        .await
        .unwrap();
    open.db.project_all().await;
    let r = open
        .req(Method::GET, "/metrics", None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let anonymous = r.text().await.unwrap();
    assert!(anonymous.contains("stockledger_database_up"), "{anonymous}");
    let business = [
        "stockledger_reservations{",
        "stockledger_reservation_units{",
    ];
    for series in business {
        assert!(!anonymous.contains(series), "{series} without a key");
    }
    let r = open
        .req(Method::GET, "/metrics", Some("reader"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let keyed = r.text().await.unwrap();
    for series in business {
        assert!(keyed.contains(series), "{series} with a key: {keyed}");
    }
    let r = open
        .http
        .get(format!("{}/metrics", open.base))
        .bearer_auth("sk_made_up")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
}

// ---- case 9: metrics during an outage -------------------------------------

async fn metrics_text(s: &TestServer) -> String {
    let r = s.req(Method::GET, "/metrics", None).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    r.text().await.unwrap()
}

/// Cut off from the database, `/metrics` says the database is down and
/// drops the figures it can no longer read (no stale lag), and says how old
/// the last figures read are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_say_when_the_database_is_down() {
    let (s, proxy) = server_behind_proxy(ServerConfig {
        readiness_interval: Duration::from_millis(200),
        // Scraped in a loop here: no 429 must stand in for an answer.
        ops_rate_per_second: 1_000_000,
        ops_rate_burst: 1_000_000,
        ..quiet()
    })
    .await;
    eventually("metrics show the database up and the lag", || async {
        let text = metrics_text(&s).await;
        text.contains("stockledger_projection_lag_events{")
            && text.contains("stockledger_database_up 1")
    })
    .await;
    proxy.refuse_new(true);
    proxy.cut_all();
    eventually(
        "metrics show the database down, without stale figures",
        || async {
            let text = metrics_text(&s).await;
            text.contains("stockledger_database_up 0")
                && !text.contains("stockledger_projection_lag_events{")
                && text.contains("stockledger_database_figures_age_seconds")
        },
    )
    .await;
    eventually("the figures' age grows during the outage", || async {
        figures_age(&metrics_text(&s).await) > 1.0
    })
    .await;
    proxy.refuse_new(false);
    eventually("metrics show the database back", || async {
        let text = metrics_text(&s).await;
        text.contains("stockledger_database_up 1")
            && text.contains("stockledger_projection_lag_events{")
    })
    .await;
}

/// `/metrics` counts the partitions the log and the chain have attached
/// (every lookup of a stream or an order probes each of the log's), and
/// follows as more are made.
#[tokio::test]
async fn metrics_count_the_logs_partitions() {
    let s = TestServer::start(ServerConfig {
        ops_rate_per_second: 1_000_000,
        ops_rate_burst: 1_000_000,
        ..quiet()
    })
    .await;
    let client = s.db.client().await;
    let attached = |table: &'static str| {
        let client = &client;
        async move {
            let n: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_inherits WHERE inhparent = $1::text::regclass",
                    &[&table],
                )
                .await
                .unwrap()
                .get(0);
            format!("stockledger_log_partitions{{table=\"{table}\"}} {n}")
        }
    };
    let (events, chain) = (attached("events").await, attached("event_chain").await);
    let text = metrics_text(&s).await;
    assert!(
        text.contains(&events) && text.contains(&chain),
        "{events}, {chain}:\n{text}"
    );
    // Room for 64 partitions' rows: more than a test database is made with.
    let made: i32 = client
        .query_one(
            "SELECT log_make_room(64 * (SELECT rows_per_partition FROM log_partitioning))",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(made > 0, "partitions were made");
    let more = attached("events").await;
    assert_ne!(more, events);
    eventually("metrics show the partitions made", || async {
        metrics_text(&s).await.contains(&more)
    })
    .await;
}

/// The value of `stockledger_database_figures_age_seconds` in `text`.
fn figures_age(text: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix("stockledger_database_figures_age_seconds "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no figures age in:\n{text}"))
}

// ---- case 11: supervised workers ------------------------------------------

/// The expiry worker panics once (injected): it is started again, expires
/// the reservation that is due, and the restart shows in `/metrics` and
/// `/readyz`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_panics_is_restarted_and_reported() {
    let s = TestServer::start(ServerConfig {
        injected_panic: Some(PanicOnce::new("expiry")),
        ..test_config()
    })
    .await;
    let (st, _) = s
        .post(
            "/v1/stock/receipts",
            json!({"receipt_id": "in-1", "sku": "apple", "quantity": 5}),
        )
        .await;
    assert_eq!(st, 201);
    let (st, _) = s
        .post(
            "/v1/reservations",
            json!({"reservation_id": "r1", "order_id": "o1",
                   "lines": [{"sku": "apple", "quantity": 2}], "ttl_seconds": 1}),
        )
        .await;
    assert_eq!(st, 201);
    eventually("the restarted expiry worker expires r1", || async {
        let (_, b) = s.get("/v1/reservations/r1", "reader").await;
        b["state"] == "EXPIRED"
    })
    .await;
    let text = metrics_text(&s).await;
    assert!(
        text.contains(r#"stockledger_worker_restarts_total{worker="expiry"} 1"#),
        "{text}"
    );
    let (st, b) = s.get("/readyz", "reader").await;
    assert_eq!(st, 200, "{b}");
    assert_eq!(b["workers"]["expiry"], "running", "{b}");
    assert_eq!(b["workers"]["projections"], "running", "{b}");
}

// ---- case 3: connection caps under a low open-files limit -----------------

/// When the total cap is below the per-address cap (a low open-files
/// limit lowered it), one address still cannot take every connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_every_connection_when_the_total_is_low() {
    let s = TestServer::start(ServerConfig {
        connections: ConnectionLimits {
            max_connections: 40,
            max_per_address: 1_024,
            header_read_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
        },
        ..quiet()
    })
    .await;
    // As many half-sent requests from one address as the server takes in
    // all. The listener accepts in arrival order, so all of these are
    // accepted (or refused) before the other address's connection.
    let mut held = Vec::new();
    for _ in 0..40 {
        let mut c = connect_from("127.0.0.1", addr(&s)).await;
        let _ = c.write_all(b"GET /healthz HTTP/1.1\r\n").await;
        held.push(c);
    }
    assert_eq!(
        healthz_from("127.0.0.2", &s.base).await,
        200,
        "another address is served"
    );
    drop(held);
}

/// `/healthz` from `from`: its status, or 0 when the connection was refused
/// before an answer could be read.
async fn healthz_from(from: &str, base: &str) -> u16 {
    match client_from(from)
        .get(format!("{base}/healthz"))
        .send()
        .await
    {
        Ok(r) => r.status().as_u16(),
        Err(e) => {
            eprintln!("/healthz from {from}: {e}");
            0
        }
    }
}

/// The case as reported: `serve` under `prlimit --nofile=1024:1024` (its
/// total cap lowered to 768), 800 half-sent requests from one address, and
/// `/healthz` from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_low_open_files_limit_another_address_is_still_served() {
    if !common::needs::programs(&[common::needs::PRLIMIT]) {
        return;
    }
    let db = TestDb::new().await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = Command::new("prlimit")
        .arg("--nofile=1024:1024")
        .arg(env!("CARGO_BIN_EXE_stockledger"))
        .args(["serve", "--dev", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--no-projections", "--no-expiry", "--no-sealer"])
        .args(["--header-read-timeout-ms", "120000"])
        .env("DATABASE_URL", db.url())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the server answers", || async {
        healthz_from("127.0.0.2", &base).await == 200
    })
    .await;
    let to: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut held = Vec::new();
    for _ in 0..800 {
        let mut c = connect_from("127.0.0.1", to).await;
        let _ = c.write_all(b"GET /healthz HTTP/1.1\r\n").await;
        held.push(c);
    }
    let status = healthz_from("127.0.0.2", &base).await;
    drop(held);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(status, 200, "another address is served");
}

/// Under a hard open-files limit of 259, 256 descriptors kept for the
/// database and the server left one client connection for everyone: one
/// idle connection shut out every other address. `serve` now refuses to
/// start below its floor, and says what to raise.
#[tokio::test]
async fn serve_refuses_an_open_files_limit_that_leaves_a_handful_of_connections() {
    if !common::needs::programs(&[common::needs::PRLIMIT]) {
        return;
    }
    let db = TestDb::new().await;
    let out = Command::new("prlimit")
        .arg("--nofile=259:259")
        .arg(env!("CARGO_BIN_EXE_stockledger"))
        .args(["serve", "--dev", "--listen", "127.0.0.1:0"])
        .env("DATABASE_URL", db.url())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the open-files limit is 259") && stderr.contains("raise it"),
        "{stderr}"
    );
}
