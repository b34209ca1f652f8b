//! `GET /v1/events/stream`: the log as Server-Sent Events, for HTTP
//! subscribers. The same order (safe commit order) and the same payloads as
//! `GET /v1/events`; each event's SSE `id` is its cursor, so a client that
//! reconnects with `Last-Event-ID` resumes exactly after the last event it
//! received. A comment line is sent when the stream is quiet, the number of
//! subscribers is bounded, and every stream ends when the server shuts down.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use serde::Deserialize;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::domain::{contract, RecordedEvent, Rejection};
use crate::limits::{EVENT_STREAM_BATCH, EVENT_STREAM_POLL_MS};
use crate::server::auth::{Can, ToAudit};
use crate::server::error::ApiError;
use crate::server::json::ApiQuery;
use crate::server::AppState;
use crate::store::read::event_json;
use crate::store::{Cursor, Store};

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
/// (a reconnect), else after `after`, else at the start of the log.
fn start(resume: ResumeHeader, q: &StreamQuery) -> Result<Cursor, Rejection> {
    if let Some(id) = resume.last_event_id {
        return id.parse::<Cursor>().map_err(|_| {
            Rejection::invalid(
                "Last-Event-ID",
                "must be a cursor TX:POSITION, as sent in `id`",
            )
        });
    }
    match &q.after {
        Some(a) => a.parse(),
        None => Ok(Cursor::START),
    }
}

#[utoipa::path(get, path = "/v1/events/stream", operation_id = "streamEvents", tag = "reads",
    params(StreamQuery, ResumeHeader),
    responses((status = 200, description = "Server-Sent Events, endless: each event's `id` is its cursor and its `data` the event as `GET /v1/events` shows it; a `: heartbeat` comment when quiet. Reconnect with `Last-Event-ID` to resume.",
               content_type = "text/event-stream", body = String)),
    security(("bearer" = [])))]
pub async fn events_stream(
    State(s): State<AppState>,
    _: Can<ToAudit>,
    resume: ResumeHeader,
    ApiQuery(q): ApiQuery<StreamQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let after = start(resume, &q)?;
    let permit = s
        .subscribers
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::unavailable("too many event-stream subscribers"))?;
    let feed = Feed {
        store: s.store.clone(),
        after,
        buffered: VecDeque::new(),
        closing: s.closing.clone(),
        _permit: permit,
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
    /// Held while the stream lives: a subscriber slot.
    _permit: OwnedSemaphorePermit,
}

impl Feed {
    /// The next event, waiting for one to be committed; `None` ends the
    /// stream (the server shuts down, or the log cannot be read: the client
    /// reconnects with `Last-Event-ID`).
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
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
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(EVENT_STREAM_POLL_MS)) => {}
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
}
