//! The event relay: every committed event, in safe commit order, published
//! exactly once to a NATS JetStream stream.
//!
//! The log is the outbox. Events below the safe horizon are final and
//! ordered by (transaction id, position) (`store::read`), so the relay only
//! has to turn that order into a broker stream without loss or duplicate:
//!
//! - **Where it stands is the broker's last message.** On start (and after
//!   any failure) the relay reads the stream's last message: its
//!   `Nats-Msg-Id` and the cursor in its payload say what was published
//!   last. It resumes after that cursor. Its own checkpoint row
//!   (`relay_checkpoints`) is for status, lag, and one check: a stream that
//!   had events and is now missing or empty was deleted or purged, and the
//!   relay stops with `StreamLost` rather than republish from zero in
//!   silence (unless told to, `republish`).
//! - **Each message names its predecessor.** A message carries
//!   `Nats-Msg-Id = <stream>:<seq>` and `Nats-Expected-Last-Msg-Id` = the id
//!   of the message before it (`Nats-Expected-Last-Sequence` for the first).
//!   The broker appends it only if the stream's last message is that one.
//!   So a second relay, or a replay after a crash, can never append a
//!   duplicate or fork the order, whatever the deduplication window: a
//!   message already there is acknowledged as a duplicate, and one that
//!   does not follow the stream's end is refused, after which the relay
//!   reads where the stream stands and goes on from there.
//! - **Acknowledgements are pipelined.** A batch is published in full, then
//!   its acknowledgements are awaited: one round trip per batch.
//!
//! One relay runs per broker stream and database: it holds a session
//! advisory lock on its own connection, like the projection workers; a
//! second one waits. The chained message ids keep even a doubled relay exact.

mod checkpoint;
mod message;
mod stand;
pub mod url;

use std::time::Duration;

use async_nats::jetstream::{self, context::PublishErrorKind, message::PublishMessage};
use deadpool_postgres::ClientWrapper;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

pub use checkpoint::{published, reset as forget, status, RelayStatus};
pub use message::{cursor_of, message_id, payload, subject};
pub use stand::Stand;

use crate::limits::{
    DEFAULT_RELAY_STREAM, DEFAULT_RELAY_SUBJECT_PREFIX, MAX_RELAY_NAME_LEN,
    MAX_RELAY_STREAM_REPLICAS, RELAY_ACK_TIMEOUT_MS, RELAY_BATCH_EVENTS, RELAY_MAX_ACKS_IN_FLIGHT,
    RELAY_POLL_INTERVAL_MS, RELAY_REQUEST_TIMEOUT_MS, RELAY_RETRY_BACKOFF_MAX_MS,
    RELAY_RETRY_BACKOFF_START_MS,
};
use crate::store::locks::{Lock, TRY_SESSION_LOCK};
use crate::store::{pool, Store, StoreError};

#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// The JetStream stream (created if absent).
    pub stream: String,
    /// Subjects are `<prefix>.<event type>.<key>`.
    pub subject_prefix: String,
    /// Publish the whole log again when the stream was deleted or purged.
    pub republish: bool,
    /// Hold the runner lock (one relay per stream and database). Only tests
    /// of the broker-side guard turn it off.
    pub exclusive: bool,
    pub batch_events: i64,
    pub poll_interval: Duration,
    /// Copies of the stream a JetStream cluster keeps, when the relay creates
    /// it (1 to `MAX_RELAY_STREAM_REPLICAS`; an existing stream keeps its
    /// own). With 3, an acknowledged message survives the loss of any one
    /// server, the stream's leader included.
    pub replicas: usize,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            stream: DEFAULT_RELAY_STREAM.to_owned(),
            subject_prefix: DEFAULT_RELAY_SUBJECT_PREFIX.to_owned(),
            republish: false,
            exclusive: true,
            batch_events: RELAY_BATCH_EVENTS,
            poll_interval: Duration::from_millis(RELAY_POLL_INTERVAL_MS),
            replicas: 1,
        }
    }
}

