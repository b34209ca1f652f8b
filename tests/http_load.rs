//! The server under load: no oversell through HTTP, expiry end to end, and a
//! graceful shutdown that loses no acknowledged command.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::server::{test_config, TestServer};
use serde_json::{json, Value};
use tokio::sync::Mutex;

/// 256 concurrent HTTP reserves of an item with 100 units: exactly 100 succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_oversell_through_http() {
    let s = TestServer::start(test_config()).await;
    s.post(
        "/v1/stock/receipts",
        json!({"receipt_id": "in-1", "sku": "hot", "quantity": 100}),
    )
    .await;
    let s = Arc::new(s);
    let tasks: Vec<_> = (0..256)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                s.post(
                    "/v1/reservations",
                    json!({"reservation_id": format!("r-{i}"), "order_id": format!("o-{i}"),
                                                 "lines": [{"sku": "hot", "quantity": 1}]}),
                )
                .await
            })
        })
        .collect();
    let (mut ok, mut short) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            (201, _) => ok += 1,
            (422, b) if b["code"] == "INSUFFICIENT_STOCK" => short += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((ok, short), (100, 156));
    assert_eq!(s.db.figures("hot").await, (100, 100, 0));
    Arc::into_inner(s).expect("tasks are done").stop().await;
}

/// A reservation with a short time to live: a confirm after `expires_at` is
/// refused even before the worker runs, and the expiry worker then expires it
/// and frees the units.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_end_to_end() {
    let mut s = TestServer::start(test_config()).await;
    s.post(
        "/v1/stock/receipts",
        json!({"receipt_id": "in-1", "sku": "apple", "quantity": 5}),
    )
    .await;
    let (st, b) = s.post("/v1/reservations", json!({"reservation_id": "r1", "order_id": "o1",
                                                    "lines": [{"sku": "apple", "quantity": 3}], "ttl_seconds": 1})).await;
    assert_eq!(st, 201, "{b}");
    let (st, b) = s.post("/v1/reservations", json!({"reservation_id": "r2", "order_id": "o2",
                                                    "lines": [{"sku": "apple", "quantity": 1}], "ttl_seconds": 1})).await;
    assert_eq!(st, 201, "{b}");
    tokio::time::sleep(Duration::from_millis(1050)).await;
    let (st, b) = s.post("/v1/reservations/r1/confirm", json!({})).await;
    assert_eq!(
        (st, b["code"].as_str()),
        (409, Some("RESERVATION_EXPIRED")),
        "{b}"
    );
    // The worker expires both and the units come back.
    let mut state = Value::Null;
    for _ in 0..100 {
        let (_, b) = s.get("/v1/reservations/r2", "reader").await;
        state = b["state"].clone();
        if state == "EXPIRED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, "EXPIRED");
    // Who expired it is command metadata: an auditor sees it, a reader not.
    let (_, b) = s.get("/v1/reservations/r1", "auditor").await;
    assert_eq!(b["state"], "EXPIRED");
    assert_eq!(b["events"][1]["metadata"]["actor"], "expiry-worker");
    assert_eq!(s.db.figures("apple").await, (5, 0, 0));
    // A release after expiry is a replay of the expired state.
    let (st, b) = s.post("/v1/reservations/r1/release", json!({})).await;
    assert_eq!(
        (st, b["state"].as_str(), b["replayed"].as_bool()),
        (200, Some("EXPIRED"), Some(true))
    );
    s.stop().await;
}

/// Shutdown while 16 clients write: every command answered 2xx is in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn graceful_shutdown_loses_no_acknowledged_command() {
    let mut s = TestServer::start(test_config()).await;
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let mut clients = Vec::new();
    for c in 0..16 {
        let (http, base, key, acknowledged) = (
            s.http.clone(),
            s.base.clone(),
            s.keys["writer"].clone(),
            acknowledged.clone(),
        );
        clients.push(tokio::spawn(async move {
            for n in 0.. {
                let id = format!("in-{c}-{n}");
                let sent = http
                    .post(format!("{base}/v1/stock/receipts"))
                    .bearer_auth(&key)
                    .json(&json!({"receipt_id": id, "sku": format!("sku-{c}"), "quantity": 1}))
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status().is_success() => acknowledged.lock().await.push(id),
                    // Refused or cut off once shutdown starts: not acknowledged.
                    _ => break,
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    s.stop().await;
    for c in clients {
        c.await.unwrap();
    }
    let acknowledged = acknowledged.lock().await.clone();
    assert!(
        acknowledged.len() >= 16,
        "the clients were busy ({})",
        acknowledged.len()
    );
    let logged: std::collections::HashSet<String> =
        s.db.column("SELECT substr(stream, 9) FROM events WHERE stream LIKE 'receipt:%'")
            .await
            .into_iter()
            .collect();
    let lost: Vec<_> = acknowledged
        .iter()
        .filter(|id| !logged.contains(*id))
        .collect();
    assert!(lost.is_empty(), "acknowledged but not in the log: {lost:?}");
}
