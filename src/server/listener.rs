//! Accepting connections, with the caps and deadlines that `axum::serve`
//! lacks: a client that trickles its headers, opens a connection and sends
//! nothing, or leaves a keep-alive connection idle cannot keep it; one client
//! address cannot take every connection; and a shutdown closes idle and
//! half-sent connections at once instead of waiting for them.
//!
//! Each connection is served by hyper's HTTP/1.1 server and watched by its
//! own task: a request head must arrive within `header_read_timeout` of its
//! first byte; a connection with nothing under way for `idle_timeout` is
//! closed; on shutdown it is closed at once if no request is in flight, else
//! allowed to finish the one it is answering.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;
use tracing::{debug, warn};

use crate::limits::UNAVAILABLE_RETRY_AFTER_SECONDS;
use crate::limits::{
    ACCEPT_ERROR_PAUSE_MS, DEFAULT_HEADER_READ_TIMEOUT_MS, DEFAULT_IDLE_CONNECTION_TIMEOUT_MS,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, FILE_DESCRIPTORS_RESERVED,
    MAX_CONNECTION_SHARE_PER_ADDRESS, MIN_CLIENT_CONNECTIONS,
};
use crate::store::error::UNAVAILABLE;

/// The caps and deadlines of the HTTP listener.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Open client connections at most; past it new ones are refused at once.
    pub max_connections: usize,
    /// Open connections from one client address at most.
    pub max_per_address: usize,
    /// A request's headers must arrive within this time.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed.
    pub idle_timeout: Duration,
}

impl ConnectionLimits {
    /// The cap on one address's connections: `max_per_address`, but never
    /// more than a share of the total (`MAX_CONNECTION_SHARE_PER_ADDRESS`),
    /// and at least one. The total may have been lowered to fit the
    /// open-files limit below the per-address cap; one address must still
    /// leave room for the others.
    pub fn per_address_cap(&self) -> usize {
        self.max_per_address
            .min(self.max_connections / MAX_CONNECTION_SHARE_PER_ADDRESS)
            .max(1)
    }
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_per_address: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
            header_read_timeout: Duration::from_millis(DEFAULT_HEADER_READ_TIMEOUT_MS),
            idle_timeout: Duration::from_millis(DEFAULT_IDLE_CONNECTION_TIMEOUT_MS),
        }
    }
}

/// Raises this process's soft limit on open files to its hard limit, and
/// returns the connection cap that fits under it (`wanted`, or less, keeping
/// `FILE_DESCRIPTORS_RESERVED` for the database pool, logs and the like).
/// Refused when the limit leaves fewer than `MIN_CLIENT_CONNECTIONS`: a
/// server with room for a handful of connections is one idle client away
/// from serving nobody, and should not start as if it were fine.
pub fn fit_to_open_files_limit(wanted: usize) -> std::io::Result<usize> {
    let limit = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(e) => {
            warn!(error = %e, "cannot read or raise the open-files limit");
            return Ok(wanted);
        }
    };
    let cap = connection_cap(limit, wanted)?;
    if cap < wanted {
        warn!(
            open_files_limit = limit,
            wanted, cap, "the open-files limit is low; lowering the connection cap to fit"
        );
    }
    Ok(cap)
}

/// The connection cap under an open-files `limit` (see
/// `fit_to_open_files_limit`).
pub fn connection_cap(limit: u64, wanted: usize) -> std::io::Result<usize> {
    let room = usize::try_from(limit)
        .unwrap_or(usize::MAX)
        .saturating_sub(FILE_DESCRIPTORS_RESERVED);
    let floor = MIN_CLIENT_CONNECTIONS.min(wanted);
    if room < floor {
        let need = FILE_DESCRIPTORS_RESERVED + floor;
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "the open-files limit is {limit}, which leaves room for {room} client connections \
                 ({FILE_DESCRIPTORS_RESERVED} descriptors are kept for the database and the server); \
                 raise it to at least {need} (ulimit -n, or LimitNOFILE= in a systemd unit)"
            ),
        ));
    }
    Ok(wanted.min(room))
}