impl RelayConfig {
    fn validate(&self) -> Result<(), RelayError> {
        let name_ok = |s: &str, extra: &[char]| {
            !s.is_empty()
                && s.len() <= MAX_RELAY_NAME_LEN
                && s.chars().all(|c| {
                    c.is_ascii_alphanumeric() || c == '_' || c == '-' || extra.contains(&c)
                })
        };
        if !(1..=MAX_RELAY_STREAM_REPLICAS).contains(&self.replicas) {
            return Err(RelayError::Config(format!(
                "a stream keeps 1 to {MAX_RELAY_STREAM_REPLICAS} replicas"
            )));
        }
        if !name_ok(&self.stream, &[]) {
            return Err(RelayError::Config(format!(
                "the stream name must be 1 to {MAX_RELAY_NAME_LEN} of A-Z a-z 0-9 _ -"
            )));
        }
        if !name_ok(&self.subject_prefix, &['.'])
            || self.subject_prefix.split('.').any(str::is_empty)
        {
            return Err(RelayError::Config(format!(
                "the subject prefix must be 1 to {MAX_RELAY_NAME_LEN} of A-Z a-z 0-9 _ - in tokens separated by single dots"
            )));
        }
        if !(1..=RELAY_BATCH_EVENTS).contains(&self.batch_events) {
            return Err(RelayError::Config(format!(
                "the batch must be 1 to {RELAY_BATCH_EVENTS} events"
            )));
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(
        "the broker stream {stream} is missing or empty, but {published} events were published \
         to it before: it was deleted or purged. Start the relay with --republish to publish \
         the whole log to it again"
    )]
    StreamLost { stream: String, published: i64 },
    #[error("the last message of broker stream {0} was not published by a stockledger relay (it carries no cursor)")]
    ForeignMessage(String),
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("broker: {0}")]
    Broker(String),
}

impl RelayError {
    /// Whether trying again later can help.
    pub fn is_retryable(&self) -> bool {
        match self {
            RelayError::Store(e) => e.is_retryable(),
            RelayError::Broker(_) => true,
            RelayError::StreamLost { .. }
            | RelayError::ForeignMessage(_)
            | RelayError::Config(_) => false,
        }
    }
}

fn broker(e: impl std::fmt::Display) -> RelayError {
    RelayError::Broker(e.to_string())
}

/// A connection to the broker that keeps trying: a broker down at start or
/// later is waited for (the client reconnects by itself), never a reason to
/// stop.
pub async fn connect(url: &str) -> Result<async_nats::Client, RelayError> {
    // Credentials go to the client as options, never inside the URL (see
    // `url`): it would log them, and would not use them.
    let (servers, credentials) = self::url::split(url);
    let options = match credentials {
        Some(self::url::Credentials::User { user, password }) => {
            async_nats::ConnectOptions::with_user_and_password(user, password)
        }
        Some(self::url::Credentials::Token(token)) => async_nats::ConnectOptions::with_token(token),
        None => async_nats::ConnectOptions::new(),
    };
    options
        .name("stockledger-relay")
        .connection_timeout(Duration::from_millis(RELAY_REQUEST_TIMEOUT_MS))
        .request_timeout(Some(Duration::from_millis(RELAY_REQUEST_TIMEOUT_MS)))
        .retry_on_initial_connect()
        // One address per server: the client reads a single string as one
        // address, so a list in one string would not parse.
        .connect(servers.split(',').collect::<Vec<&str>>())
        .await
        .map_err(|e| {
            RelayError::Config(format!(
                "cannot use NATS at {}: {e}",
                self::url::redacted(url)
            ))
        })
}

/// The JetStream context the relay publishes through.
pub fn context(client: async_nats::Client) -> jetstream::Context {
    jetstream::ContextBuilder::new()
        .timeout(Duration::from_millis(RELAY_ACK_TIMEOUT_MS))
        .max_ack_inflight(RELAY_MAX_ACKS_IN_FLIGHT)
        .build(client)
}

