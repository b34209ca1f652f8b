//! Hostile and broken clients against a real server: slow or idle
//! connections, one address taking every connection, bodies that are not
//! JSON objects, control characters, made-up keys, and a database that does
//! not answer. Each was observed against an earlier build.

mod common;

use std::time::Duration;

use common::server::{addr, connect_from, quiet_config, test_config, TestServer};
use common::*;
use fault_proxy::Proxy;
use serde_json::json;
use stockledger::server::listener::ConnectionLimits;
use stockledger::server::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn tight(limits: ConnectionLimits) -> ServerConfig {
    ServerConfig {
        connections: limits,
        ..test_config()
    }
}

fn small_limits() -> ConnectionLimits {
    ConnectionLimits {
        max_connections: 40,
        max_per_address: 8,
        header_read_timeout: Duration::from_millis(500),
        idle_timeout: Duration::from_millis(1_000),
    }
}

/// A server without workers whose store reaches the database through a proxy.
async fn server_behind_proxy(dev: bool) -> (TestServer, Proxy) {
    common::server::server_behind_proxy(ServerConfig {
        dev,
        ..quiet_config()
    })
    .await
}

/// Waits until the server closes `stream` (EOF or reset), up to `within`;
/// returns how long that took, or `None` if it stayed open.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = std::time::Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout_at(
            tokio::time::Instant::from_std(started + within),
            stream.read(&mut buf),
        )
        .await
        {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {} // a response (408, 503): keep reading until closed
        }
    }
}

