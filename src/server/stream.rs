//! `GET /v1/events/stream`: the log as Server-Sent Events, for HTTP
//! subscribers. The same order (safe commit order) and the same payloads as
//! `GET /v1/events`; each event's SSE `id` is its cursor, so a client that
//! reconnects with `Last-Event-ID` resumes exactly after the last event it
//! received. A comment line is sent when the stream is quiet, the number of
//! subscribers is bounded (in all and per key), every stream ends when the
//! server shuts down, when its key is revoked (checked again every key-cache
//! period) and after `stream_lifetime`; the client then resumes where it was.
//! A client that stops reading does not hold its stream past either: a
//! timer of the stream's own closes its connection (`watch`).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::Extension;
use futures_util::Stream;
use serde::Deserialize;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::api::contract;
use crate::domain::{RecordedEvent, Rejection};
use crate::limits::{
    EVENT_STREAM_BATCH, EVENT_STREAM_KEY_RECHECK_MIN_MS, EVENT_STREAM_POLL_MS,
    EVENT_STREAM_STALL_GRACE_MS, MAX_EVENT_STREAMS_PER_KEY,
};
use crate::server::auth::{self, Access, Can, ToAudit};
use crate::server::error::ApiError;
use crate::server::json::ApiQuery;
use crate::server::listener::ConnectionCloser;
use crate::server::AppState;
use crate::store::read::event_json;
use crate::store::{keys, Cursor, Store};

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    #[param(schema_with = contract::cursor)]
    after: Option<String>,
}

/// The `Last-Event-ID` header a reconnecting client sends: both what the
/// handler extracts and what the API description says.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
pub struct ResumeHeader {
    #[param(rename = "Last-Event-ID", schema_with = contract::cursor)]
    pub last_event_id: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for ResumeHeader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let last_event_id = parts
            .headers
            .get("last-event-id")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        Ok(ResumeHeader { last_event_id })
    }
}

/// Where the stream starts: after `Last-Event-ID` when the client sends it
/// (a reconnect), else after `after`, else at the start of the log. Both are
/// checked whichever is used: a malformed `after` is refused even beside a
/// good `Last-Event-ID`, as the contract says.
fn start(resume: ResumeHeader, q: &StreamQuery) -> Result<Cursor, Rejection> {
    let after = q.after.as_deref().map(str::parse::<Cursor>).transpose()?;
    let resumed = resume
        .last_event_id
        .map(|id| {
            id.parse::<Cursor>().map_err(|_| {
                Rejection::invalid(
                    "Last-Event-ID",
                    "must be a cursor TX:POSITION, as sent in `id`",
                )
            })
        })
        .transpose()?;
    Ok(resumed.or(after).unwrap_or(Cursor::START))
}

#[utoipa::path(get, path = "/v1/events/stream", operation_id = "streamEvents", tag = "reads",
    params(StreamQuery, ResumeHeader),
    responses((status = 200, description = "Server-Sent Events, each described by the schema: each event's `id` is its cursor and its `data` the event as `GET /v1/events` shows it; a `: heartbeat` comment when quiet. The stream ends at shutdown, when its key is revoked and after the server's stream lifetime (an hour unless configured); reconnect with `Last-Event-ID` to resume where it ended.",
               content_type = "text/event-stream", body = crate::server::openapi::StreamedEvent)),
    security(("bearer" = [])))]
pub async fn events_stream(
    State(s): State<AppState>,
    Can { caller, .. }: Can<ToAudit>,
    headers: HeaderMap,
    closer: Option<Extension<ConnectionCloser>>,
    resume: ResumeHeader,
    ApiQuery(q): ApiQuery<StreamQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let after = start(resume, &q)?;
    s.store.refuse_before_cut(after).await?;
    let key_slot = s.streams_by_key.take(&caller.name).ok_or_else(|| {
        ApiError::unavailable("this key has as many event streams open as it may")
    })?;
    let permit = s
        .subscribers
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::unavailable("too many event-stream subscribers"))?;
    // In development mode there is no key to check again.
    let key = (!s.config.dev)
        .then(|| auth::presented_key(&headers).map(keys::hash_key))
        .flatten();
    let now = Instant::now();
    let ends_at = now + s.config.stream_lifetime;
    let done = CancellationToken::new();
    if let Some(Extension(closer)) = closer {
        tokio::spawn(watch(s.clone(), key.clone(), ends_at, done.clone(), closer));
    }
    let feed = Feed {
        store: s.store.clone(),
        after,
        buffered: VecDeque::new(),
        closing: s.closing.clone(),
        key,
        recheck_at: now + recheck_interval(&s),
        ends_at,
        state: s.clone(),
        _permit: permit,
        _key_slot: key_slot,
        _done: done.drop_guard(),
    };
    let stream = futures_util::stream::unfold(feed, |mut feed| async move {
        let event = feed.next().await?;
        Some((Ok(event), feed))
    });
    let heartbeat = KeepAlive::new()
        .interval(s.config.stream_heartbeat)
        .text("heartbeat");
    Ok(Sse::new(stream).keep_alive(heartbeat))
}

