//! A TCP proxy between the service and PostgreSQL that breaks things on
//! purpose, for the fault tests and `stockledger chaos` (test support, in a
//! crate of its own so that the ledger's library does not ship it): hold, drop or cut the reply to a COMMIT (or cut before the COMMIT
//! reaches the server), cut every connection at once, and add latency.
//!
//! It reads the client's side of the PostgreSQL protocol just far enough to
//! see messages: the untyped startup (and SSL request) first, then typed
//! messages (`Q` is a simple query; tokio-postgres commits with
//! `Q "COMMIT"`). The server's side is relayed as raw bytes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio_util::sync::CancellationToken;

/// Bytes relayed from the server per read.
pub const PROXY_RELAY_BUFFER_BYTES: usize = 64 * 1024;

/// `CutAfter`: how long the proxy lets a passed-on COMMIT reach the server
/// before it cuts the connection.
pub const PROXY_CUT_AFTER_COMMIT_MS: u64 = 100;

/// What to do to the next COMMIT that passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitFault {
    /// Close the connection instead of passing the COMMIT on: the server
    /// never commits (the transaction aborts when it sees the connection go).
    CutBefore,
    /// Pass the COMMIT on, then close the connection before the reply.
    CutAfter,
    /// Pass the COMMIT on and hold everything the server sends back on that
    /// connection for this long.
    HoldReply(Duration),
    /// Pass the COMMIT on and never relay anything back again (the
    /// connection stays open: a black hole).
    BlackHole,
    /// Swallow the COMMIT and everything after it, keeping the connection
    /// open: the server holds the transaction open, locks and all, waiting
    /// for a COMMIT that never comes.
    Swallow,
}

/// Where the real server is.
#[derive(Clone, Debug)]
pub enum Upstream {
    Tcp(String),
    Unix(PathBuf),
}

impl Upstream {
    /// The server a `tokio_postgres::Config` points at.
    pub fn of(config: &tokio_postgres::Config) -> Upstream {
        let port = config.get_ports().first().copied().unwrap_or(5432);
        match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Unix(dir)) => {
                Upstream::Unix(dir.join(format!(".s.PGSQL.{port}")))
            }
            Some(tokio_postgres::config::Host::Tcp(host)) => {
                Upstream::Tcp(format!("{host}:{port}"))
            }
            None => Upstream::Tcp(format!("127.0.0.1:{port}")),
        }
    }
}

#[derive(Default)]
struct Control {
    armed: Mutex<Vec<CommitFault>>,
    latency: Mutex<Duration>,
    cut: Mutex<CancellationToken>,
    commits: AtomicUsize,
    statements: AtomicUsize,
    connections: AtomicUsize,
    refusing: AtomicBool,
    /// Bytes passed as they come, for a protocol other than PostgreSQL's
    /// (the HTTP server's): only cuts and refusals apply.
    raw: bool,
}

pub struct Proxy {
    pub addr: SocketAddr,
    control: Arc<Control>,
    stop: CancellationToken,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
        self.cut_all();
    }
}

impl Proxy {
    pub async fn start(upstream: Upstream) -> std::io::Result<Proxy> {
        Self::start_with(upstream, false).await
    }

    /// A proxy that passes bytes as they come, for any protocol over TCP
    /// (an HTTP server's): `cut_all` and `refuse_new` apply, the COMMIT
    /// faults and the latency do not.
    pub async fn start_bytes(upstream: Upstream) -> std::io::Result<Proxy> {
        Self::start_with(upstream, true).await
    }

