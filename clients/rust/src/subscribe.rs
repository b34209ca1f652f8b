//! `GET /v1/events/stream` as a subscription that outlives its connections.
//!
//! The server sends each event with its cursor as the Server-Sent Event's
//! `id`, and resumes strictly after a `Last-Event-ID`. The subscription keeps
//! the cursor of the last event it handed over and, whenever the stream ends
//! (a restart, a broken connection, the server's stream lifetime, a silence
//! longer than a few heartbeats), connects again with it. So no event is
//! skipped; and since it hands over only events after the last one handed
//! over, none is repeated either, whatever a connection replays.

use std::time::Duration;

use futures_util::StreamExt;
use stockledger::api::bodies::Event;
use stockledger::limits::EVENT_STREAM_HEARTBEAT_SECONDS;

use crate::client::{Client, CORRELATION_HEADER};
use crate::error::Error;

/// A silence this long (three of the server's heartbeats) means the
/// connection is dead even if no error says so: connect again.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(3 * EVENT_STREAM_HEARTBEAT_SECONDS);

/// The longest Server-Sent Event accepted (an event's JSON is a few KiB;
/// the server caps its bodies at 64 KiB).
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// An event handed over by a [`Subscription`].
#[derive(Debug)]
pub struct Delivered {
    /// The event's cursor: where a new subscription resumes
    /// ([`Client::subscribe`]'s `after`).
    pub cursor: String,
    /// The event, as `GET /v1/events` shows it.
    pub event: Event,
}

/// The log as it grows, in commit order, across reconnections.
pub struct Subscription {
    client: Client,
    last: Option<String>,
    idle_timeout: Duration,
    connection: Option<Connection>,
    /// Connections made since the last event was handed over.
    failures: u32,
    /// Connections made in all (the first included).
    pub connections: u64,
}

struct Connection {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: Vec<u8>,
}

impl Client {
    /// Follows the log from after `after` (a cursor from a [`Delivered`] or
    /// an events page; from the start when `None`). Nothing is sent until
    /// the first [`Subscription::next`].
    pub fn subscribe(&self, after: Option<&str>) -> Subscription {
        Subscription {
            client: self.clone(),
            last: after.map(str::to_owned),
            idle_timeout: IDLE_TIMEOUT,
            connection: None,
            failures: 0,
            connections: 0,
        }
    }
}

impl Subscription {
    /// Another silence limit (for a server with shorter heartbeats).
    pub fn with_idle_timeout(mut self, idle: Duration) -> Subscription {
        self.idle_timeout = idle;
        self
    }

    /// The cursor of the last event handed over.
    pub fn cursor(&self) -> Option<&str> {
        self.last.as_deref()
    }

    /// The next event. Waits as long as the log is quiet; reconnects by
    /// itself after anything that says "not now" (a broken or silent
    /// connection, `503`, `429`). Ends with an error only on an answer a
    /// retry cannot change (a revoked key, `HISTORY_ARCHIVED`, ...).
    pub async fn next(&mut self) -> Result<Delivered, Error> {
        loop {
            if self.connection.is_none() {
                self.connect().await?;
            }
            match self.read_event().await {
                Ok(Some((cursor, data))) => {
                    if !is_after(&cursor, self.last.as_deref()) {
                        continue; // already handed over: never twice
                    }
                    let event: Event = match serde_json::from_str(&data) {
                        Ok(event) => event,
                        Err(e) => {
                            // Its frame is gone from the buffer: the next
                            // call connects again after the last event
                            // handed over, so this one is met again, never
                            // skipped.
                            self.connection = None;
                            return Err(Error::Unexpected {
                                status: 200,
                                why: format!("event {cursor}: {e}"),
                            });
                        }
                    };
                    self.last = Some(cursor.clone());
                    self.failures = 0;
                    return Ok(Delivered { cursor, event });
                }
                // The stream ended or broke: connect again after a pause.
                Ok(None) | Err(Error::Transport(_)) => {
                    self.connection = None;
                    self.pause(None).await;
                }
                Err(e) => {
                    self.connection = None;
                    return Err(e);
                }
            }
        }
    }

    async fn pause(&mut self, retry_after: Option<Duration>) {
        self.failures += 1;
        // The client's pauses; a subscription has no deadline, it waits for
        // its server.
        let p = self.client.policy.pause(self.failures, retry_after);
        tokio::time::sleep(p).await;
    }