/// Serves `app` on `listener` until `shutdown` fires, then closes idle and
/// half-sent connections at once and waits for the requests in flight.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    assert!(
        limits.max_connections >= 1 && limits.max_per_address >= 1,
        "connection caps must allow a connection"
    );
    let total = Arc::new(Semaphore::new(limits.max_connections));
    let addresses = PerAddress::new(limits.per_address_cap());
    let connections = TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors or the like: pause instead of
                    // spinning; connections that end free what is needed.
                    warn!(error = %e, "accept failed; pausing");
                    tokio::time::sleep(Duration::from_millis(ACCEPT_ERROR_PAUSE_MS)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = total.clone().try_acquire_owned() else {
            refuse(&stream, "the server has as many connections as it takes");
            continue;
        };
        let Some(seat) = addresses.enter(peer.ip()) else {
            refuse(&stream, "this address has as many connections as it may");
            continue;
        };
        let _ = stream.set_nodelay(true);
        connections.spawn(connection(
            stream,
            peer,
            app.clone(),
            limits,
            shutdown.clone(),
            (permit, seat),
        ));
    }
    drop(listener);
    connections.close();
    connections.wait().await;
    Ok(())
}

/// Answers a refused connection with a 503 if its socket takes it at once
/// (never waiting on the client), then closes it.
fn refuse(stream: &TcpStream, why: &str) {
    let body = serde_json::json!({"code": UNAVAILABLE, "message": why, "details": {}}).to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nx-content-type-options: nosniff\r\ncache-control: no-store\r\nretry-after: {UNAVAILABLE_RETRY_AFTER_SECONDS}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(response.as_bytes());
    debug!(why, "connection refused");
}

/// Lets a handler close the connection its request came on: an answer that
/// streams (`/v1/events/stream`) must be able to end when its client stopped
/// reading, and then the body is not polled, so it cannot end itself. The
/// listener puts one in every request's extensions.
#[derive(Clone, Debug)]
pub struct ConnectionCloser(CancellationToken);

impl ConnectionCloser {
    /// Closes the connection now, whatever it is doing.
    pub fn close(&self) {
        self.0.cancel();
    }
}

/// Requests in flight on one connection, when the last one ended, and when
/// the first byte of the next request's head arrived.
struct Activity {
    in_flight: AtomicUsize,
    since: Mutex<Instant>,
    head_started: Mutex<Option<Instant>>,
}

impl Activity {
    fn idle_since(&self) -> Option<Instant> {
        (self.in_flight.load(Ordering::Acquire) == 0)
            .then(|| *self.since.lock().expect("activity lock"))
    }

    /// When the connection must be closed if nothing changes: a request head
    /// under way gets the header timeout from its first byte; a connection
    /// with nothing under way gets the idle timeout. `None` while a request
    /// is being answered.
    fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
        let since = self.idle_since()?;
        Some(match *self.head_started.lock().expect("activity lock") {
            Some(first_byte) => first_byte + limits.header_read_timeout,
            None => since + limits.idle_timeout,
        })
    }

    fn bytes_arrived(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            self.head_started
                .lock()
                .expect("activity lock")
                .get_or_insert_with(Instant::now);
        }
    }
}