    async fn start_with(upstream: Upstream, raw: bool) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let control = Arc::new(Control {
            raw,
            ..Control::default()
        });
        let stop = CancellationToken::new();
        let (c, s) = (control.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let client = tokio::select! {
                    _ = s.cancelled() => return,
                    a = listener.accept() => match a { Ok((c, _)) => c, Err(_) => continue },
                };
                if c.refusing.load(Ordering::SeqCst) {
                    continue; // dropped: connection refused in effect
                }
                c.connections.fetch_add(1, Ordering::SeqCst);
                // The cut this connection answers to is the one in force when
                // it was accepted: a `cut_all` while it is still connecting
                // upstream must end it too.
                let cut = c.cut.lock().expect("proxy state").clone();
                tokio::spawn(relay(client, upstream.clone(), c.clone(), cut));
            }
        });
        Ok(Proxy {
            addr,
            control,
            stop,
        })
    }

    /// `config` pointed at this proxy instead of the server.
    pub fn config(&self, config: &tokio_postgres::Config) -> tokio_postgres::Config {
        let mut proxied = tokio_postgres::Config::new();
        proxied.host("127.0.0.1").port(self.addr.port());
        if let Some(db) = config.get_dbname() {
            proxied.dbname(db);
        }
        if let Some(user) = config.get_user() {
            proxied.user(user);
        }
        proxied
    }

    /// The next COMMITs (one fault each, in order) meet these faults.
    pub fn on_next_commits(&self, faults: &[CommitFault]) {
        self.control
            .armed
            .lock()
            .expect("proxy state")
            .extend_from_slice(faults);
    }

    /// Closes every connection open now.
    pub fn cut_all(&self) {
        let mut cut = self.control.cut.lock().expect("proxy state");
        cut.cancel();
        *cut = CancellationToken::new();
    }

    /// Refuses (closes at once) every new connection while set.
    pub fn refuse_new(&self, refuse: bool) {
        self.control.refusing.store(refuse, Ordering::SeqCst);
    }

    /// Delay added to everything the server sends.
    pub fn set_latency(&self, latency: Duration) {
        *self.control.latency.lock().expect("proxy state") = latency;
    }

    /// COMMITs seen so far.
    pub fn commits(&self) -> usize {
        self.control.commits.load(Ordering::SeqCst)
    }

    /// Statements the service ran (simple queries and executes).
    pub fn statements(&self) -> usize {
        self.control.statements.load(Ordering::SeqCst)
    }

    /// Connections the service opened through the proxy.
    pub fn connections(&self) -> usize {
        self.control.connections.load(Ordering::SeqCst)
    }
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

async fn connect(upstream: &Upstream) -> std::io::Result<Box<dyn Io>> {
    Ok(match upstream {
        Upstream::Tcp(addr) => {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            Box::new(stream)
        }
        Upstream::Unix(path) => Box::new(UnixStream::connect(path).await?),
    })
}

/// The reply side of one connection: hold or black-hole what the server sends.
#[derive(Default)]
struct ReplyState {
    hold_until: Mutex<Option<tokio::time::Instant>>,
    black_hole: AtomicBool,
}

async fn relay(
    client: TcpStream,
    upstream: Upstream,
    control: Arc<Control>,
    cut: CancellationToken,
) {
    // Messages are relayed one write each: without NODELAY, Nagle's
    // algorithm would hold every second one for a delayed ACK (~40 ms).
    let _ = client.set_nodelay(true);
    let Ok(server) = connect(&upstream).await else {
        return;
    };
    if cut.is_cancelled() {
        return;
    }
    if control.raw {
        let (mut client, mut server) = (client, server);
        tokio::select! {
            biased;
            _ = cut.cancelled() => {}
            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        }
        return;
    }
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = tokio::io::split(server);
    let reply = Arc::new(ReplyState::default());
    let close = CancellationToken::new();
    let upward = upward(
        client_read,
        server_write,
        control.clone(),
        reply.clone(),
        close.clone(),
    );
    let downward = downward(server_read, client_write, control, reply.clone());
    // Either side ending ends the connection, except a black hole, which
    // keeps the client waiting until it gives up or the proxy is cut. The cut
    // is polled first, so a connection cut while both sides had messages
    // ready relays none of them.
    tokio::select! {
        biased;
        _ = cut.cancelled() => {}
        _ = close.cancelled() => {}
        _ = upward => {
            if reply.black_hole.load(Ordering::SeqCst) {
                tokio::select! { _ = cut.cancelled() => {}, _ = close.cancelled() => {} }
            }
        }
        _ = downward => {}
    }
}

