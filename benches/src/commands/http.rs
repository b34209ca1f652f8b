//! The HTTP way in: the real server in a process of its own
//! (`stockledger-bench serve`, this same executable), in development mode,
//! with its projection runner, expiry worker and sealer as `stockledger
//! serve` runs them (or without them, for the figure beside), and the client
//! that drives it over loopback from this process.

use std::future::Future;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde_json::{json, Value};
use stockledger::domain::Command;
use stockledger_bench::load::Sent;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin};

/// Idle connections the client keeps to the server: more than any run's
/// callers, so every caller keeps its own.
const CLIENT_IDLE_CONNECTIONS: usize = 1024;

/// How long the server may take to start listening, and to stop.
const SERVER_START_STOP_LIMIT: Duration = Duration::from_secs(30);

/// The running server process.
pub struct HttpTarget {
    sender: HttpSender,
    child: Child,
    /// Closing it tells the server to shut down.
    stdin: Option<ChildStdin>,
}

/// A client of the server; clones share its connections.
#[derive(Clone)]
pub struct HttpSender {
    /// `http://127.0.0.1:PORT`
    base: String,
    client: reqwest::Client,
}

impl HttpTarget {
    /// Starts the server process on database `database` (created and
    /// migrated) with a pool of `pool_size` connections and a request
    /// timeout of `request_timeout_ms` (its commands' deadline follows from
    /// it), with its workers or without, and waits until it listens.
    pub async fn start(
        database_url: Option<&str>,
        database: &str,
        pool_size: usize,
        request_timeout_ms: u64,
        workers: bool,
    ) -> anyhow::Result<HttpTarget> {
        let exe = std::env::current_exe()?;
        let mut command = tokio::process::Command::new(exe);
        command
            .args(["serve", "--database", database, "--pool-size"])
            .arg(pool_size.to_string())
            .arg("--request-timeout-ms")
            .arg(request_timeout_ms.to_string())
            .args((!workers).then_some("--no-workers"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        if let Some(url) = database_url {
            command.env("DATABASE_URL", url);
        }
        let mut child = command.spawn().context("starting the server process")?;
        let stdout = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(SERVER_START_STOP_LIMIT, lines.next_line())
            .await
            .context("the server process did not start listening in time")??
            .context("the server process exited before listening")?;
        let base = first
            .strip_prefix("listening ")
            .with_context(|| format!("the server process said {first:?}"))?
            .to_owned();
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(CLIENT_IDLE_CONNECTIONS)
            .build()?;
        Ok(HttpTarget {
            sender: HttpSender { base, client },
            stdin: child.stdin.take(),
            child,
        })
    }

    pub fn sender(&self) -> HttpSender {
        self.sender.clone()
    }

    /// CPU time the server process has used so far, user and system.
    pub fn cpu_time(&self) -> anyhow::Result<Duration> {
        let pid = self.child.id().context("the server process has exited")?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // The fields after the command name, which is in parentheses and may
        // hold spaces: utime and stime are fields 14 and 15 of the line.
        let after = stat.rsplit_once(')').context("a /proc stat line")?.1;
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
        // SAFETY: sysconf only reads a configuration value.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        Ok(Duration::from_micros(ticks * 1_000_000 / per_second))
    }

    /// Tells the server to shut down and waits for it (killing it if it
    /// does not stop in time).
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(SERVER_START_STOP_LIMIT, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

impl HttpSender {
    /// Sends `cmd`: a 2xx is done, a 4xx a refusal, anything else a failure.
    pub fn send(&self, cmd: &Command) -> impl Future<Output = Sent> + Send + 'static {
        let answer = self.post(cmd);
        async move {
            match answer.await {
                Ok(status) if status.is_success() => Sent::Ok,
                Ok(status) if status.is_client_error() => Sent::Refused,
                _ => Sent::Failed,
            }
        }
    }

    /// Sends `cmd` and returns the status of the answer (its body is read
    /// and dropped), or the error of a request that got none.
    pub fn post(
        &self,
        cmd: &Command,
    ) -> impl Future<Output = Result<reqwest::StatusCode, reqwest::Error>> + Send + 'static {
        let (path, body) = request(cmd);
        let req = self.client.post(format!("{}{path}", self.base)).json(&body);
        async move {
            let r = req.send().await?;
            let status = r.status();
            r.bytes().await?;
            Ok(status)
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
        Command::Confirm(c) => (
            format!("/v1/reservations/{}/confirm", c.reservation_id),
            json!({}),
        ),
        Command::Release(r) => (
            format!("/v1/reservations/{}/release", r.reservation_id),
            json!({}),
        ),
        other => unreachable!("the benchmark sends no {}", other.kind()),
    }
}