/// The client's socket, noting when bytes of a request head arrive.
struct Tracked {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl tokio::io::AsyncRead for Tracked {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.bytes_arrived();
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Tracked {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write(cx, data)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Counts a request in flight until it is dropped (answered or abandoned).
struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        *activity.head_started.lock().expect("activity lock") = None;
        InFlight(activity.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        *self.0.since.lock().expect("activity lock") = Instant::now();
        *self.0.head_started.lock().expect("activity lock") = None;
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    _held: (OwnedSemaphorePermit, Seat),
) {
    let activity = Arc::new(Activity {
        in_flight: AtomicUsize::new(0),
        since: Mutex::new(Instant::now()),
        head_started: Mutex::new(None),
    });
    let closer = CancellationToken::new();
    let service = service(app, peer, activity.clone(), closer.clone());
    // hyper's own header timer would also run between keep-alive requests,
    // making the idle timeout meaningless; the watch below keeps both apart.
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .keep_alive(true);
    let io = Tracked {
        stream,
        activity: activity.clone(),
    };
    let conn = builder.serve_connection(TokioIo::new(io), service);
    let mut conn = std::pin::pin!(conn);
    let mut draining = false;
    loop {
        let wake = activity
            .deadline(&limits)
            .unwrap_or_else(|| Instant::now() + limits.idle_timeout);
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(e) = served {
                    debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            _ = closer.cancelled() => {
                debug!(%peer, "closing a connection its handler gave up on");
                return;
            }
            _ = shutdown.cancelled(), if !draining => {
                if activity.idle_since().is_some() {
                    return; // idle or half-sent: nothing to finish
                }
                conn.as_mut().graceful_shutdown();
                draining = true;
            }
            _ = tokio::time::sleep_until(wake) => {
                if activity.deadline(&limits).is_some_and(|d| d <= Instant::now()) {
                    debug!(%peer, "closing an idle or slow connection");
                    return;
                }
            }
        }
    }
}

/// The app, as hyper calls it for each request of one connection. The
/// request counts as in flight until its body has been sent (hyper drops the
/// body then), so a shutdown never cuts an answer that is still being written.
fn service(
    app: Router,
    peer: SocketAddr,
    activity: Arc<Activity>,
    closer: CancellationToken,
) -> impl hyper::service::Service<
    hyper::Request<Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl std::future::Future<
        Output = Result<axum::response::Response, std::convert::Infallible>,
    > + Send,
> + Clone {
    hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        let guard = InFlight::new(&activity);
        req.extensions_mut().insert(ConnectInfo(peer));
        req.extensions_mut()
            .insert(ConnectionCloser(closer.clone()));
        let app = app.clone();
        async move {
            let response = app.oneshot(req.map(axum::body::Body::new)).await;
            response.map(|r| {
                r.map(|body| {
                    axum::body::Body::new(Guarded {
                        body,
                        _guard: guard,
                    })
                })
            })
        }
    })
}

/// Open connections per client address.
#[derive(Clone)]
struct PerAddress {
    cap: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection's place in its address's count; freed when dropped.
struct Seat {
    ip: IpAddr,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl PerAddress {
    fn new(cap: usize) -> Self {
        PerAddress {
            cap,
            open: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn enter(&self, ip: IpAddr) -> Option<Seat> {
        let mut open = self.open.lock().expect("per-address lock");
        let n = open.entry(ip).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(Seat {
            ip,
            open: self.open.clone(),
        })
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut open = self.open.lock().expect("per-address lock");
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// A response body that keeps its request counted as in flight until it has
/// been sent or dropped.
struct Guarded {
    body: axum::body::Body,
    _guard: InFlight,
}

impl http_body::Body for Guarded {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(max_connections: usize, max_per_address: usize) -> usize {
        ConnectionLimits {
            max_connections,
            max_per_address,
            ..ConnectionLimits::default()
        }
        .per_address_cap()
    }

    /// One row per outcome: the limit leaves room for the connections
    /// wanted, for fewer (lowered), or for fewer than the floor (refused);
    /// a wanted cap below the floor is its own floor.
    #[test]
    fn the_connection_cap_fits_the_open_files_limit_or_refuses() {
        let reserved = FILE_DESCRIPTORS_RESERVED as u64;
        let floor = MIN_CLIENT_CONNECTIONS as u64;
        let cases: &[(u64, usize, Option<usize>)] = &[
            (1_048_576, 4_096, Some(4_096)),
            (1_024, 4_096, Some(1_024 - FILE_DESCRIPTORS_RESERVED)),
            (reserved + floor, 4_096, Some(MIN_CLIENT_CONNECTIONS)),
            (reserved + floor - 1, 4_096, None),
            (259, 4_096, None),
            (0, 4_096, None),
            (reserved + 2, 2, Some(2)),
            (reserved + 1, 2, None),
        ];
        for &(limit, wanted, cap) in cases {
            let got = connection_cap(limit, wanted);
            assert_eq!(got.as_ref().ok().copied(), cap, "{limit} {wanted}: {got:?}");
        }
        let why = connection_cap(259, 4_096).unwrap_err().to_string();
        assert!(why.contains("raise it to at least"), "{why}");
    }

    #[test]
    fn one_address_gets_a_share_of_the_total_at_most() {
        // The defaults are unchanged.
        assert_eq!(caps(4_096, 1_024), 1_024);
        // An open-files limit of 1,024 lowers the total below the
        // per-address cap: one address gets a quarter, not all of it.
        let lowered = 1_024 - FILE_DESCRIPTORS_RESERVED;
        assert_eq!(caps(lowered, 1_024), lowered / 4);
        assert!(caps(lowered, 1_024) < lowered);
        // A smaller per-address cap stands; a tiny total still allows one.
        assert_eq!(caps(40, 8), 8);
        assert_eq!(caps(3, 1_024), 1);
        assert_eq!(caps(1, 1), 1);
    }
}