/// Client to server, message by message, applying the fault armed for the
/// next COMMIT.
async fn upward<R, W>(
    mut client_read: R,
    mut server_write: W,
    control: Arc<Control>,
    reply: Arc<ReplyState>,
    close: CancellationToken,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut startup = true;
    loop {
        let Ok(message) = read_message(&mut client_read, startup).await else {
            return;
        };
        if startup {
            // An SSL request is followed by the real startup message.
            startup = message.len() == 8 && message[4..8] == [0x04, 0xd2, 0x16, 0x2f];
        }
        if matches!(message.first(), Some(b'Q' | b'E')) && !startup {
            control.statements.fetch_add(1, Ordering::SeqCst);
        }
        let fault = armed_fault(&control, &message);
        match fault {
            Some(CommitFault::CutBefore) => {
                close.cancel();
                return;
            }
            Some(CommitFault::HoldReply(d)) => {
                *reply.hold_until.lock().expect("proxy state") =
                    Some(tokio::time::Instant::now() + d);
            }
            Some(CommitFault::BlackHole) => reply.black_hole.store(true, Ordering::SeqCst),
            Some(CommitFault::Swallow) => {
                reply.black_hole.store(true, Ordering::SeqCst);
                // Read and drop whatever the client sends from now on, and
                // keep the server's side open even after the client has gone,
                // as a stalled network would, until cut.
                while read_message(&mut client_read, false).await.is_ok() {}
                let _keep = server_write;
                std::future::pending::<()>().await;
                return;
            }
            Some(CommitFault::CutAfter) | None => {}
        }
        if server_write.write_all(&message).await.is_err() {
            return;
        }
        if fault == Some(CommitFault::CutAfter) {
            // Let the COMMIT reach the server, then cut before the reply.
            let _ = server_write.flush().await;
            tokio::time::sleep(Duration::from_millis(PROXY_CUT_AFTER_COMMIT_MS)).await;
            close.cancel();
            return;
        }
    }
}

/// The fault armed for this message, if it is a COMMIT (and counts it).
fn armed_fault(control: &Control, message: &[u8]) -> Option<CommitFault> {
    if !is_commit(message) {
        return None;
    }
    control.commits.fetch_add(1, Ordering::SeqCst);
    let mut armed = control.armed.lock().expect("proxy state");
    (!armed.is_empty()).then(|| armed.remove(0))
}

/// Server to client, as it comes, with the latency, hold or black hole set.
async fn downward<R, W>(
    mut server_read: R,
    mut client_write: W,
    control: Arc<Control>,
    reply: Arc<ReplyState>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; PROXY_RELAY_BUFFER_BYTES];
    loop {
        let n = match server_read.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let latency = *control.latency.lock().expect("proxy state");
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let hold = *reply.hold_until.lock().expect("proxy state");
        if let Some(until) = hold {
            tokio::time::sleep_until(until).await;
        }
        if reply.black_hole.load(Ordering::SeqCst) {
            continue;
        }
        if client_write.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// Reads one whole message: untyped (length first) during startup, else a
/// type byte then the length.
async fn read_message<R: AsyncRead + Unpin>(r: &mut R, untyped: bool) -> std::io::Result<Vec<u8>> {
    let mut message = Vec::new();
    if !untyped {
        let mut kind = [0u8; 1];
        r.read_exact(&mut kind).await?;
        message.push(kind[0]);
    }
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await?;
    message.extend_from_slice(&len);
    let body = (u32::from_be_bytes(len) as usize).saturating_sub(4);
    let start = message.len();
    message.resize(start + body, 0);
    r.read_exact(&mut message[start..]).await?;
    Ok(message)
}

fn is_commit(message: &[u8]) -> bool {
    message.first() == Some(&b'Q')
        && message.len() > 5
        && String::from_utf8_lossy(&message[5..])
            .trim_end_matches('\0')
            .trim()
            .eq_ignore_ascii_case("COMMIT")
}
