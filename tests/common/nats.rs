//! A private `nats-server` with JetStream for one test: its own port and
//! store directory, so a test can stop, restart or cut it without touching
//! anything else. Needs `nats-server` on PATH (`.ci/run` installs Debian's).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

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