/// One subscriber's place in the log.
struct Feed {
    store: Store,
    after: Cursor,
    buffered: VecDeque<RecordedEvent>,
    closing: CancellationToken,
    /// The hash of the key the stream was opened with, checked again at
    /// `recheck_at` and every key-cache period after.
    key: Option<String>,
    recheck_at: Instant,
    /// When the stream ends, however busy.
    ends_at: Instant,
    state: AppState,
    /// Held while the stream lives: a subscriber slot, and one of its key's.
    _permit: OwnedSemaphorePermit,
    _key_slot: KeySlot,
    /// Tells the stream's `watch` it ended, when the feed is dropped.
    _done: tokio_util::sync::DropGuard,
}

/// A stream's own timer. The feed checks its lifetime, its key and the
/// server's shutdown only when the next event is asked for; a client that
/// stops reading is asked nothing (its socket is full), and would keep its
/// connection, its subscriber slot and its key's slot past its lifetime, a
/// revocation and the shutdown's drain.
/// So this checks both on a timer of its own, and when the stream should
/// have ended but is still open `EVENT_STREAM_STALL_GRACE_MS` later, it
/// closes the connection, which drops the feed and frees what it held.
async fn watch(
    state: AppState,
    key: Option<String>,
    ends_at: Instant,
    done: CancellationToken,
    closer: ConnectionCloser,
) {
    let every = recheck_interval(&state);
    let mut next = (Instant::now() + every).min(ends_at);
    loop {
        tokio::select! {
            biased;
            _ = done.cancelled() => return,
            // A shutdown waits for every connection: a stalled one must not
            // hold it for the stream's lifetime.
            _ = state.closing.cancelled() => break,
            _ = tokio::time::sleep_until(next) => {}
        }
        let now = Instant::now();
        let over = now >= ends_at
            || match &key {
                Some(k) => !auth::still_allowed(&state, k, Access::Audit).await,
                None => false,
            };
        if over {
            break;
        }
        next = (now + every).min(ends_at);
    }
    let grace = Duration::from_millis(EVENT_STREAM_STALL_GRACE_MS);
    tokio::select! {
        biased;
        _ = done.cancelled() => {}
        _ = tokio::time::sleep(grace) => {
            // Checked again: a stream that ended just now left a connection
            // that may already serve the client's next request.
            if !done.is_cancelled() {
                warn!("an event stream whose client stopped reading outlived its key, its time or the server; its connection is closed");
                closer.close();
            }
        }
    }
}

/// How often an open stream's key is checked again: every key-cache period,
/// but never more often than `EVENT_STREAM_KEY_RECHECK_MIN_MS`.
fn recheck_interval(s: &AppState) -> Duration {
    s.config
        .key_cache
        .max(Duration::from_millis(EVENT_STREAM_KEY_RECHECK_MIN_MS))
}

/// Open event streams by key name.
#[derive(Default)]
pub struct StreamsByKey {
    open: Arc<Mutex<HashMap<String, usize>>>,
}

impl StreamsByKey {
    /// A slot for one more stream of `key`, or `None` when it holds
    /// `MAX_EVENT_STREAMS_PER_KEY` already.
    fn take(&self, key: &str) -> Option<KeySlot> {
        let mut open = self.open.lock().expect("stream counts lock");
        let n = open.entry(key.to_owned()).or_insert(0);
        if *n >= MAX_EVENT_STREAMS_PER_KEY {
            return None;
        }
        *n += 1;
        Some(KeySlot {
            open: self.open.clone(),
            key: key.to_owned(),
        })
    }
}

/// One stream's place in its key's count, given back when the stream ends.
struct KeySlot {
    open: Arc<Mutex<HashMap<String, usize>>>,
    key: String,
}

impl Drop for KeySlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().expect("stream counts lock");
        if let Some(n) = open.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

impl Feed {
    /// The next event, waiting for one to be committed; `None` ends the
    /// stream (the server shuts down, the key was revoked, the stream's time
    /// is up, or the log cannot be read: the client reconnects with
    /// `Last-Event-ID`).
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if !self.may_go_on().await {
                return None;
            }
            if let Some(e) = self.buffered.pop_front() {
                return Some(
                    SseEvent::default()
                        .id(Cursor::of(&e).to_string())
                        .data(event_json(&e).to_string()),
                );
            }
            if self.closing.is_cancelled() {
                return None;
            }
            match self
                .store
                .events(self.after, EVENT_STREAM_BATCH, None)
                .await
            {
                Ok(page) if !page.events.is_empty() => {
                    self.after = page.next;
                    self.buffered.extend(page.events);
                }
                Ok(_) => {
                    let poll = Instant::now() + Duration::from_millis(EVENT_STREAM_POLL_MS);
                    tokio::select! {
                        _ = tokio::time::sleep_until(poll.min(self.ends_at)) => {}
                        _ = self.closing.cancelled() => return None,
                    }
                }
                Err(e) => {
                    warn!(error = %e, "an event stream could not read the log; it ends");
                    return None;
                }
            }
        }
    }

    /// False once the stream's time is up or its key no longer lets it read
    /// the log (revoked, or its role changed).
    async fn may_go_on(&mut self) -> bool {
        let now = Instant::now();
        if now >= self.ends_at {
            return false;
        }
        let Some(key) = &self.key else { return true };
        if now < self.recheck_at {
            return true;
        }
        self.recheck_at = now + recheck_interval(&self.state);
        let allowed = auth::still_allowed(&self.state, key, Access::Audit).await;
        if !allowed {
            warn!("an event stream's key was revoked; the stream ends");
        }
        allowed
    }
}
