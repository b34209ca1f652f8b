//! The HTTP way in: the real server, in this process on a pool of its own,
//! in development mode with its projection and expiry workers off, and the
//! client that drives it over loopback.

use std::future::Future;

use serde_json::{json, Value};
use stockledger::domain::Command;
use stockledger::server::{serve, ServerConfig};
use stockledger::store::{pool, Store};
use stockledger_bench::load::Sent;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Idle connections the client keeps to the server: more than any run's
/// callers, so every caller keeps its own.
const CLIENT_IDLE_CONNECTIONS: usize = 1024;

/// The running server.
pub struct HttpTarget {
    sender: HttpSender,
    shutdown: CancellationToken,
    server: JoinHandle<std::io::Result<()>>,
}

/// A client of the server; clones share its connections.
#[derive(Clone)]
pub struct HttpSender {
    /// `http://127.0.0.1:PORT`
    base: String,
    client: reqwest::Client,
}

impl HttpTarget {
    /// Starts the server on a free loopback port, on its own pool of
    /// `pool_size` connections to `config`.
    pub async fn start(
        config: &tokio_postgres::Config,
        pool_size: usize,
    ) -> anyhow::Result<HttpTarget> {
        let store = Store::new(pool::build(config.clone(), pool_size)?);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let shutdown = CancellationToken::new();
        let server_config = ServerConfig {
            dev: true,
            run_projections: false,
            run_expiry: false,
            // No rate limit: the benchmark is the only caller.
            rate_limit_per_second: u32::MAX / 2,
            rate_limit_burst: u32::MAX / 2,
            ..Default::default()
        };
        let server = tokio::spawn(serve(
            listener,
            store,
            config.clone(),
            server_config,
            shutdown.clone(),
        ));
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(CLIENT_IDLE_CONNECTIONS)
            .build()?;
        Ok(HttpTarget {
            sender: HttpSender { base, client },
            shutdown,
            server,
        })
    }

    pub fn sender(&self) -> HttpSender {
        self.sender.clone()
    }

    /// Shuts the server down and waits for it.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = self.server.await;
    }
}

impl HttpSender {
    /// Sends `cmd`: a 2xx is done, a 4xx a refusal, anything else a failure.
    pub fn send(&self, cmd: &Command) -> impl Future<Output = Sent> + Send + 'static {
        let (path, body) = request(cmd);
        let req = self.client.post(format!("{}{path}", self.base)).json(&body);
        async move {
            match req.send().await {
                Ok(r) if r.status().is_success() => Sent::Ok,
                Ok(r) if r.status().is_client_error() => Sent::Refused,
                _ => Sent::Failed,
            }
        }
    }
}

/// The route and JSON body of a command the benchmark sends.
fn request(cmd: &Command) -> (String, Value) {
    match cmd {
        Command::Reserve(r) => {
            let lines: Vec<Value> = r
                .lines
                .iter()
                .map(|l| json!({"sku": l.item.sku, "quantity": l.quantity}))
                .collect();
            let body = json!({"reservation_id": r.reservation_id, "order_id": r.order_id,
                              "lines": lines});
            ("/v1/reservations".into(), body)
        }
        Command::Confirm { reservation_id } => (
            format!("/v1/reservations/{reservation_id}/confirm"),
            json!({}),
        ),
        Command::Release { reservation_id, .. } => (
            format!("/v1/reservations/{reservation_id}/release"),
            json!({}),
        ),
        other => unreachable!("the benchmark sends no {}", other.kind()),
    }
}
