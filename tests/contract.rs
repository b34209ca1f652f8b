//! The API description is the contract (issue 11). Each finding of the
//! Schemathesis review has a test here: the document states every limit from
//! the constants the server checks, every error code, the headers, the
//! optional bodies and the links; and the server does what the document
//! says at each of those points. (Finding 1, query parameters described as
//! path parameters, is held by `http_api::the_openapi_document_is_served_and_kept_in_docs`.)
//! `.ci/contract` runs Schemathesis and a generated client on top of this.

mod common;

use common::server::{test_config, TestServer};
use reqwest::Method;
use serde_json::{json, Value};
use stockledger::limits::{
    DEFAULT_EVENTS_PER_READ, DEFAULT_TTL_SECONDS, MAX_ADJUST_DELTA, MAX_EVENTS_PER_READ,
    MAX_ID_LEN, MAX_LINES_PER_RESERVATION, MAX_METADATA_ID_LEN, MAX_QUANTITY,
    MAX_RAW_LINES_PER_RESERVATION, MAX_REASON_LEN, MAX_STREAM_PREFIX_LEN, MAX_TTL_SECONDS,
    MIN_TTL_SECONDS,
};

fn doc() -> Value {
    serde_json::from_str(&stockledger::server::openapi::document()).unwrap()
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    &doc["components"]["schemas"][name]
}

fn operations(doc: &Value) -> Vec<&Value> {
    doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .collect()
}

fn operation<'a>(doc: &'a Value, id: &str) -> &'a Value {
    operations(doc)
        .into_iter()
        .find(|op| op["operationId"] == id)
        .unwrap_or_else(|| panic!("no operation {id}"))
}

fn parameter<'a>(op: &'a Value, name: &str) -> &'a Value {
    op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no parameter {name}"))
}

fn assert_id(s: &Value, what: &str) {
    // An optional body field also takes null, read as left out.
    assert!(
        s["type"] == "string" || s["type"] == json!(["string", "null"]),
        "{what}: {s}"
    );
    assert_eq!(s["minLength"], 1, "{what}");
    assert_eq!(s["maxLength"], MAX_ID_LEN, "{what}");
    assert_eq!(
        s["pattern"],
        stockledger::api::contract::id_pattern(),
        "{what}"
    );
}

fn assert_range(s: &Value, min: i64, max: i64, what: &str) {
    assert!(
        s["type"] == "integer" || s["type"] == json!(["integer", "null"]),
        "{what}: {s}"
    );
    assert_eq!(
        (s["minimum"].as_f64(), s["maximum"].as_f64()),
        (Some(min as f64), Some(max as f64)),
        "{what}"
    );
}

/// Finding 2: every id, quantity, delta, reason, line count, time to live,
/// page size, prefix and header length is in the document, with the values
/// of `src/limits.rs`.
#[test]
fn the_document_states_every_limit_from_the_constants() {
    let d = doc();
    for (body, ids) in [
        ("ReceiveRequest", &["receipt_id", "sku", "location"][..]),
        ("AdjustRequest", &["adjustment_id", "sku", "location"][..]),
        ("ReserveRequest", &["reservation_id", "order_id"][..]),
        ("LineRequest", &["sku", "location"][..]),
    ] {
        for id in ids {
            assert_id(&schema(&d, body)["properties"][id], &format!("{body}.{id}"));
        }
    }
    for (op, name) in [
        ("getReservation", "id"),
        ("confirmReservation", "id"),
        ("releaseReservation", "id"),
        ("getStock", "sku"),
        ("getStock", "location"),
        ("getOrder", "order_id"),
    ] {
        let p = parameter(operation(&d, op), name);
        assert_id(&p["schema"], &format!("{op} {name}"));
        assert_eq!(p["required"], p["in"] == "path", "{op} {name}");
    }
    let q = i64::from(MAX_QUANTITY);
    assert_range(
        &schema(&d, "ReceiveRequest")["properties"]["quantity"],
        1,
        q,
        "receipt quantity",
    );
    assert_range(
        &schema(&d, "LineRequest")["properties"]["quantity"],
        1,
        q,
        "line quantity",
    );
    let ttl = &schema(&d, "ReserveRequest")["properties"]["ttl_seconds"];
    assert_range(
        ttl,
        i64::from(MIN_TTL_SECONDS),
        i64::from(MAX_TTL_SECONDS),
        "ttl",
    );
    assert_eq!(ttl["default"], DEFAULT_TTL_SECONDS);
    let lines = &schema(&d, "ReserveRequest")["properties"]["lines"];
    assert_eq!(lines["minItems"], 1);
    assert_eq!(lines["maxItems"], MAX_RAW_LINES_PER_RESERVATION);
    assert_eq!(
        lines["x-max-items-after-merging"],
        MAX_LINES_PER_RESERVATION
    );
    for body in ["AdjustRequest", "AdjustmentResponse"] {
        // Finding 5: the same delta in the request and the answer.
        let delta = &schema(&d, body)["properties"]["delta"];
        let max = i64::from(MAX_ADJUST_DELTA);
        let parts = delta["oneOf"].as_array().unwrap();
        assert_range(&parts[0], -max, -1, body);
        assert_range(&parts[1], 1, max, body);
        assert_eq!(
            schema(&d, body)["properties"]["reason"]["maxLength"],
            MAX_REASON_LEN
        );
    }
    assert_eq!(
        schema(&d, "ReleaseBody")["properties"]["reason"]["maxLength"],
        MAX_REASON_LEN
    );
    let events = operation(&d, "listEvents");
    let limit = &parameter(events, "limit")["schema"];
    assert_range(limit, 1, MAX_EVENTS_PER_READ, "limit");
    assert_eq!(limit["default"], DEFAULT_EVENTS_PER_READ);
    assert_eq!(
        parameter(events, "stream")["schema"]["maxLength"],
        MAX_STREAM_PREFIX_LEN
    );
}

