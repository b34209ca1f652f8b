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

/// Reads frames from a streaming answer.
struct Reader {
    response: reqwest::Response,
    text: String,
}

impl Reader {
    async fn open(s: &TestServer, query: &str, last_event_id: Option<&str>) -> Reader {
        Self::open_as(s, "auditor", query, last_event_id).await
    }

    async fn open_as(
        s: &TestServer,
        role: &str,
        query: &str,
        last_event_id: Option<&str>,
    ) -> Reader {
        let mut r = s.req(
            Method::GET,
            &format!("/v1/events/stream{query}"),
            Some(role),
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

    /// Reads until `done` holds for the frames so far (within the hang
    /// guard; nothing here asserts how soon).
    async fn until(&mut self, done: impl Fn(&[Frame]) -> bool) -> Vec<Frame> {
        let read = async {
            loop {
                let frames = parse(&self.text);
                if done(&frames) {
                    return frames;
                }
                match self.response.chunk().await.unwrap() {
                    Some(bytes) => self.text.push_str(&String::from_utf8_lossy(&bytes)),
                    None => panic!("the stream ended early: {frames:?}"),
                }
            }
        };
        tokio::time::timeout(common::HANG_GUARD, read)
            .await
            .expect("the stream never delivered what was awaited")
    }

    /// Reads until `n` events arrived; returns them.
    async fn events(&mut self, n: usize) -> Vec<(String, Value)> {
        events(&self.until(|f| events(f).len() >= n).await)
    }

    /// Reads to the end of the answer; true when it ended cleanly (not cut).
    async fn ends_cleanly(&mut self) -> bool {
        loop {
            match self.response.chunk().await {
                Ok(Some(_)) => {}
                Ok(None) => return true,
                Err(_) => return false,
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
    let first = reader.events(5).await;
    // The same events, in the same order and shape, as the paged read.
    let (_, page) = s.get("/v1/events?limit=1000", "auditor").await;
    let paged: Vec<Value> = page["events"].as_array().unwrap().clone();
    assert_eq!(
        first.iter().map(|(_, d)| d.clone()).collect::<Vec<_>>(),
        paged
    );
    // Events committed later arrive on the open stream.
    receive(&s, 3, "b").await;
    let all = reader.events(8).await;
    assert_eq!(all.len(), 8);
    let streams: Vec<&str> = all
        .iter()
        .map(|(_, d)| d["stream"].as_str().unwrap())
        .collect();
    assert_eq!(streams[5..], ["receipt:b-0", "receipt:b-1", "receipt:b-2"]);
    // Quiet now: heartbeats.
    let frames = reader
        .until(|f| f.contains(&Frame::Comment("heartbeat".into())))
        .await;
    assert_eq!(events(&frames).len(), 8, "a heartbeat is no event");
    drop(reader);

    // Reconnecting with the id of the 4th event gives the 5th onwards.
    let mut again = Reader::open(&s, "", Some(&all[3].0)).await;
    let resumed = again.events(4).await;
    assert_eq!(resumed, all[4..]);
    // `after` does the same for a first connection; Last-Event-ID wins.
    let mut after = Reader::open(&s, &format!("?after={}", all[6].0), None).await;
    assert_eq!(after.events(1).await, all[7..]);
    let mut both = Reader::open(&s, &format!("?after={}", all[0].0), Some(&all[6].0)).await;
    assert_eq!(both.events(1).await, all[7..]);
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
    let mut two = Reader::open(&s, "", None).await;
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
    // Shutdown ends the open streams, each answer cleanly. (Without that,
    // the server's drain would wait on them for ever: the hang guard turns
    // that into a failure.)
    tokio::time::timeout(common::HANG_GUARD, s.stop())
        .await
        .expect("shutdown waits for open event streams");
    assert!(two.ends_cleanly().await, "the stream was cut, not ended");
    drop(reopened);
}

/// A stream opened with a key that is then revoked ends (as the key's plain
/// requests start to get 401) instead of delivering the log for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_keys_stream_ends() {
    let mut s = TestServer::start(test_config()).await;
    receive(&s, 2, "before").await;
    let mut stream = Reader::open(&s, "", None).await;
    stream.events(2).await;
    let owner = s.db.owner_store();
    let owner = owner.pool().get().await.unwrap();
    stockledger::store::keys::revoke(&owner, "auditor")
        .await
        .unwrap()
        .expect("the auditor key");
    receive(&s, 3, "after").await;
    // Keys are looked up afresh here (no cache): the stream must end at its
    // next look at the log; 30 s only bounds the wait for that.
    let ended = tokio::time::timeout(Duration::from_secs(30), stream.ends_cleanly())
        .await
        .expect("the revoked key's stream ends");
    assert!(ended, "ended, not cut");
    let (status, _) = s.get("/v1/events", "auditor").await;
    assert_eq!(status, 401);
    s.stop().await;
}

/// One key holds at most `MAX_EVENT_STREAMS_PER_KEY` streams, however many
/// slots are free; another key still gets one; and every stream ends after
/// the configured lifetime, to be resumed with `Last-Event-ID`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_cannot_hold_every_stream_and_streams_end_in_time() {
    let mut config = test_config();
    config.stream_lifetime = Duration::from_secs(2);
    let mut s = TestServer::start(config).await;
    let cap = stockledger::limits::MAX_EVENT_STREAMS_PER_KEY;
    let mut held = Vec::new();
    for _ in 0..cap {
        held.push(Reader::open_as(&s, "admin", "", None).await);
    }
    let over = s
        .req(Method::GET, "/v1/events/stream", Some("admin"))
        .send()
        .await
        .unwrap();
    assert_eq!(over.status(), 503, "one stream past the key's cap");
    let mut other = Reader::open_as(&s, "auditor", "", None).await;
    let ended = tokio::time::timeout(common::HANG_GUARD, other.ends_cleanly())
        .await
        .expect("a stream ends after its lifetime");
    assert!(ended);
    drop(held);
    s.stop().await;
}

/// `after` is checked even when `Last-Event-ID` (which wins) is sent: a
/// request the contract calls malformed is refused, never answered 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_after_is_refused_beside_a_good_last_event_id() {
    let mut s = TestServer::start(test_config()).await;
    let r = s
        .req(Method::GET, "/v1/events/stream?after=1:x", Some("auditor"))
        .header("last-event-id", "0:0")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["details"]["field"], "after", "{body}");
    s.stop().await;
}