    /// Connects, resuming after the last event handed over; retries what a
    /// retry can mend, without end (a subscription waits for its server).
    async fn connect(&mut self) -> Result<(), Error> {
        loop {
            self.connections += 1;
            let url = self.client.url(&["v1", "events", "stream"], &[]);
            let mut req = self
                .client
                .http
                .get(url)
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .header(CORRELATION_HEADER, uuid::Uuid::new_v4().to_string());
            if let Some(key) = &self.client.key {
                req = req.bearer_auth(key);
            }
            if let Some(last) = &self.last {
                req = req.header("Last-Event-ID", last);
            }
            let sent = tokio::time::timeout(self.idle_timeout, req.send()).await;
            match sent {
                Ok(Ok(resp)) if resp.status().is_success() => {
                    self.connection = Some(Connection {
                        body: resp.bytes_stream().boxed(),
                        buffer: Vec::new(),
                    });
                    return Ok(());
                }
                Ok(Ok(resp)) if crate::retry::retryable_status(resp.status().as_u16()) => {
                    let after = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok()?.trim().parse().ok())
                        .map(Duration::from_secs);
                    self.pause(after).await;
                }
                Ok(Ok(resp)) => return Err(crate::client::answer_error(resp).await),
                Ok(Err(_)) | Err(_) => self.pause(None).await,
            }
        }
    }

    /// The next `(id, data)` of the connection, `None` when it ended.
    async fn read_event(&mut self) -> Result<Option<(String, String)>, Error> {
        let conn = self.connection.as_mut().expect("connected");
        loop {
            if let Some(frame) = take_frame(&mut conn.buffer) {
                match parse_frame(&frame) {
                    Some(event) => return Ok(Some(event)),
                    None => continue, // a heartbeat or a comment
                }
            }
            if conn.buffer.len() > MAX_EVENT_BYTES {
                return Err(Error::Unexpected {
                    status: 200,
                    why: format!("an event stream frame over {MAX_EVENT_BYTES} bytes"),
                });
            }
            let chunk = match tokio::time::timeout(self.idle_timeout, conn.body.next()).await {
                Ok(Some(Ok(chunk))) => chunk,
                Ok(Some(Err(e))) => return Err(Error::Transport(e)),
                Ok(None) | Err(_) => return Ok(None),
            };
            conn.buffer.extend_from_slice(&chunk);
        }
    }
}

/// Takes the first whole frame (up to a blank line) out of `buffer`. Lines
/// end in LF, CRLF or CR (the SSE format allows all three; the server writes
/// LF, a proxy may rewrite them). A CR at the very end of the buffer may be
/// the first half of a CRLF, so it waits for the next byte.
fn take_frame(buffer: &mut Vec<u8>) -> Option<String> {
    let mut line_start = 0;
    let mut i = 0;
    while i < buffer.len() {
        let end_len = match buffer[i] {
            b'\n' => 1,
            b'\r' if i + 1 == buffer.len() => return None,
            b'\r' if buffer[i + 1] == b'\n' => 2,
            b'\r' => 1,
            _ => {
                i += 1;
                continue;
            }
        };
        if i == 0 {
            // A blank line with nothing before it: dropped.
            buffer.drain(..end_len);
            continue;
        }
        if i == line_start {
            // A blank line: the frame is everything before it.
            let frame: Vec<u8> = buffer.drain(..i + end_len).collect();
            return Some(String::from_utf8_lossy(&frame[..i]).into_owned());
        }
        i += end_len;
        line_start = i;
    }
    None
}

/// A frame's `id` and `data`; `None` for a comment (`: heartbeat`) or a
/// frame without both.
fn parse_frame(frame: &str) -> Option<(String, String)> {
    let (mut id, mut data) = (None, Vec::new());
    for line in frame.split(['\n', '\r']).filter(|l| !l.is_empty()) {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => id = Some(value.to_owned()),
            "data" => data.push(value),
            _ => {}
        }
    }
    Some((id?, (!data.is_empty()).then(|| data.join("\n"))?))
}

/// Whether `cursor` comes after `last` in the log's commit order. Cursors
/// are `transaction:position` and order by both, as numbers.
fn is_after(cursor: &str, last: Option<&str>) -> bool {
    let parse = |c: &str| -> Option<(u64, i64)> {
        let (tx, pos) = c.split_once(':')?;
        Some((tx.parse().ok()?, pos.parse().ok()?))
    };
    match (parse(cursor), last.and_then(parse)) {
        (Some(c), Some(l)) => c > l,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_at_blank_lines_and_heartbeats_skipped() {
        let mut b = b": heartbeat\n\nid: 7:3\ndata: {\"a\":1}\n\nid: 8".to_vec();
        let first = take_frame(&mut b).unwrap();
        assert_eq!(parse_frame(&first), None);
        let second = take_frame(&mut b).unwrap();
        assert_eq!(
            parse_frame(&second),
            Some(("7:3".into(), "{\"a\":1}".into()))
        );
        assert_eq!(take_frame(&mut b), None);
        assert_eq!(b, b"id: 8");
    }

    #[test]
    fn crlf_and_cr_line_ends_cut_frames_too() {
        let mut b = b"id: 1:1\r\ndata: {}\r\n\r\nid: 1:2\rdata: []\r\rid".to_vec();
        let first = take_frame(&mut b).unwrap();
        assert_eq!(parse_frame(&first), Some(("1:1".into(), "{}".into())));
        let second = take_frame(&mut b).unwrap();
        assert_eq!(parse_frame(&second), Some(("1:2".into(), "[]".into())));
        assert_eq!(b, b"id");
        // A CR at the end may be half a CRLF: wait for the next byte.
        let mut half = b"id: 1:3\r\ndata: {}\r\n\r".to_vec();
        assert_eq!(take_frame(&mut half), None);
        half.push(b'\n');
        assert!(take_frame(&mut half).is_some());
    }

    #[test]
    fn cursors_order_by_transaction_then_position() {
        assert!(is_after("10:5", Some("9:50")));
        assert!(is_after("10:6", Some("10:5")));
        assert!(!is_after("10:5", Some("10:5")));
        assert!(!is_after("9:99", Some("10:1")));
        assert!(is_after("1:1", None));
    }
}
