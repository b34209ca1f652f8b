//! A real `stockledger serve` on port 0 over a fresh database, with one key
//! per role, for the HTTP tests.

use std::collections::HashMap;
use std::time::Duration;

use stockledger::server::ServerConfig;
use stockledger::store::keys::{self, Role};
use tokio_util::sync::CancellationToken;

use super::TestDb;

pub struct TestServer {
    pub db: TestDb,
    pub base: String,
    pub http: reqwest::Client,
    pub keys: HashMap<&'static str, String>,
    pub shutdown: CancellationToken,
    pub task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// Test settings: keys are looked up every time (so revocations show at
/// once), the expiry worker runs often.
pub fn test_config() -> ServerConfig {
    ServerConfig {
        key_cache: Duration::ZERO,
        expiry_interval: Duration::from_millis(100),
        ..ServerConfig::default()
    }
}

impl TestServer {
    pub async fn start(config: ServerConfig) -> TestServer {
        let db = TestDb::new().await;
        let store = db.store.clone();
        Self::start_on(db, store, config).await
    }

    /// A server over `db` that reaches the database through `store` (for
    /// example a store whose connections pass a fault proxy).
    pub async fn start_on(
        db: TestDb,
        store: stockledger::store::Store,
        config: ServerConfig,
    ) -> TestServer {
        let mut keys = HashMap::new();
        // Keys are minted by a key administrator (the superuser here), not
        // the service the server runs as.
        let admin = db.owner_store();
        let client = admin.pool().get().await.unwrap();
        for role in [Role::Writer, Role::Reader, Role::Auditor, Role::Admin] {
            let (_, secret) = keys::create(&client, Some(role.as_str()), role)
                .await
                .unwrap()
                .unwrap();
            keys.insert(role.as_str(), secret);
        }
        drop(client);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(stockledger::server::serve(
            listener,
            store,
            config,
            shutdown.clone(),
        ));
        TestServer {
            db,
            base,
            http: reqwest::Client::new(),
            keys,
            shutdown,
            task: Some(task),
        }
    }

    /// A request with `role`'s key (or none).
    pub fn req(
        &self,
        method: reqwest::Method,
        path: &str,
        role: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}{path}", self.base));
        match role {
            Some(role) => r.bearer_auth(&self.keys[role]),
            None => r,
        }
    }

    /// Sends `body` with the writer key; returns status and JSON.
    pub async fn post(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        let r = self
            .req(reqwest::Method::POST, path, Some("writer"))
            .json(&body)
            .send()
            .await
            .unwrap();
        (
            r.status().as_u16(),
            r.json().await.unwrap_or(serde_json::Value::Null),
        )
    }

    pub async fn get(&self, path: &str, role: &str) -> (u16, serde_json::Value) {
        let r = self
            .req(reqwest::Method::GET, path, Some(role))
            .send()
            .await
            .unwrap();
        (
            r.status().as_u16(),
            r.json().await.unwrap_or(serde_json::Value::Null),
        )
    }

    pub async fn stop(&mut self) {
        self.shutdown.cancel();
        if let Some(t) = self.task.take() {
            t.await.unwrap().unwrap();
        }
    }
}

/// Test settings without the workers, so the database hears only what a
/// test sends.
pub fn quiet_config() -> ServerConfig {
    ServerConfig {
        run_projections: false,
        run_expiry: false,
        run_sealer: false,
        ..test_config()
    }
}

/// A server whose store reaches the database through a fault proxy.
pub async fn server_behind_proxy(config: ServerConfig) -> (TestServer, fault_proxy::Proxy) {
    use fault_proxy::{Proxy, Upstream};
    let db = TestDb::new().await;
    let proxy = Proxy::start(Upstream::of(&db.config)).await.unwrap();
    let store = stockledger::store::Store::new(
        stockledger::store::pool::build(proxy.config(&db.config), 4).unwrap(),
    );
    (TestServer::start_on(db, store, config).await, proxy)
}

/// The server's address.
pub fn addr(s: &TestServer) -> std::net::SocketAddr {
    s.base.trim_start_matches("http://").parse().unwrap()
}

/// Connects to `to` from a chosen loopback address.
pub async fn connect_from(from: &str, to: std::net::SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(to).await.unwrap()
}