/// Findings 3 and 5: the command headers are strings (never null) of a
/// bounded length; the error codes are a closed list that includes 405's;
/// confirm and release take no body or an object.
#[test]
fn the_document_states_headers_codes_and_optional_bodies() {
    let d = doc();
    for op in [
        "receiveStock",
        "adjustStock",
        "reserve",
        "confirmReservation",
        "releaseReservation",
    ] {
        for h in ["X-Correlation-Id", "X-Causation-Id"] {
            let p = parameter(operation(&d, op), h);
            assert_eq!(p["in"], "header");
            assert_eq!(p["required"], false);
            assert_eq!(p["schema"]["type"], "string", "{op} {h}: not nullable");
            assert_eq!(p["schema"]["minLength"], 1);
            assert_eq!(p["schema"]["maxLength"], MAX_METADATA_ID_LEN);
        }
    }
    let codes: Vec<&str> = schema(&d, "ErrorBody")["properties"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(codes, stockledger::server::error::error_codes());
    assert!(codes.contains(&"METHOD_NOT_ALLOWED"));
    for (op, body) in [
        ("confirmReservation", "ConfirmBody"),
        ("releaseReservation", "ReleaseBody"),
    ] {
        let rb = &operation(&d, op)["requestBody"];
        assert_eq!(rb["required"], false, "{op}");
        assert_eq!(
            rb["content"]["application/json"]["schema"]["$ref"],
            format!("#/components/schemas/{body}"),
            "{op}: an object, never null"
        );
    }
    for op in ["receiveStock", "adjustStock", "reserve"] {
        assert_eq!(operation(&d, op)["requestBody"]["required"], true, "{op}");
    }
    // Finding 4: the exclusion is written where a reader of each parameter looks.
    let stock = operation(&d, "getStock");
    for (p, other) in [("as_of", "as_of_position"), ("as_of_position", "as_of")] {
        let text = parameter(stock, p)["schema"]["description"]
            .as_str()
            .unwrap();
        assert!(
            text.contains(&format!("Not together with `{other}`")),
            "{p}: {text}"
        );
    }
    assert_eq!(
        parameter(operation(&d, "listEvents"), "stream")["schema"]["minLength"],
        1
    );
}

/// Finding 6: links from a created reservation to its confirm, release and
/// read, and from a page of the log to the next; every link names an
/// operation that exists and parameters that operation has.
#[test]
fn the_document_links_the_operations() {
    let d = doc();
    let links = |op: &str, status: &str| -> Value {
        operation(&d, op)["responses"][status]["links"].clone()
    };
    for status in ["200", "201"] {
        let l = links("reserve", status);
        for (name, to) in [
            ("confirm", "confirmReservation"),
            ("release", "releaseReservation"),
            ("read", "getReservation"),
        ] {
            assert_eq!(l[name]["operationId"], to, "{status} {name}");
            assert_eq!(
                l[name]["parameters"]["id"], "$response.body#/reservation_id",
                "{status} {name}"
            );
        }
    }
    assert_eq!(
        links("listEvents", "200")["next"],
        json!({"operationId": "listEvents", "parameters": {"after": "$response.body#/next"}})
    );
    let mut count = 0;
    for op in operations(&d) {
        for response in op["responses"].as_object().unwrap().values() {
            for link in response["links"]
                .as_object()
                .into_iter()
                .flat_map(|l| l.values())
            {
                count += 1;
                let target = operation(&d, link["operationId"].as_str().unwrap());
                for name in link["parameters"]
                    .as_object()
                    .into_iter()
                    .flat_map(|p| p.keys())
                {
                    parameter(target, name);
                }
                if let Some(body) = link.get("requestBody") {
                    assert!(target["requestBody"].is_object(), "{link}");
                    assert!(body.is_object());
                }
            }
        }
    }
    assert!(count >= 20, "{count} links");
}

async fn send(
    s: &TestServer,
    method: Method,
    path: &str,
    headers: &[(&str, &[u8])],
    body: Option<&str>,
) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut r = s.req(method, path, Some("admin"));
    for (name, value) in headers {
        r = r.header(
            *name,
            reqwest::header::HeaderValue::from_bytes(value).unwrap(),
        );
    }
    if let Some(b) = body {
        r = r
            .header("content-type", "application/json")
            .body(b.to_owned());
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, r.json().await.unwrap_or(Value::Null), headers)
}