async fn get_healthz(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_idle_and_silent_connections_are_closed() {
    let mut s = TestServer::start(tight(small_limits())).await;
    let to = addr(&s);
    // Headers trickled one byte every 200 ms: closed by the header timeout.
    let mut slow = TcpStream::connect(to).await.unwrap();
    let trickle = tokio::spawn(async move {
        for b in b"GET /healthz HTTP/1.1\r\nhost: x\r\n"
            .iter()
            .cycle()
            .take(60)
        {
            if slow.write_all(&[*b]).await.is_err() {
                return Some(slow);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Some(slow)
    });
    // Opened and silent: closed by the idle timeout.
    let mut silent = TcpStream::connect(to).await.unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(4))
        .await
        .is_some());
    // Keep-alive, idle after one request: closed by the idle timeout.
    let mut kept = TcpStream::connect(to).await.unwrap();
    assert!(get_healthz(&mut kept).await.starts_with("HTTP/1.1 200"));
    let took = closed_within(&mut kept, Duration::from_secs(4))
        .await
        .expect("an idle keep-alive connection is closed");
    assert!(
        took >= Duration::from_millis(800),
        "not before the idle timeout: {took:?}"
    );
    let mut slow = trickle.await.unwrap().unwrap();
    assert!(
        closed_within(&mut slow, Duration::from_secs(4))
            .await
            .is_some(),
        "a trickled header is cut off"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_every_connection() {
    let limits = small_limits();
    let mut s = TestServer::start(tight(ConnectionLimits {
        idle_timeout: Duration::from_secs(30),
        header_read_timeout: Duration::from_secs(30),
        ..limits
    }))
    .await;
    let to = addr(&s);
    let mut held = Vec::new();
    for _ in 0..limits.max_per_address {
        held.push(connect_from("127.0.0.1", to).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut refused = connect_from("127.0.0.1", to).await;
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), refused.read(&mut buf))
        .await
        .expect("refused at once")
        .unwrap_or(0);
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
        "{answer}"
    );
    // Another address is still served.
    let mut other = connect_from("127.0.0.2", to).await;
    assert!(get_healthz(&mut other).await.starts_with("HTTP/1.1 200"));
    // A shutdown closes the held idle connections instead of waiting for
    // them: it ends while they are still open on our side, long before the
    // (30 s) idle timeout would have closed them.
    tokio::time::timeout(Duration::from_secs(30), s.stop())
        .await
        .expect("the shutdown did not wait for idle connections");
    for mut c in held {
        assert!(
            closed_within(&mut c, Duration::from_secs(1))
                .await
                .is_some(),
            "an idle connection was closed by the shutdown"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_must_be_json_objects_declared_as_json() {
    let s = TestServer::start(test_config()).await;
    let receipt = json!({"receipt_id": "in-1", "sku": "apple", "quantity": 5}).to_string();
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut r = s
            .req(reqwest::Method::POST, "/v1/stock/receipts", Some("writer"))
            .body(receipt.clone());
        if let Some(c) = content_type {
            r = r.header("content-type", c);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status().as_u16(), 415, "{content_type:?}");
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body["code"], "UNSUPPORTED_MEDIA_TYPE");
    }
    let r = s
        .req(reqwest::Method::POST, "/v1/stock/receipts", Some("writer"))
        .header("content-type", "application/json")
        .body(r#"["in-1", "apple", "default", 5]"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["code"], "INVALID_ARGUMENT");
    assert_eq!(body["details"]["field"], "body");
    assert_eq!(s.db.count_events().await, 0, "nothing was written");
    // Declared JSON with parameters is fine; an empty confirm needs no type.
    let r = s
        .req(reqwest::Method::POST, "/v1/stock/receipts", Some("writer"))
        .header("content-type", "Application/JSON; charset=utf-8")
        .body(receipt)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_in_queries_are_refused_by_name() {
    let s = TestServer::start(test_config()).await;
    for (path, field) in [
        ("/v1/events?stream=%00", "stream"),
        ("/v1/events?after=1%0A:2", "after"),
        ("/v1/stock/apple?location=a%01b", "location"),
    ] {
        let (status, body) = s.get(path, "admin").await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(body["code"], "INVALID_ARGUMENT");
        assert_eq!(body["details"]["field"], field, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auth_scheme_is_case_insensitive_and_unknown_keys_are_bounded() {
    let s = TestServer::start(test_config()).await;
    let r = s
        .http
        .get(format!("{}/v1/projections", s.base))
        .header("authorization", format!("bearer {}", s.keys["admin"]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Made-up keys from one address: each costs a lookup until the
    // address's budget is used up, then 429 without a query.
    let mut statuses = Vec::new();
    for i in 0..80 {
        let r = s
            .http
            .get(format!("{}/v1/projections", s.base))
            .bearer_auth(format!("sl_made_up_{i}"))
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    assert!(statuses.contains(&401));
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 401 || *s == 429));
}

/// The database stops answering: a 503 says what happened in plain words,
/// carries the correlation id, and leaks no database message (also on the
/// unauthenticated /readyz).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_answers_are_plain_and_carry_the_correlation_id() {
    let (s, proxy) = server_behind_proxy(true).await;
    proxy.refuse_new(true);
    proxy.cut_all();
    let r = s
        .http
        .post(format!("{}/v1/stock/receipts", s.base))
        .header("x-correlation-id", "corr-42")
        .json(&json!({"receipt_id": "in-1", "sku": "apple", "quantity": 5}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap();
    assert_eq!(status, 503, "{text}");
    assert!(headers.contains_key("retry-after"));
    let body: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["code"], "UNAVAILABLE");
    assert_eq!(body["details"]["correlation_id"], "corr-42");
    let message = body["message"].as_str().unwrap();
    for leak in [
        "SQLSTATE",
        "connection",
        "closed",
        "error",
        "pool",
        "(0",
        "(5",
    ] {
        assert!(!message.contains(leak), "{message}");
    }
    // /readyz answers from the server's background check, which sees the
    // outage within its interval.
    let readyz = || async {
        let r = s
            .http
            .get(format!("{}/readyz", s.base))
            .send()
            .await
            .unwrap();
        (
            r.status().as_u16(),
            r.json::<serde_json::Value>().await.unwrap(),
        )
    };
    eventually("/readyz sees the outage", || async {
        readyz().await.0 == 503
    })
    .await;
    let (_, body) = readyz().await;
    assert!(body["details"]["correlation_id"].is_string());
    assert!(
        !body["message"].as_str().unwrap().contains("connection"),
        "{body}"
    );
}

/// `/metrics` costs at most one read of the projection status per second,
/// however often it is scraped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_scrapes_share_one_cached_read() {
    // No background readiness check during the scrapes: it reads the
    // database every second on its own, whatever /metrics does.
    let (s, proxy) = common::server::server_behind_proxy(ServerConfig {
        readiness_interval: Duration::from_secs(3_600),
        ..quiet_config()
    })
    .await;
    let scrape = || async {
        let r = s
            .http
            .get(format!("{}/metrics", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
    };
    scrape().await;
    let after_first = proxy.statements();
    assert!(after_first > 0, "the first scrape reads the database");
    for _ in 0..20 {
        scrape().await;
    }
    assert_eq!(
        proxy.statements(),
        after_first,
        "20 more scrapes ran no statement"
    );
}

/// Heavy reads go through the item indexes (not a scan of the log), and a
/// reader hammering as-of leaves writers answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn heavy_reads_use_the_item_indexes() {
    use stockledger::domain::CommandContext;
    let s = TestServer::start(test_config()).await;
    let mut batch = Vec::new();
    for i in 0..20_000 {
        batch.push((
            receive(&format!("in-{i}"), &format!("sku-{}", i % 2_000), 3),
            CommandContext::new("test"),
        ));
    }
    s.db.store.execute_batch(&batch).await.unwrap();
    for i in 0..200 {
        s.db.run(reserve(
            &format!("r{i}"),
            &format!("o{i}"),
            &[(&format!("sku-{i}"), 1)],
            None,
        ))
        .await
        .unwrap();
    }
    let client = s.db.client().await;
    client.batch_execute("ANALYZE events").await.unwrap();
    let plan = explain(
        &client,
        &stockledger::store::history::item_events_sql(),
        &[
            &"sku-7",
            &"default",
            &None::<chrono::DateTime<chrono::Utc>>,
            &None::<i64>,
            &"999999999",
        ],
    )
    .await;
    // Every partition that holds events is read through its item index
    // (the planner may scan the empty ones made ahead: they cost nothing).
    let holding: Vec<String> =
        s.db.column("SELECT DISTINCT tableoid::regclass::text FROM events")
            .await;
    assert!(holding.len() > 1, "the log spans partitions");
    for p in &holding {
        assert!(!plan.contains(&format!("Seq Scan on {p} ")), "{p}: {plan}");
    }
    assert!(plan.contains("_items"), "{plan}");

    // 32 readers in a loop of as-of reads, one writer: no 503 anywhere.
    let until = std::time::Instant::now() + Duration::from_secs(2);
    let as_of = chrono::Utc::now().to_rfc3339();
    let readers: Vec<_> = (0..32)
        .map(|i| {
            let (http, base, key, as_of) = (
                s.http.clone(),
                s.base.clone(),
                s.keys["reader"].clone(),
                as_of.clone(),
            );
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                while std::time::Instant::now() < until {
                    let r = http
                        .get(format!("{base}/v1/stock/sku-{}", i % 50))
                        .query(&[("as_of", &as_of)])
                        .bearer_auth(&key)
                        .send()
                        .await
                        .unwrap();
                    statuses.push(r.status().as_u16());
                }
                statuses
            })
        })
        .collect();
    let mut written = 0;
    while std::time::Instant::now() < until {
        let (status, _) = s
            .post(
                "/v1/stock/receipts",
                json!({"receipt_id": format!("w-{written}"), "sku": "w", "quantity": 1}),
            )
            .await;
        assert_eq!(status, 201);
        written += 1;
    }
    for r in readers {
        let statuses = r.await.unwrap();
        assert!(!statuses.is_empty());
        assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    }
    assert!(written > 0);
}

/// Arbitrary bytes and broken JSON to every command route: always a typed
/// 4xx error with a code, never a 5xx, and nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitrary_bodies_get_typed_errors() {
    let s = TestServer::start(ServerConfig {
        run_projections: false,
        run_expiry: false,
        run_sealer: false,
        ..test_config()
    })
    .await;
    let routes = [
        "/v1/stock/receipts",
        "/v1/stock/adjustments",
        "/v1/reservations",
        "/v1/reservations/r1/confirm",
        "/v1/reservations/r1/release",
    ];
    let samples: Vec<Vec<u8>> = (0..200)
        .map(|i| match i % 4 {
            0 => (0..random_below(200)).map(|_| random_below(256) as u8).collect(),
            1 => {
                let mut b = br#"{"reservation_id":"r1","order_id":"o1","lines":[{"sku":"a","quantity":1}]}"#.to_vec();
                let at = random_below(b.len() as u64) as usize;
                b[at] = random_below(256) as u8;
                b
            }
            2 => format!("{}", random_below(1_000_000)).into_bytes(),
            _ => b"[{\"sku\": null}, 1e999, \"\\u0000\"]".to_vec(),
        })
        .collect();
    for (i, body) in samples.iter().enumerate() {
        let route = routes[i % routes.len()];
        let r = s
            .req(reqwest::Method::POST, route, Some("writer"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let answer: serde_json::Value = r.json().await.unwrap_or_default();
        assert!(status < 500, "{route} {body:?}: {status} {answer}");
        if status >= 400 {
            assert!(answer["code"].is_string(), "{route}: {answer}");
        }
    }
    let events: i64 = s.db.count_events().await;
    assert!(
        events <= 1,
        "at most a release of r1 (a tombstone) was written: {events}"
    );
}

/// A read whose request times out is cancelled in PostgreSQL, not left to
/// run on a connection the pool hands to the next caller: here a stock read
/// waits for a lock another transaction holds; once its request has been
/// answered 503, the read is no longer waiting on the server (before, it
/// waited out the whole lock timeout), and with the lock gone the next read
/// is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_read_is_cancelled_in_the_database() {
    let mut config = test_config();
    config.request_timeout = Duration::from_millis(200);
    config.run_projections = false;
    config.run_expiry = false;
    config.run_sealer = false;
    let mut s = TestServer::start(config).await;
    s.db.receive("in-1", "apple", 5).await;
    let holder = s.db.client().await;
    holder
        .batch_execute("BEGIN; LOCK TABLE stock_levels IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let (status, body) = s.get("/v1/stock/apple", "reader").await;
    assert_eq!(status, 503, "{body}");
    assert!(
        no_statement_waits_for_a_lock(&s.db).await,
        "the abandoned read was cancelled, not left waiting"
    );
    holder.batch_execute("COMMIT").await.unwrap();
    let (status, body) = s.get("/v1/stock/apple", "reader").await;
    assert_eq!(status, 200, "{body}");
    s.stop().await;
}

/// `GET /v1/events?stream=PREFIX` with a prefix that matches nothing, or one
/// stream, on a log longer than one filtered read looks at: each page walks
/// a bounded part of the log and its `next` moves on, so paging reaches the
/// end in a few steps (before, one page walked the whole log and came back
/// empty with `next` unmoved, which says "nothing more", wrongly when the
/// walk is cut off); the one matching event is found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_filter_that_matches_little_pages_through_the_log_in_bounded_steps() {
    use stockledger::limits::MAX_EVENTS_SCANNED_PER_FILTERED_READ;
    let mut config = test_config();
    config.run_projections = false;
    config.run_expiry = false;
    config.run_sealer = false;
    let mut s = TestServer::start(config).await;
    let receipts = MAX_EVENTS_SCANNED_PER_FILTERED_READ + 5_000;
    let batch: Vec<_> = (0..receipts)
        .map(|i| {
            (
                receive(&format!("in-{i}"), "apple", 1),
                stockledger::domain::CommandContext::new("test"),
            )
        })
        .collect();
    s.db.store.execute_batch(&batch).await.unwrap();
    s.db.run(reserve("r1", "o1", &[("apple", 1)], None))
        .await
        .unwrap();
    let page_through = |prefix: String| {
        let s = &s;
        async move {
            let (mut after, mut found, mut pages) = ("0:0".to_owned(), Vec::new(), 0);
            loop {
                let (status, body) = s
                    .get(
                        &format!("/v1/events?stream={prefix}&limit=10&after={after}"),
                        "auditor",
                    )
                    .await;
                assert_eq!(status, 200, "{body}");
                pages += 1;
                found.extend(body["events"].as_array().unwrap().iter().cloned());
                let next = body["next"].as_str().unwrap().to_owned();
                if next == after {
                    return (found, pages);
                }
                after = next;
                assert!(pages < 100, "paging ends");
            }
        }
    };
    let (none, pages) = page_through("zzz".into()).await;
    assert!(none.is_empty());
    assert!(
        pages >= 2,
        "the first page stopped short of the end and said where"
    );
    let (one, _) = page_through(res_stream("r1")).await;
    assert_eq!(one.len(), 1, "{one:?}");
    assert_eq!(one[0]["type"], "ReservationCreated");
    s.stop().await;
}
