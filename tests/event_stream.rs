//! `GET /v1/events/stream`: Server-Sent Events in the order and with the
//! payloads of `GET /v1/events`, resumed with `Last-Event-ID`, with a
//! heartbeat, a bound on subscribers, the auditor role, and an end at
//! shutdown.

mod common;

use std::time::Duration;

use common::server::{test_config, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

/// One SSE frame: its `id` (if any), its `data` (if any), or a comment.
#[derive(Debug, PartialEq)]
enum Frame {
    Event { id: String, data: Value },
    Comment(String),
}

/// Reads frames from a streaming answer until `want` events arrived (or the
/// deadline).
struct Reader {
    response: reqwest::Response,
    text: String,
}

impl Reader {
    async fn open(s: &TestServer, query: &str, last_event_id: Option<&str>) -> Reader {
        let mut r = s.req(
            Method::GET,
            &format!("/v1/events/stream{query}"),
            Some("auditor"),
        );
        if let Some(id) = last_event_id {
            r = r.header("last-event-id", id);
        }
        let response = r.send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Reader {
            response,
            text: String::new(),
        }
    }

    async fn frames(&mut self, want_events: usize, deadline: Duration) -> Vec<Frame> {
        let end = tokio::time::Instant::now() + deadline;
        loop {
            let frames = parse(&self.text);
            let events = frames
                .iter()
                .filter(|f| matches!(f, Frame::Event { .. }))
                .count();
            if events >= want_events {
                return frames;
            }
            match tokio::time::timeout_at(end, self.response.chunk()).await {
                Ok(Ok(Some(bytes))) => self.text.push_str(&String::from_utf8_lossy(&bytes)),
                _ => return frames,
            }
        }
    }
}

fn parse(text: &str) -> Vec<Frame> {
    let mut frames = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.is_empty()) {
        if !text.contains(&format!("{block}\n\n")) {
            continue; // not complete yet
        }
        let (mut id, mut data) = (None, None);
        for line in block.lines() {
            if let Some(c) = line.strip_prefix(':') {
                frames.push(Frame::Comment(c.trim().to_owned()));
            } else if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("data:") {
                data = Some(serde_json::from_str(v.trim()).unwrap());
            }
        }
        if let (Some(id), Some(data)) = (id, data) {
            frames.push(Frame::Event { id, data });
        }
    }
    frames
}

fn events(frames: &[Frame]) -> Vec<(String, Value)> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event { id, data } => Some((id.clone(), data.clone())),
            Frame::Comment(_) => None,
        })
        .collect()
}

async fn receive(s: &TestServer, n: usize, tag: &str) {
    for i in 0..n {
        let (st, b) = s
            .post(
                "/v1/stock/receipts",
                json!({"receipt_id": format!("{tag}-{i}"), "sku": "apple", "quantity": 1}),
            )
            .await;
        assert_eq!(st, 201, "{b}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_is_the_log_in_order_and_resumes_after_last_event_id() {
    let mut config = test_config();
    config.stream_heartbeat = Duration::from_millis(200);
    let mut s = TestServer::start(config).await;
    receive(&s, 5, "a").await;

    let mut reader = Reader::open(&s, "", None).await;
    let first = events(&reader.frames(5, Duration::from_secs(10)).await);
    // The same events, in the same order and shape, as the paged read.
    let (_, page) = s.get("/v1/events?limit=1000", "auditor").await;
    let paged: Vec<Value> = page["events"].as_array().unwrap().clone();
    assert_eq!(
        first.iter().map(|(_, d)| d.clone()).collect::<Vec<_>>(),
        paged
    );
    // Events committed later arrive on the open stream.
    receive(&s, 3, "b").await;
    let all = events(&reader.frames(8, Duration::from_secs(10)).await);
    assert_eq!(all.len(), 8);
    let streams: Vec<&str> = all
        .iter()
        .map(|(_, d)| d["stream"].as_str().unwrap())
        .collect();
    assert_eq!(streams[5..], ["receipt:b-0", "receipt:b-1", "receipt:b-2"]);
    // Quiet now: heartbeats.
    let frames = reader.frames(9, Duration::from_millis(700)).await;
    assert!(
        frames
            .iter()
            .any(|f| *f == Frame::Comment("heartbeat".into())),
        "{frames:?}"
    );
    drop(reader);

    // Reconnecting with the id of the 4th event gives the 5th onwards.
    let mut again = Reader::open(&s, "", Some(&all[3].0)).await;
    let resumed = events(&again.frames(4, Duration::from_secs(10)).await);
    assert_eq!(resumed, all[4..]);
    // `after` does the same for a first connection; Last-Event-ID wins.
    let mut after = Reader::open(&s, &format!("?after={}", all[6].0), None).await;
    assert_eq!(
        events(&after.frames(1, Duration::from_secs(10)).await),
        all[7..]
    );
    let mut both = Reader::open(&s, &format!("?after={}", all[0].0), Some(&all[6].0)).await;
    assert_eq!(
        events(&both.frames(1, Duration::from_secs(10)).await),
        all[7..]
    );
    drop((again, after, both));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_are_bounded_checked_and_ended_at_shutdown() {
    let mut config = test_config();
    config.stream_subscribers = 2;
    let mut s = TestServer::start(config).await;
    // Auditor or admin only.
    for role in [Some("reader"), Some("writer"), None] {
        let r = s
            .req(Method::GET, "/v1/events/stream", role)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            if role.is_some() { 403 } else { 401 },
            "{role:?}"
        );
    }
    let bad = s
        .req(Method::GET, "/v1/events/stream", Some("auditor"))
        .header("last-event-id", "1:x")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["details"]["field"], "Last-Event-ID");

    let one = Reader::open(&s, "", None).await;
    let two = Reader::open(&s, "", None).await;
    let third = s
        .req(Method::GET, "/v1/events/stream", Some("auditor"))
        .send()
        .await
        .unwrap();
    assert_eq!(third.status(), 503);
    assert!(third.headers().contains_key("retry-after"));
    drop(one);
    // A slot frees when a subscriber leaves.
    let mut reopened = None;
    for _ in 0..50 {
        let r = s
            .req(Method::GET, "/v1/events/stream", Some("auditor"))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            reopened = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(reopened.is_some(), "the slot came back");
    // Shutdown ends the open streams, so the drain finishes at once.
    tokio::time::timeout(Duration::from_secs(5), s.stop())
        .await
        .expect("shutdown is not held up by open event streams");
    drop((two, reopened));
}
