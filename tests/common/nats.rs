//! A private `nats-server` with JetStream for one test: its own port and
//! store directory, so a test can stop, restart or cut it without touching
//! anything else. Needs `nats-server` on PATH (`.ci/run` installs Debian's).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use stockledger::domain::RecordedEvent;
use stockledger::relay;
use stockledger::store::{Cursor, Store};

pub struct NatsServer {
    pub port: u16,
    store: PathBuf,
    child: Option<Child>,
}

impl NatsServer {
    pub async fn start() -> NatsServer {
        let port = super::free_port();
        let store = std::env::temp_dir().join(format!("sl-nats-{}-{port}", std::process::id()));
        let mut s = NatsServer {
            port,
            store,
            child: None,
        };
        s.resume().await;
        s
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts the server again on the same port and store (after `kill`).
    pub async fn resume(&mut self) {
        assert!(self.child.is_none(), "the server runs already");
        let child = Command::new("nats-server")
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-sd",
            ])
            .arg(&self.store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server on PATH (apt install nats-server)");
        self.child = Some(child);
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("nats-server did not start on port {}", self.port);
    }

    /// Kills the server at once (SIGKILL): what it acknowledged is on disk.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub async fn client(&self) -> async_nats::jetstream::Context {
        let c = async_nats::connect(self.url()).await.unwrap();
        async_nats::jetstream::new(c)
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

/// The event relay of `db`, publishing to `nats`, as a task until cancelled.
pub async fn start_relay(
    db: &super::TestDb,
    nats: &NatsServer,
    config: stockledger::relay::RelayConfig,
) -> (
    tokio_util::sync::CancellationToken,
    tokio::task::JoinHandle<Result<(), stockledger::relay::RelayError>>,
) {
    let client = stockledger::relay::connect(&nats.url()).await.unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(stockledger::relay::run(
        db.store.clone(),
        stockledger::relay::context(client),
        config,
        cancel.clone(),
    ));
    (cancel, task)
}

/// Every event of the log, in safe commit order.
pub async fn log(store: &Store) -> Vec<RecordedEvent> {
    let mut all = Vec::new();
    let mut after = Cursor::START;
    loop {
        let page = store.log_batch(after, 10_000).await.unwrap();
        if page.events.is_empty() {
            return all;
        }
        after = page.next;
        all.extend(page.events);
    }
}

/// The message ids of the broker stream `stream`, each with the cursor its
/// payload carries, in stream order.
pub async fn stream_ids(nats: &NatsServer, stream: &str) -> Vec<String> {
    stream_ids_at(&nats.url(), stream).await
}

/// `stream_ids` from the server (or servers, comma-separated) at `url`.
/// Panics if the broker cannot answer; a cluster mid-election is read with
/// `try_stream_ids_at`.
pub async fn stream_ids_at(url: &str, stream: &str) -> Vec<String> {
    try_stream_ids_at(url, stream)
        .await
        .unwrap_or_else(|e| panic!("reading stream {stream}: {e}"))
}

/// `stream_ids_at`, or the broker's error. A JetStream cluster answers 503
/// ("temporarily unavailable") while it elects a stream leader, which a
/// test waiting for the stream treats as "not yet", not as a failure.
pub async fn try_stream_ids_at(url: &str, stream: &str) -> Result<Vec<String>, String> {
    let js = jetstream_at(url).await;
    let Ok(mut s) = js.get_stream(stream).await else {
        return Ok(Vec::new());
    };
    let state = s.info().await.map_err(|e| e.to_string())?.state.clone();
    let mut ids = Vec::new();
    for seq in state.first_sequence..=state.last_sequence {
        if state.messages == 0 {
            break;
        }
        let m = s.get_raw_message(seq).await.map_err(|e| e.to_string())?;
        let id = m
            .headers
            .get(async_nats::header::NATS_MESSAGE_ID)
            .expect("every relayed message carries its id")
            .as_str()
            .to_owned();
        let cursor = relay::cursor_of(&m.payload).expect("a payload with its cursor");
        ids.push(format!("{id}@{cursor}"));
    }
    Ok(ids)
}

/// What `stream_ids` must give for `log`.
pub fn expected(log: &[RecordedEvent]) -> Vec<String> {
    log.iter()
        .map(|e| format!("{}@{}", relay::message_id(e), Cursor::of(e)))
        .collect()
}

/// Waits until the broker stream holds the whole log exactly: every event
/// once, in commit order, with no gap. The log is read again each time, as
/// the server's workers (expiry) may still be adding to it; a stream with a
/// duplicate, a gap or a wrong order never matches, and the wait's hang guard
/// fails the test.
pub async fn assert_exact(store: &Store, nats: &NatsServer, stream: &str) {
    assert_exact_at(store, &nats.url(), stream).await
}

/// `assert_exact` against the server (or servers) at `url`.
pub async fn assert_exact_at(store: &Store, url: &str, stream: &str) {
    super::eventually("the stream holds the log exactly, in order", || async {
        let want = expected(&log(store).await);
        let Ok(got) = try_stream_ids_at(url, stream).await else {
            return false; // A leader is being elected.
        };
        assert!(
            got.iter().zip(&want).all(|(g, w)| g == w),
            "the stream departs from the log: {got:?} against {want:?}"
        );
        got == want
    })
    .await;
}

/// Three `nats-server`s with JetStream in one cluster (routes between them,
/// each its own client port and store), for one test: a server can be killed
/// and started again on the same ports and store.
pub struct NatsCluster {
    pub client_ports: [u16; 3],
    route_ports: [u16; 3],
    store: PathBuf,
    children: [Option<Child>; 3],
}

impl NatsCluster {
    pub async fn start() -> NatsCluster {
        let ports = || [super::free_port(), super::free_port(), super::free_port()];
        let (client_ports, route_ports) = (ports(), ports());
        let store = std::env::temp_dir().join(format!(
            "sl-nats-cluster-{}-{}",
            std::process::id(),
            client_ports[0]
        ));
        let mut c = NatsCluster {
            client_ports,
            route_ports,
            store,
            children: [None, None, None],
        };
        for n in 0..3 {
            c.resume(n).await;
        }
        c
    }

