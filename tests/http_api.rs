//! The HTTP contract (`shared/design/http-api.md`) against a real server on
//! port 0: every endpoint and error code with its exact status, the auth
//! matrix, validation, replays, and the OpenAPI document.

mod common;

use common::cli_json;
use common::server::{test_config, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_and_error_code() {
    let mut s = TestServer::start(test_config()).await;

    // Receipts: created, replayed, conflict.
    let receipt = json!({"receipt_id": "in-1", "sku": "apple", "quantity": 10});
    let (st, b) = s.post("/v1/stock/receipts", receipt.clone()).await;
    assert_eq!((st, b["replayed"].clone()), (201, json!(false)), "{b}");
    let (st, b) = s.post("/v1/stock/receipts", receipt).await;
    assert_eq!((st, b["replayed"].clone()), (200, json!(true)), "{b}");
    let (st, b) = s
        .post(
            "/v1/stock/receipts",
            json!({"receipt_id": "in-1", "sku": "apple", "quantity": 11}),
        )
        .await;
    assert_eq!((st, code(&b)), (409, "IDEMPOTENCY_CONFLICT"));

    // Adjustments: created, replayed, not below reserved.
    let adj = json!({"adjustment_id": "adj-1", "sku": "apple", "delta": -1, "reason": "damaged"});
    assert_eq!(s.post("/v1/stock/adjustments", adj.clone()).await.0, 201);
    assert_eq!(s.post("/v1/stock/adjustments", adj).await.0, 200);
    let (st, b) = s
        .post(
            "/v1/stock/adjustments",
            json!({"adjustment_id": "adj-2", "sku": "apple", "delta": -100, "reason": "x"}),
        )
        .await;
    assert_eq!((st, code(&b)), (422, "INSUFFICIENT_STOCK"));

    // Reservations.
    let r1 = json!({"reservation_id": "r1", "order_id": "o1", "lines": [{"sku": "apple", "quantity": 2}]});
    let (st, b) = s.post("/v1/reservations", r1.clone()).await;
    assert_eq!(
        (st, b["state"].as_str(), b["replayed"].as_bool()),
        (201, Some("RESERVED"), Some(false)),
        "{b}"
    );
    assert_eq!(b["events"].as_array().map(Vec::len), Some(1));
    assert_eq!(s.post("/v1/reservations", r1).await.0, 200);
    let (st, b) = s.post("/v1/reservations", json!({"reservation_id": "r1", "order_id": "o1", "lines": [{"sku": "apple", "quantity": 3}]})).await;
    assert_eq!((st, code(&b)), (409, "IDEMPOTENCY_CONFLICT"));
    let (st, b) = s.post("/v1/reservations", json!({"reservation_id": "r2", "order_id": "o1", "lines": [{"sku": "apple", "quantity": 1}]})).await;
    assert_eq!((st, code(&b)), (409, "ORDER_ALREADY_RESERVED"));
    let (st, b) = s.post("/v1/reservations", json!({"reservation_id": "r3", "order_id": "o3", "lines": [{"sku": "apple", "quantity": 100}, {"sku": "pear", "quantity": 1}]})).await;
    assert_eq!((st, code(&b)), (422, "INSUFFICIENT_STOCK"));
    assert_eq!(
        b["details"]["shortfalls"].as_array().map(Vec::len),
        Some(2),
        "{b}"
    );
    assert_eq!(
        b["details"]["shortfalls"][0],
        json!({"sku": "apple", "location": "default", "requested": 100, "available": 7})
    );

    // Confirm and release.
    let (st, b) = s.post("/v1/reservations/r1/confirm", json!({})).await;
    assert_eq!(
        (st, b["state"].as_str(), b["replayed"].as_bool()),
        (200, Some("CONFIRMED"), Some(false))
    );
    let (st, b) = s.post("/v1/reservations/r1/confirm", json!({})).await;
    assert_eq!((st, b["replayed"].as_bool()), (200, Some(true)));
    let (st, b) = s.post("/v1/reservations/nope/confirm", json!({})).await;
    assert_eq!((st, code(&b)), (404, "RESERVATION_NOT_FOUND"));
    let (st, b) = s.post("/v1/reservations/r1/release", json!({})).await;
    assert_eq!((st, code(&b)), (409, "ALREADY_CONFIRMED"));
    let (st, b) = s
        .post(
            "/v1/reservations/ghost/release",
            json!({"reason": "customer cancelled"}),
        )
        .await;
    assert_eq!(
        (st, b["state"].as_str(), b["order_id"].clone()),
        (200, Some("RELEASED"), Value::Null)
    );
    let (st, b) = s.post("/v1/reservations", json!({"reservation_id": "ghost", "order_id": "og", "lines": [{"sku": "apple", "quantity": 1}]})).await;
    assert_eq!((st, code(&b)), (409, "RESERVATION_RELEASED"));
    let (st, b) = s.post("/v1/reservations/ghost/confirm", json!({})).await;
    assert_eq!((st, code(&b)), (409, "RESERVATION_RELEASED"));
    let short = json!({"reservation_id": "r5", "order_id": "o5", "lines": [{"sku": "apple", "quantity": 1}], "ttl_seconds": 1});
    assert_eq!(s.post("/v1/reservations", short).await.0, 201);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (st, b) = s.post("/v1/reservations/r5/confirm", json!({})).await;
    assert_eq!((st, code(&b)), (409, "RESERVATION_EXPIRED"));

    // Reads.
    s.db.wait_caught_up().await;
    let (st, b) = s.get("/v1/reservations/r1", "reader").await;
    assert_eq!(
        (
            st,
            b["state"].as_str(),
            b["events"].as_array().map(Vec::len)
        ),
        (200, Some("CONFIRMED"), Some(2))
    );
    assert_eq!(s.get("/v1/reservations/none", "reader").await.0, 404);
    let (st, b) = s.get("/v1/stock/apple", "reader").await;
    assert_eq!(st, 200);
    assert_eq!(
        (
            b["on_hand"].clone(),
            b["reserved"].clone(),
            b["confirmed"].clone()
        ),
        (json!(7), json!(0), json!(2)),
        "{b}"
    );
    assert!(b["as_of"]["position"].as_i64().unwrap() > 0);
    // `stockledger stock --json` prints the very body the API answers.
    assert_eq!(cli_json(&s.db.url(), &["stock", "apple"]), (Some(0), b));
    let (st, b) = s.get("/v1/stock/apple?as_of_position=1", "reader").await;
    assert_eq!((st, b["on_hand"].clone()), (200, json!(10)));
    let past = cli_json(&s.db.url(), &["stock", "apple", "--as-of-position", "1"]);
    assert_eq!(past, (Some(0), b));
    let (st, b) = s.get("/v1/stock/never?location=north", "reader").await;
    assert_eq!((st, code(&b)), (404, "NOT_FOUND"));
    let (_, reservation) = s.get("/v1/reservations/r1", "reader").await;
    let (st, b) = s.get("/v1/orders/o1", "reader").await;
    assert_eq!(
        (st, b["reservation_id"].as_str(), b["state"].as_str()),
        (200, Some("r1"), Some("CONFIRMED")),
        "{b}"
    );
    // Times are written one way everywhere: the order view (from its read
    // model) as the reservation (from the log), RFC 3339 in UTC with `Z`.
    assert_eq!(
        b["expires_at"], reservation["expires_at"],
        "{b} {reservation}"
    );
    assert!(
        b["created_at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{b}"
    );
    assert_eq!(s.get("/v1/orders/unknown", "reader").await.0, 404);
    let (st, b) = s.get("/v1/events?limit=3", "auditor").await;
    assert_eq!((st, b["events"].as_array().map(Vec::len)), (200, Some(3)));
    let next = b["next"].as_str().unwrap().to_owned();
    let (st, b) = s
        .get(
            &format!(
                "/v1/events?after={next}&stream={}",
                stockledger::domain::StreamKind::Reservation.prefix()
            ),
            "auditor",
        )
        .await;
    assert_eq!(st, 200);
    assert!(b["events"].as_array().unwrap().iter().all(|e| e["stream"]
        .as_str()
        .unwrap()
        .starts_with(stockledger::domain::StreamKind::Reservation.prefix())));
    let (st, b) = s.get("/v1/events?after=garbage", "auditor").await;
    assert_eq!((st, code(&b)), (400, "INVALID_ARGUMENT"));
    let (st, b) = s.get("/v1/projections", "auditor").await;
    assert_eq!(
        (st, b["projections"].as_array().map(Vec::len)),
        (200, Some(stockledger::read_model::ALL.len()))
    );

    // Operations need no key.
    for path in ["/healthz", "/readyz", "/metrics", "/openapi.json"] {
        let r = s.req(Method::GET, path, None).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
    }
    // The business's figures (reservations by state) need a key.
    let metrics = s
        .req(Method::GET, "/metrics", Some("reader"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for needle in [
        "stockledger_commands_total{type=\"reserve\",outcome=\"created\"} 2",
        "stockledger_commands_total{type=\"reserve\",outcome=\"INSUFFICIENT_STOCK\"} 1",
        "stockledger_http_request_duration_seconds_count{route=\"/v1/reservations\"}",
        "stockledger_pool_connections{state=\"open\"}",
        "stockledger_projection_lag_events{projection=\"stock_levels\"}",
        "stockledger_expiries_total",
        "stockledger_reservations{state=\"RESERVED\"}",
    ] {
        assert!(
            metrics.contains(needle),
            "metrics lack {needle}:\n{metrics}"
        );
    }
    // An unknown route.
    let (st, b) = s.get("/v2/nothing", "reader").await;
    assert_eq!((st, code(&b)), (404, "NOT_FOUND"));
    s.stop().await;
}

/// Every route, every role, no key and a revoked key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auth_matrix() {
    let mut s = TestServer::start(test_config()).await;
    s.post(
        "/v1/stock/receipts",
        json!({"receipt_id": "in-1", "sku": "apple", "quantity": 10}),
    )
    .await;
    // (method, path, body, roles allowed)
    let w = &["writer", "admin"][..];
    let all = &["writer", "reader", "auditor", "admin"][..];
    let a = &["auditor", "admin"][..];
    // Listings name orders the caller did not ask for by id: not a reader's.
    let listing = &["writer", "auditor", "admin"][..];
    let routes: Vec<(Method, &str, Value, &[&str])> = vec![
        (
            Method::POST,
            "/v1/stock/receipts",
            json!({"receipt_id": "in-2", "sku": "apple", "quantity": 1}),
            w,
        ),
        (
            Method::POST,
            "/v1/stock/adjustments",
            json!({"adjustment_id": "a-1", "sku": "apple", "delta": 1, "reason": "count"}),
            w,
        ),
        (
            Method::POST,
            "/v1/reservations",
            json!({"reservation_id": "r1", "order_id": "o1", "lines": [{"sku": "apple", "quantity": 1}]}),
            w,
        ),
        (Method::POST, "/v1/reservations/r1/confirm", json!({}), w),
        (Method::POST, "/v1/reservations/r9/release", json!({}), w),
        (Method::GET, "/v1/reservations/r1", Value::Null, all),
        (Method::GET, "/v1/stock/apple", Value::Null, all),
        (Method::GET, "/v1/orders/o1", Value::Null, all),
        (Method::GET, "/v1/events", Value::Null, a),
        (Method::GET, "/v1/projections", Value::Null, a),
        (
            Method::GET,
            "/v1/expiring-reservations",
            Value::Null,
            listing,
        ),
        (Method::GET, "/v1/low-stock", Value::Null, all),
        (Method::GET, "/v1/relays", Value::Null, a),
    ];
    let send = |method: Method, path: &str, body: &Value, role: Option<&str>| {
        let r = s.req(method, path, role);
        if body.is_null() {
            r
        } else {
            r.json(body)
        }
    };
    for (method, path, body, allowed) in &routes {
        let r = send(method.clone(), path, body, None).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 401, "{method} {path} without a key");
        let r = s
            .http
            .request(method.clone(), format!("{}{path}", s.base))
            .bearer_auth("sl_not_a_key")
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status().as_u16(),
            401,
            "{method} {path} with an unknown key"
        );
        for role in ["writer", "reader", "auditor", "admin"] {
            let r = send(method.clone(), path, body, Some(role))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            if allowed.contains(&role) {
                assert!(
                    status != 401 && status != 403,
                    "{method} {path} as {role}: {status} {}",
                    r.text().await.unwrap()
                );
            } else {
                let b: Value = r.json().await.unwrap();
                assert_eq!(
                    (status, code(&b)),
                    (403, "FORBIDDEN"),
                    "{method} {path} as {role}"
                );
            }
        }
    }
    // The role is checked before the path, query or body is read: a caller
    // without the role gets 403 even when its request is malformed.
    for (method, path, _, allowed) in &routes {
        for role in ["writer", "reader", "auditor"] {
            if allowed.contains(&role) {
                continue;
            }
            let r = if *method == Method::POST {
                s.req(method.clone(), path, Some(role))
                    .header("content-type", "application/json")
                    .body("{not json")
            } else {
                s.req(
                    method.clone(),
                    &format!("{path}?after=x&limit=-1"),
                    Some(role),
                )
            };
            let r = r.send().await.unwrap();
            let status = r.status().as_u16();
            let b: Value = r.json().await.unwrap();
            assert_eq!(
                (status, code(&b)),
                (403, "FORBIDDEN"),
                "malformed {method} {path} as {role}"
            );
        }
    }
    // Revoke every key: each route refuses it at once (the test server does not cache keys).
    for role in ["writer", "reader", "auditor", "admin"] {
        s.db.owner_store()
            .revoke_key(role)
            .await
            .unwrap()
            .expect("revoked");
    }
    for (method, path, body, allowed) in &routes {
        let r = send(method.clone(), path, body, Some(allowed[0]))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let b: Value = r.json().await.unwrap();
        assert_eq!(
            (status, code(&b)),
            (401, "UNAUTHENTICATED"),
            "{method} {path} with a revoked key"
        );
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_unknown_fields_malformed_json_and_large_bodies() {
    let mut s = TestServer::start(test_config()).await;
    let long = |n: usize| "x".repeat(n);
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "", "sku": "a", "quantity": 1}),
            "receipt_id",
        ),
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "r", "sku": long(65), "quantity": 1}),
            "sku",
        ),
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "r", "sku": "a", "quantity": 0}),
            "quantity",
        ),
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "r", "sku": "a", "quantity": 1_000_001}),
            "quantity",
        ),
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "r", "sku": "a", "location": "no way", "quantity": 1}),
            "location",
        ),
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "r", "sku": "a"}),
            "body",
        ),
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "r", "sku": "a", "quantity": "ten"}),
            "quantity",
        ),
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "r", "sku": "a", "quantity": 1, "colour": "red"}),
            "colour",
        ),
        (
            "/v1/stock/adjustments",
            json!({"adjustment_id": "a", "sku": "a", "delta": 0, "reason": "x"}),
            "delta",
        ),
        (
            "/v1/stock/adjustments",
            json!({"adjustment_id": "a", "sku": "a", "delta": 1, "reason": long(201)}),
            "reason",
        ),
        (
            "/v1/reservations",
            json!({"reservation_id": "r", "order_id": "o", "lines": []}),
            "lines",
        ),
        (
            "/v1/reservations",
            json!({"reservation_id": "r", "order_id": "o", "lines": [{"sku": "a", "quantity": -1}]}),
            "lines[0].quantity",
        ),
        (
            "/v1/reservations",
            json!({"reservation_id": "r", "order_id": "o/1", "lines": [{"sku": "a", "quantity": 1}]}),
            "order_id",
        ),
        (
            "/v1/reservations",
            json!({"reservation_id": "r", "order_id": "o", "lines": [{"sku": "a", "quantity": 1}], "ttl_seconds": 0}),
            "ttl_seconds",
        ),
        (
            "/v1/reservations",
            json!({"reservation_id": "r", "order_id": "o", "lines": [{"sku": "a", "quantity": 1, "price": 3}]}),
            "lines[0].price",
        ),
        (
            "/v1/reservations/r/confirm",
            json!({"force": true}),
            "force",
        ),
        (
            "/v1/reservations/r/release",
            json!({"reason": long(201)}),
            "reason",
        ),
    ];
    for (path, body, field) in cases {
        let (st, b) = s.post(path, body.clone()).await;
        assert_eq!(
            (st, code(&b), b["details"]["field"].as_str()),
            (400, "INVALID_ARGUMENT", Some(field)),
            "{path} {body}: {b}"
        );
    }
    for raw in ["{", "not json", "{\"receipt_id\": \"r\",}", "[1, 2"] {
        let r = s
            .req(Method::POST, "/v1/stock/receipts", Some("writer"))
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        let st = r.status().as_u16();
        let b: Value = r.json().await.unwrap();
        assert_eq!((st, code(&b)), (400, "MALFORMED_JSON"), "{raw}");
    }
    // A path that is not text, and a method a route does not take.
    let (st, b) = s.post("/v1/reservations/%FF/confirm", json!({})).await;
    assert_eq!(
        (st, code(&b), b["details"]["field"].as_str()),
        (400, "INVALID_ARGUMENT", Some("path")),
        "{b}"
    );
    let r = s
        .req(Method::PUT, "/v1/reservations", Some("writer"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let st = r.status().as_u16();
    let b: Value = r.json().await.unwrap();
    assert_eq!((st, code(&b)), (405, "METHOD_NOT_ALLOWED"));
    let big = json!({"receipt_id": "r", "sku": "a", "quantity": 1, "pad": "x".repeat(65 * 1024)});
    let (st, b) = s.post("/v1/stock/receipts", big).await;
    assert_eq!((st, code(&b)), (413, "PAYLOAD_TOO_LARGE"));
    assert_eq!(s.db.count_events().await, 0, "nothing written");
    s.stop().await;
}

/// A replayed command's body is byte for byte the original's, apart from `replayed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replays_return_the_same_body() {
    let mut s = TestServer::start(test_config()).await;
    let raw = |path: &'static str, body: Value| {
        let req = s.req(Method::POST, path, Some("writer")).json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    for (path, body) in [
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "in-1", "sku": "apple", "quantity": 10}),
        ),
        (
            "/v1/stock/adjustments",
            json!({"adjustment_id": "adj-1", "sku": "apple", "delta": 2, "reason": "found"}),
        ),
        (
            "/v1/reservations",
            json!({"reservation_id": "r1", "order_id": "o1", "lines": [{"sku": "apple", "quantity": 2}]}),
        ),
        ("/v1/reservations/r1/confirm", json!({})),
        ("/v1/reservations/ghost/release", json!({})),
    ] {
        let (first_status, first) = raw(path, body.clone()).await;
        let (again_status, again) = raw(path, body).await;
        assert!(
            first_status == 201 || first_status == 200,
            "{path}: {first_status} {first}"
        );
        assert_eq!(again_status, 200, "{path}");
        assert!(
            first.contains("\"replayed\":false") && again.contains("\"replayed\":true"),
            "{path}"
        );
        assert_eq!(
            first.replace("\"replayed\":false", "\"replayed\":true"),
            again,
            "{path}"
        );
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_and_an_unreachable_database() {
    let mut config = test_config();
    config.rate_limit_per_second = 1;
    config.rate_limit_burst = 2;
    let mut s = TestServer::start(config).await;
    for _ in 0..2 {
        assert_eq!(s.get("/v1/stock/none", "reader").await.0, 404);
    }
    let r = s
        .req(Method::GET, "/v1/stock/none", Some("reader"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    assert!(r.headers().get("retry-after").is_some());
    assert_eq!(code(&r.json().await.unwrap()), "RATE_LIMITED");
    // Another key has its own bucket.
    assert_eq!(s.get("/v1/stock/none", "writer").await.0, 404);
    s.stop().await;

    // A server whose database cannot be reached answers 503 with Retry-After.
    let mut dead = tokio_postgres::Config::new();
    dead.host("127.0.0.1").port(1).user("nobody").dbname("none");
    let store =
        stockledger::store::Store::new(stockledger::store::pool::build(dead.clone(), 2).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut config = test_config();
    config.dev = true;
    config.run_projections = false;
    config.run_expiry = false;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(stockledger::server::serve(
        listener,
        store,
        config,
        shutdown.clone(),
    ));
    let r = reqwest::Client::new()
        .post(format!("{base}/v1/stock/receipts"))
        .json(&json!({"receipt_id": "in-1", "sku": "apple", "quantity": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    assert!(r.headers().get("retry-after").is_some());
    assert_eq!(code(&r.json().await.unwrap()), "UNAVAILABLE");
    let r = reqwest::get(format!("{base}/readyz")).await.unwrap();
    assert_eq!(r.status().as_u16(), 503);
    assert_eq!(
        reqwest::get(format!("{base}/healthz"))
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    shutdown.cancel();
    task.await.unwrap().unwrap();
}

/// The served description is the one kept in docs/openapi.json.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_is_served_and_kept_in_docs() {
    let mut s = TestServer::start(test_config()).await;
    let served = s
        .req(Method::GET, "/openapi.json", None)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let kept =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json")).unwrap();
    assert_eq!(
        served, kept,
        "docs/openapi.json is stale: run `cargo run -- openapi > docs/openapi.json`"
    );
    let doc: Value = serde_json::from_str(&served).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/v1/stock/receipts",
        "/v1/stock/adjustments",
        "/v1/reservations",
        "/v1/reservations/{id}/confirm",
        "/v1/reservations/{id}/release",
        "/v1/reservations/{id}",
        "/v1/stock/{sku}",
        "/v1/orders/{order_id}",
        "/v1/events",
        "/v1/projections",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} is described");
    }
    // Every path parameter is a `{name}` of its route, and the query
    // strings the handlers read are described as query parameters (issue 11:
    // they were described as required path parameters).
    for (path, item) in doc["paths"].as_object().unwrap() {
        for op in item.as_object().unwrap().values() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap();
                if p["in"] == "path" {
                    assert!(
                        path.contains(&format!("{{{name}}}")),
                        "{path}: {name} is no path parameter"
                    );
                }
            }
        }
    }
    let query = |path: &str| -> Vec<String> {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(query("/v1/events"), ["after", "limit", "stream"]);
    assert_eq!(
        query("/v1/stock/{sku}"),
        ["location", "as_of", "as_of_position"]
    );
    s.stop().await;
}

/// Stock asked for before its read model has the item (here: no projection
/// workers at all) is answered from the write-side balances, not 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_before_its_read_model_has_the_item() {
    let mut config = test_config();
    config.run_projections = false;
    let mut s = TestServer::start(config).await;
    s.post(
        "/v1/stock/receipts",
        json!({"receipt_id": "in-1", "sku": "fresh", "quantity": 3}),
    )
    .await;
    let (st, b) = s.get("/v1/stock/fresh", "reader").await;
    assert_eq!(
        (st, b["on_hand"].clone(), b["available"].clone()),
        (200, json!(3), json!(3)),
        "{b}"
    );
    assert_eq!(s.get("/v1/stock/never", "reader").await.0, 404);
    s.stop().await;
}

/// Issue 25, case 12: who sent each command of a reservation (the key's
/// name, the command's id, its correlation id and request fingerprint) is for
/// the roles that send commands or audit them; a reader key gets the
/// timeline with empty metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_sees_a_reservations_timeline_without_command_metadata() {
    let mut s = TestServer::start(test_config()).await;
    let receipt = json!({"receipt_id": "in-1", "sku": "apple", "quantity": 10});
    assert_eq!(s.post("/v1/stock/receipts", receipt).await.0, 201);
    let r1 = json!({"reservation_id": "r1", "order_id": "o1", "lines": [{"sku": "apple", "quantity": 2}]});
    assert_eq!(s.post("/v1/reservations", r1).await.0, 201);
    assert_eq!(
        s.post("/v1/reservations/r1/confirm", json!({})).await.0,
        200
    );
    let (st, b) = s.get("/v1/reservations/r1", "reader").await;
    assert_eq!(st, 200, "{b}");
    let events = b["events"].as_array().expect("a timeline");
    assert_eq!(events.len(), 2, "{b}");
    for e in events {
        assert_eq!(e["metadata"], json!({}), "{e}");
        assert!(e["type"].is_string() && e["recorded_at"].is_string(), "{e}");
    }
    for role in ["writer", "auditor", "admin"] {
        let (st, b) = s.get("/v1/reservations/r1", role).await;
        assert_eq!(st, 200, "{role}: {b}");
        for e in b["events"].as_array().unwrap() {
            assert_eq!(e["metadata"]["actor"], json!("key:writer"), "{role}: {e}");
            assert!(e["metadata"]["command_id"].is_string(), "{role}: {e}");
        }
    }
    s.stop().await;
}