fn field(b: &Value) -> &str {
    b["details"]["field"].as_str().unwrap_or("")
}

/// What the server does at each point the document now states.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_does_what_the_document_says() {
    let mut s = TestServer::start(test_config()).await;
    let receipt = |id: &str| format!(r#"{{"receipt_id": "{id}", "sku": "apple", "quantity": 5}}"#);
    let post = Method::POST;

    // Finding 3: a header that is present must be a valid id; none is
    // dropped in silence, and the text "null" is just text.
    let long = "c".repeat(MAX_METADATA_ID_LEN + 1);
    for (value, what) in [
        (&b""[..], "empty"),
        (b" padded", "a leading space (sent raw)"),
        ("caf\u{e9}".as_bytes(), "UTF-8 beyond ASCII"),
        (b"caf\xe9", "Latin-1 beyond ASCII"),
        (long.as_bytes(), "too long"),
    ] {
        for name in ["x-correlation-id", "x-causation-id"] {
            let (st, b, _) = send(
                &s,
                post.clone(),
                "/v1/stock/receipts",
                &[(name, value)],
                Some(&receipt("in-h")),
            )
            .await;
            let expected = name.trim_start_matches("x-").replace('-', "_");
            // hyper strips spaces around a header value: " padded" arrives
            // as "padded", which is valid.
            if what.starts_with("a leading space") {
                assert!(st == 201 || st == 200, "{what} {name}: {b}");
                continue;
            }
            assert_eq!(
                (st, field(&b)),
                (400, expected.as_str()),
                "{what} {name}: {b}"
            );
        }
    }
    assert_eq!(s.db.count_stream("receipt:in-h").await, 1);
    let ok = "c".repeat(MAX_METADATA_ID_LEN);
    let (st, b, h) = send(
        &s,
        post.clone(),
        "/v1/stock/receipts",
        &[
            ("x-correlation-id", b"null"),
            ("x-causation-id", ok.as_bytes()),
        ],
        Some(&receipt("in-null")),
    )
    .await;
    assert_eq!(st, 201, "{b}");
    assert_eq!(h["x-correlation-id"], "null");
    let metadata: Vec<Value> =
        s.db.column("SELECT metadata FROM events WHERE stream = 'receipt:in-null'")
            .await;
    assert_eq!(metadata[0]["correlation_id"], "null");
    assert_eq!(metadata[0]["causation_id"], ok.as_str());

    // Finding 5: whole numbers may be written as JSON Schema allows.
    let (st, b, _) = send(
        &s,
        post.clone(),
        "/v1/stock/receipts",
        &[],
        Some(r#"{"receipt_id": "in-float", "sku": "pear", "quantity": 10.0}"#),
    )
    .await;
    assert_eq!((st, b["quantity"].clone()), (201, json!(10)), "{b}");
    let (st, b, _) = send(
        &s,
        post.clone(),
        "/v1/stock/adjustments",
        &[],
        Some(r#"{"adjustment_id": "adj-e", "sku": "pear", "delta": -2e0, "reason": "dropped"}"#),
    )
    .await;
    assert_eq!((st, b["delta"].clone()), (201, json!(-2)), "{b}");
    for (path, body, name) in [
        (
            "/v1/stock/receipts",
            r#"{"receipt_id": "in-frac", "sku": "pear", "quantity": 2.5}"#,
            "quantity",
        ),
        (
            "/v1/reservations",
            r#"{"reservation_id": "r-frac", "order_id": "o-frac", "lines": [{"sku": "pear", "quantity": 1}], "ttl_seconds": 60.5}"#,
            "ttl_seconds",
        ),
    ] {
        let (st, b, _) = send(&s, post.clone(), path, &[], Some(body)).await;
        assert_eq!((st, field(&b)), (400, name), "{b}");
    }
    let (st, b, _) = send(
        &s,
        post.clone(),
        "/v1/reservations",
        &[],
        Some(r#"{"reservation_id": "r-1", "order_id": "o-1", "lines": [{"sku": "pear", "quantity": 1.0, "location": null}], "ttl_seconds": 60.0}"#),
    )
    .await;
    assert_eq!(
        (st, b["lines"][0]["location"].clone()),
        (201, json!("default")),
        "{b}"
    );

    // `.` and `..` are refused as ids: a URL resolves them away, so such a
    // reservation could be created but never named in a path.
    for dots in [".", ".."] {
        let body = format!(
            r#"{{"reservation_id": "{dots}", "order_id": "o-dots", "lines": [{{"sku": "pear", "quantity": 1}}]}}"#
        );
        let (st, b, _) = send(&s, post.clone(), "/v1/reservations", &[], Some(&body)).await;
        assert_eq!((st, field(&b)), (400, "reservation_id"), "{dots}: {b}");
    }

    // Finding 5: confirm and release take no body (or an object), never null.
    let (st, b, _) = send(
        &s,
        post.clone(),
        "/v1/reservations/r-1/confirm",
        &[],
        Some("null"),
    )
    .await;
    assert_eq!((st, field(&b)), (400, "body"), "{b}");
    let (st, b, _) = send(&s, post.clone(), "/v1/reservations/r-1/confirm", &[], None).await;
    assert_eq!((st, b["state"].clone()), (200, json!("CONFIRMED")), "{b}");
    let (st, b, _) = send(&s, post.clone(), "/v1/reservations/r-2/release", &[], None).await;
    assert_eq!((st, b["state"].clone()), (200, json!("RELEASED")), "{b}");

    // Finding 5: a method a route does not take.
    let (st, b, h) = send(&s, Method::DELETE, "/v1/reservations/r-1", &[], None).await;
    assert_eq!(
        (st, b["code"].clone()),
        (405, json!("METHOD_NOT_ALLOWED")),
        "{b}"
    );
    assert_eq!(h["allow"], "GET,HEAD");

    // Finding 4: the refusals the document now describes.
    let (st, b) = s
        .get(
            "/v1/stock/pear?as_of=2026-01-01T00:00:00Z&as_of_position=1",
            "reader",
        )
        .await;
    assert_eq!((st, field(&b)), (400, "as_of"), "{b}");
    let (st, b) = s.get("/v1/events?stream=", "auditor").await;
    assert_eq!((st, field(&b)), (400, "stream"), "{b}");
    // The prefix is counted in characters, as JSON Schema counts maxLength.
    let wide = "\u{e9}".repeat(MAX_STREAM_PREFIX_LEN);
    let (st, b) = s.get(&format!("/v1/events?stream={wide}"), "auditor").await;
    assert_eq!(st, 200, "{b}");
    let (st, b) = s
        .get(&format!("/v1/events?stream={wide}x"), "auditor")
        .await;
    assert_eq!((st, field(&b)), (400, "stream"), "{b}");
    // A cursor is digits only, as its pattern says.
    for bad in [
        "%2B1:0",
        "1:-0",
        "%201:0",
        "1:0%20",
        &format!("{}:0", "1".repeat(19)),
    ] {
        let (st, b) = s.get(&format!("/v1/events?after={bad}"), "auditor").await;
        assert_eq!((st, field(&b)), (400, "after"), "{bad}: {b}");
    }
    let (st, _) = s.get("/v1/events?after=0:0", "auditor").await;
    assert_eq!(st, 200);
    s.stop().await;
}