    /// Every server's URL, comma-separated, as clients take them.
    pub fn url(&self) -> String {
        self.client_ports
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Server `n`'s name in the cluster (`s0`, `s1`, `s2`).
    pub fn name(n: usize) -> String {
        format!("s{n}")
    }

    /// Starts server `n` (again, after `kill`).
    pub async fn resume(&mut self, n: usize) {
        assert!(self.children[n].is_none(), "server {n} runs already");
        let routes = (0..3)
            .filter(|&m| m != n)
            .map(|m| format!("nats://127.0.0.1:{}", self.route_ports[m]))
            .collect::<Vec<_>>()
            .join(",");
        let child = Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p"])
            .arg(self.client_ports[n].to_string())
            .args(["-n", &Self::name(n), "--cluster_name", "sl-test"])
            .arg("--cluster")
            .arg(format!("nats://127.0.0.1:{}", self.route_ports[n]))
            .arg("--routes")
            .arg(routes)
            .arg("-sd")
            .arg(self.store.join(Self::name(n)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server on PATH (apt install nats-server)");
        self.children[n] = Some(child);
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.client_ports[n]))
                .await
                .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("nats-server {n} did not start");
    }

    /// Kills server `n` at once (SIGKILL).
    pub fn kill(&mut self, n: usize) {
        if let Some(mut c) = self.children[n].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub async fn client(&self) -> async_nats::jetstream::Context {
        jetstream_at(&self.url()).await
    }
}

/// A JetStream context on the server (or servers, comma-separated) at `url`.
pub async fn jetstream_at(url: &str) -> async_nats::jetstream::Context {
    let servers: Vec<&str> = url.split(',').collect();
    async_nats::jetstream::new(async_nats::connect(servers).await.unwrap())
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for n in 0..3 {
            self.kill(n);
        }
        let _ = std::fs::remove_dir_all(&self.store);
    }
}