/// Runs the relay until `cancel` fires (a batch under way is finished) or a
/// failure that waiting cannot mend (`StreamLost`, a foreign message, a bad
/// setting). Broker and database outages are waited out, with back-off;
/// meanwhile the backlog stays in the log and the lag grows.
pub async fn run(
    store: Store,
    js: jetstream::Context,
    config: RelayConfig,
    cancel: CancellationToken,
) -> Result<(), RelayError> {
    config.validate()?;
    let mut backoff = Duration::from_millis(RELAY_RETRY_BACKOFF_START_MS);
    while !cancel.is_cancelled() {
        let lock = if config.exclusive {
            match become_runner(&store, &config.stream).await {
                Ok(Some(c)) => Some(c),
                Ok(None) => {
                    idle(config.poll_interval, &cancel).await;
                    continue;
                }
                Err(e) if e.is_retryable() => {
                    warn!(error = %e, "cannot reach the database; will retry");
                    idle(config.poll_interval, &cancel).await;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        } else {
            None
        };
        match run_attached(&store, &js, &config, &cancel).await {
            Ok(()) => return Ok(()),
            Err(e) if !e.is_retryable() => return Err(e),
            Err(e) => {
                warn!(stream = %config.stream, error = %e, "relay interrupted; will find where the stream stands and go on")
            }
        }
        drop(lock);
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = cancel.cancelled() => {}
        }
        backoff = (backoff * 2).min(Duration::from_millis(RELAY_RETRY_BACKOFF_MAX_MS));
    }
    Ok(())
}

async fn idle(poll: Duration, cancel: &CancellationToken) {
    tokio::select! {
        _ = tokio::time::sleep(poll) => {}
        _ = cancel.cancelled() => {}
    }
}

/// Tries to become the one relay of `stream` for this database. Like the
/// projection workers: tried on a pooled connection, and only a connection
/// that got the lock is taken out of the pool, so the lock dies with it.
async fn become_runner(store: &Store, stream: &str) -> Result<Option<ClientWrapper>, StoreError> {
    let client = pool::get(store.pool()).await?;
    let got: bool = client
        .query_one(TRY_SESSION_LOCK, &[&Lock::Relay(stream).name()])
        .await?
        .get(0);
    Ok(got.then(|| deadpool_postgres::Object::take(client)))
}

/// Finds where the stream stands, then publishes until cancelled or a
/// failure.
async fn run_attached(
    store: &Store,
    js: &jetstream::Context,
    config: &RelayConfig,
    cancel: &CancellationToken,
) -> Result<(), RelayError> {
    let mut at = stand::find(store, js, config).await?;
    info!(stream = %config.stream, cursor = %at.cursor, published = at.sequence, "relay running");
    let mut page = store.log_batch(at.cursor, config.batch_events).await?;
    while !cancel.is_cancelled() {
        if page.events.is_empty() {
            idle(config.poll_interval, cancel).await;
            page = store.log_batch(at.cursor, config.batch_events).await?;
            continue;
        }
        // The next batch is read while this one is published and
        // acknowledged: its cursor is known already, and reading and
        // publishing use different servers.
        let started = std::time::Instant::now();
        let (published, next) = tokio::join!(
            publish(js, config, at.clone(), &page.events),
            store.log_batch(page.next, config.batch_events)
        );
        at = published?;
        checkpoint::save(store, &config.stream, &at).await?;
        debug!(
            events = page.events.len(),
            millis = started.elapsed().as_secs_f64() * 1e3,
            "relay batch published and acknowledged"
        );
        page = next?;
    }
    Ok(())
}

/// Publishes `events` after `at`, every message naming its predecessor,
/// then awaits every acknowledgement.
async fn publish(
    js: &jetstream::Context,
    config: &RelayConfig,
    at: Stand,
    events: &[crate::domain::RecordedEvent],
) -> Result<Stand, RelayError> {
    let mut acks = Vec::with_capacity(events.len());
    let mut last = at.last_msg_id.clone();
    for e in events {
        let id = message_id(e);
        let body = serde_json::to_vec(&payload(e)).expect("JSON serialises");
        let m = PublishMessage::build().payload(body.into()).message_id(&id);
        let m = match &last {
            Some(prev) => m.expected_last_message_id(prev),
            None => m.expected_last_sequence(at.sequence),
        };
        acks.push(
            js.send_publish(subject(&config.subject_prefix, e), m)
                .await
                .map_err(broker)?,
        );
        last = Some(id);
    }
    let mut sequence = at.sequence;
    for ack in acks {
        match ack.await {
            Ok(a) => sequence = sequence.max(a.sequence),
            Err(e) if e.kind() == PublishErrorKind::StreamNotFound => {
                return Err(RelayError::Broker(format!(
                    "stream {} is gone: {e}",
                    config.stream
                )))
            }
            Err(e) => return Err(broker(e)),
        }
    }
    let end = events.last().expect("a batch is not empty");
    Ok(Stand {
        cursor: crate::store::Cursor::of(end),
        last_msg_id: last,
        sequence,
    })
}
