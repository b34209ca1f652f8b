//! High availability on a real cluster manager: three PostgreSQL nodes under
//! Patroni with etcd and strict synchronous replication (`.ci/ha-cluster`),
//! and the HTTP server in front, with its projection workers, its relay to
//! NATS and its reads of the log on the standbys.
//!
//! Under 64 concurrent HTTP writers sending mixed commands, each test makes
//! the cluster lose its primary in one way: killed with its Patroni (a real
//! promotion), handed over by a planned switchover, or cut off from etcd and
//! the other nodes. After each: every acknowledged command is in the new
//! primary's log, no stream has a gap or a duplicate, the audit is clean,
//! and the relay's broker stream holds the log exactly once, in order.
//!
//! Needs `patroni`, `patronictl`, `etcd` and `nats-server` on PATH. Without
//! them each test says on the terminal that it did not run (`common::needs`);
//! `.ci/run` installs Debian's and makes a missing one a failure. The cluster
//! uses fixed loopback ports, so the tests here take turns.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command as Process;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use stockledger::server::ServerConfig;
use stockledger::store::keys::{self, Role};
use stockledger::store::{pool, Cursor, Store};
use tokio_util::sync::CancellationToken;

use common::link::Link;
use common::nats::{assert_exact, NatsServer};
use common::needs::{self, ETCD, NATS_SERVER, PATRONI, PATRONICTL};

mod common;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/ha-cluster");
const STREAM: &str = "LEDGER";
const WRITERS: usize = 64;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const SKUS: usize = 8;
/// Acknowledged commands before the fault, and after the cluster recovers.
const BEFORE: usize = 300;
const AFTER: usize = 300;

/// One cluster at a time: it takes fixed ports.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// This suite's ports are `.ci/ha-cluster`'s plus this (`HA_PORT_OFFSET`), so
/// that a cluster another suite (the HA benchmark, at 0) left up is never
/// taken for this one's.
const PORT_OFFSET: u16 = 1000;

/// Node `n`'s PostgreSQL, directly.
fn node_url(n: u32) -> String {
    let port = 5440 + n + u32::from(PORT_OFFSET);
    format!("postgres://postgres@127.0.0.1:{port}/postgres")
}

/// The directory of a cluster of this suite: under the process's id, so a
/// later run can tell whose it was.
const DIR_PREFIX: &str = "sl-ha-";

/// Stops the clusters of earlier runs of this suite whose process is gone (a
/// run killed or timed out mid-test leaves its cluster up, holding the
/// ports; its directory names its process).
fn stop_leftovers() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(DIR_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = std::path::Path::new(&format!("/proc/{pid}")).exists();
        if !alive {
            eprintln!("stopping a cluster an earlier run left: {name}");
            let _ = Process::new(SCRIPT).arg("stop").arg(entry.path()).status();
        }
    }
}

struct Cluster {
    dir: PathBuf,
    url: String,
    /// With `start_with_links`: each node's cuttable links.
    links: Vec<(u32, Link)>,
}

impl Cluster {
    async fn start(test: &str) -> Cluster {
        Self::launch(test, Vec::new()).await
    }

    /// A cluster whose every path out of a node (to etcd, and the other
    /// nodes' way to its PostgreSQL and REST API) passes a link the test can
    /// cut. Clients reach each node's PostgreSQL directly.
    async fn start_with_links(test: &str) -> Cluster {
        let mut links = Vec::new();
        let o = PORT_OFFSET;
        for n in 1..=3u16 {
            for m in 1..=3u16 {
                let to = format!("127.0.0.1:{}", 23790 + m + o);
                let dcs = Link::start(24000 + 10 * n + m + o, to).await;
                links.push((n.into(), dcs));
            }
            let postgres = Link::start(5450 + n + o, format!("127.0.0.1:{}", 5440 + n + o)).await;
            let rest = Link::start(8020 + n + o, format!("127.0.0.1:{}", 8010 + n + o)).await;
            links.push((n.into(), postgres));
            links.push((n.into(), rest));
        }
        Self::launch(test, links).await
    }

    async fn launch(test: &str, links: Vec<(u32, Link)>) -> Cluster {
        stop_leftovers();
        let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{test}", std::process::id()));
        let out = tokio::process::Command::new(SCRIPT)
            .arg("start")
            .arg(&dir)
            .env("HA_LINKS", if links.is_empty() { "0" } else { "1" })
            .env("HA_PORT_OFFSET", PORT_OFFSET.to_string())
            .output()
            .await
            .expect("running .ci/ha-cluster");
        let cluster = Cluster {
            dir,
            url: String::from_utf8(out.stdout).unwrap().trim().to_owned(),
            links,
        };
        assert!(
            out.status.success(),
            "the cluster did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        cluster
    }

    /// A store over the whole cluster, migrated once the leader takes
    /// connections (Patroni may call the cluster up a moment before).
    async fn store(&self, size: usize) -> Store {
        let store = Store::new(pool::build(self.url.parse().unwrap(), size).unwrap());
        common::eventually("the leader takes connections", || async {
            store.migrate().await.is_ok()
        })
        .await;
        store
    }

    /// A pool on whichever nodes are standbys.
    fn standbys(&self, size: usize) -> deadpool_postgres::Pool {
        let url = self.url.replace(
            "target_session_attrs=read-write",
            "target_session_attrs=read-only",
        );
        pool::build(url.parse().unwrap(), size).unwrap()
    }

    fn patronictl(&self, args: &[&str]) -> std::process::Output {
        Process::new("patronictl")
            .arg("-c")
            .arg(self.dir.join("ctl.yml"))
            .args(args)
            .output()
            .unwrap()
    }

    /// The leader's node number, from Patroni; none during a failover.
    fn leader(&self) -> Option<u32> {
        self.member("Leader")
    }

    /// The running member with `role`, by node number.
    fn member(&self, role: &str) -> Option<u32> {
        let out = self.patronictl(&["list", "-f", "json"]);
        let members: Value = serde_json::from_slice(&out.stdout).ok()?;
        members
            .as_array()?
            .iter()
            .find(|m| m["Role"] == role && m["State"] == "running")
            .and_then(|m| m["Member"].as_str())
            .and_then(|m| m.trim_start_matches("node").parse().ok())
    }

    /// A node other than `leader`.
    fn other_than(leader: u32) -> u32 {
        [1, 2, 3].into_iter().find(|n| *n != leader).unwrap()
    }

    /// SIGKILL to the leader's Patroni and postmaster together.
    fn kill_leader(&self) -> u32 {
        let n = self.leader().expect("a leader");
        // Patroni runs under runuser, so it is found by its config file.
        let config = self.dir.join(format!("node{n}.yml"));
        let patroni = Process::new("pgrep")
            .args(["-f", &format!("patroni {}", config.display())])
            .output()
            .unwrap();
        let pid_file = self.dir.join(format!("node{n}/data/postmaster.pid"));
        let postmaster = std::fs::read_to_string(pid_file).unwrap();
        let mut pids: Vec<String> = String::from_utf8(patroni.stdout)
            .unwrap()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert!(!pids.is_empty(), "the leader's Patroni runs");
        pids.push(postmaster.lines().next().unwrap().trim().to_owned());
        for pid in pids {
            Process::new("kill").args(["-9", &pid]).status().unwrap();
        }
        n
    }

    /// A planned switchover from the leader to its synchronous standby (in
    /// synchronous mode Patroni hands over to no other).
    fn switchover(&self) -> u32 {
        let from = self.leader().expect("a leader");
        let to = format!(
            "node{}",
            self.member("Sync Standby").expect("a sync standby")
        );
        let out = self.patronictl(&[
            "switchover",
            "stockledger",
            "--leader",
            &format!("node{from}"),
            "--candidate",
            &to,
            "--force",
        ]);
        assert!(
            out.status.success(),
            "switchover: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        from
    }

    /// Cuts node `n` off from etcd and the other nodes (clients still
    /// reach it): its links stop carrying anything.
    fn cut_off(&self, n: u32) {
        self.links
            .iter()
            .filter(|(m, _)| *m == n)
            .for_each(|(_, l)| l.break_off());
    }

    /// Backends of node `n` whose COMMIT has waited for a synchronous
    /// standby for over `seconds`.
    async fn commits_waiting(&self, n: u32, seconds: f64) -> i64 {
        let url = format!("{}?connect_timeout=2", node_url(n));
        let Ok((client, connection)) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await
        else {
            return 0;
        };
        tokio::spawn(connection);
        let sql = "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'
                   AND now() - state_change > make_interval(secs => $1)";
        let row = client.query_one(sql, &[&seconds]).await;
        row.map_or(0, |r| r.get(0))
    }

    /// Whether node `n` runs as a standby now (false if it cannot be asked).
    async fn is_standby(&self, n: u32) -> bool {
        let url = format!("{}?connect_timeout=2", node_url(n));
        let Ok((client, connection)) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await
        else {
            return false;
        };
        tokio::spawn(connection);
        let row = client.query_one("SELECT pg_is_in_recovery()", &[]).await;
        row.is_ok_and(|r| r.get(0))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // A failed test keeps the cluster's logs.
        let keep = if std::thread::panicking() { "1" } else { "0" };
        let _ = Process::new(SCRIPT)
            .arg("stop")
            .arg(&self.dir)
            .env("HA_KEEP", keep)
            .status();
    }
}

/// The server in front of the cluster, its relay publishing to a private
/// NATS, its log reads on the standbys.
struct Front {
    base: String,
    writer_key: String,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    nats: NatsServer,
}

impl Front {
    async fn start(cluster: &Cluster, store: &Store) -> Front {
        let client = store.pool().get().await.unwrap();
        let (_, writer_key) = keys::create(&client, Some("writer"), Role::Writer)
            .await
            .unwrap()
            .unwrap();
        drop(client);
        let nats = NatsServer::start().await;
        let relay = stockledger::relay::RelayConfig {
            stream: STREAM.to_owned(),
            subject_prefix: "ledger".to_owned(),
            ..Default::default()
        };
        // Room for a failover in every request: Patroni's ttl (5 s) and
        // loop, the promotion, and the other standby attaching to the new
        // primary (strict synchronous mode commits nothing until it has).
        let config = ServerConfig {
            relay: Some((nats.url(), relay)),
            request_timeout: REQUEST_TIMEOUT,
            ..common::server::test_config()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let served = store.clone().with_reads(cluster.standbys(8));
        let task = tokio::spawn(stockledger::server::serve(
            listener,
            served,
            config,
            shutdown.clone(),
        ));
        Front {
            base,
            writer_key,
            shutdown,
            task,
            nats,
        }
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

/// What the writers were told.
#[derive(Default)]
struct Tally {
    /// (stream, event type) of every acknowledged command that wrote.
    acknowledged: Mutex<Vec<(String, &'static str)>>,
    /// Answers of 503, and requests that got no answer at all.
    unavailable: AtomicUsize,
    unanswered: AtomicUsize,
    /// Any other answer no writer expects.
    unexpected: Mutex<Vec<String>>,
}

impl Tally {
    fn acked(&self) -> usize {
        self.acknowledged.lock().unwrap().len()
    }

    /// Answers of 503, and requests that got no answer.
    fn errors(&self) -> (usize, usize) {
        (
            self.unavailable.load(Ordering::Relaxed),
            self.unanswered.load(Ordering::Relaxed),
        )
    }
}

/// 64 writers: each receives now and then, reserves one or two lines, and
/// confirms or releases what it reserved. A request that gets 503 or no
/// answer is sent again (commands are idempotent) until it is answered.
struct Load {
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
    writers: tokio::task::JoinSet<()>,
}

impl Load {
    async fn start(front: &Front) -> Load {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let (stop, tally) = (Arc::new(AtomicBool::new(false)), Arc::new(Tally::default()));
        for k in 0..SKUS {
            let body = json!({"receipt_id": format!("in-{k}"), "sku": format!("sku-{k}"), "quantity": 2000});
            let at = format!("{}/v1/stock/receipts", front.base);
            let sent = send(&http, &at, &front.writer_key, &body, &tally).await;
            assert_eq!(sent.0, 201, "{}", sent.1);
        }
        let mut writers = tokio::task::JoinSet::new();
        for w in 0..WRITERS {
            let (http, base, key) = (http.clone(), front.base.clone(), front.writer_key.clone());
            let (stop, tally) = (stop.clone(), tally.clone());
            writers.spawn(async move {
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    write_one(&http, &base, &key, &tally, w, i).await;
                    i += 1;
                }
            });
        }
        Load {
            stop,
            tally,
            writers,
        }
    }

    async fn until_acknowledged(&self, what: &str, more: usize) {
        let from = self.tally.acked();
        common::eventually(what, || async { self.tally.acked() >= from + more }).await;
    }

    async fn stop(mut self) -> Arc<Tally> {
        self.stop.store(true, Ordering::Relaxed);
        while let Some(w) = self.writers.join_next().await {
            w.unwrap();
        }
        self.tally
    }
}

async fn write_one(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    tally: &Tally,
    w: usize,
    i: usize,
) {
    let sku = |k: usize| format!("sku-{}", (w + k) % SKUS);
    let ack = |stream: String, event: &'static str| {
        tally.acknowledged.lock().unwrap().push((stream, event));
    };
    if i.is_multiple_of(4) {
        let id = format!("w{w}-in-{i}");
        let body = json!({"receipt_id": id, "sku": sku(i), "quantity": 8});
        match send(
            http,
            &format!("{base}/v1/stock/receipts"),
            key,
            &body,
            tally,
        )
        .await
        {
            (200 | 201, _) => ack(common::receipt_stream(&id), "StockReceived"),
            other => tally
                .unexpected
                .lock()
                .unwrap()
                .push(format!("receipt {id}: {other:?}")),
        }
    }
    let id = format!("w{w}-{i}");
    let mut lines = vec![json!({"sku": sku(i), "quantity": 1 + i % 2})];
    if i.is_multiple_of(3) {
        lines.push(json!({"sku": sku(i + 1), "quantity": 1}));
    }
    let body = json!({"reservation_id": id, "order_id": id, "lines": lines});
    match send(http, &format!("{base}/v1/reservations"), key, &body, tally).await {
        (200 | 201, _) => ack(common::res_stream(&id), "ReservationCreated"),
        (422, b) if b["code"] == "INSUFFICIENT_STOCK" => return,
        other => {
            tally
                .unexpected
                .lock()
                .unwrap()
                .push(format!("reserve {id}: {other:?}"));
            return;
        }
    }
    let (step, event) = if i.is_multiple_of(2) {
        ("confirm", "ReservationConfirmed")
    } else {
        ("release", "ReservationReleased")
    };
    let at = format!("{base}/v1/reservations/{id}/{step}");
    match send(http, &at, key, &json!({}), tally).await {
        (200, _) => ack(common::res_stream(&id), event),
        other => tally
            .unexpected
            .lock()
            .unwrap()
            .push(format!("{step} {id}: {other:?}")),
    }
}

/// Sends until answered with anything but 503, counting 503s and requests
/// that got no answer; the same request each time, so retries are safe.
async fn send(
    http: &reqwest::Client,
    at: &str,
    key: &str,
    body: &Value,
    tally: &Tally,
) -> (u16, Value) {
    loop {
        match http.post(at).bearer_auth(key).json(body).send().await {
            Ok(r) if r.status() == 503 => {
                if tally.unavailable.fetch_add(1, Ordering::Relaxed) < 5 {
                    eprintln!("503 {at}: {}", r.text().await.unwrap_or_default());
                }
            }
            Ok(r) => {
                let status = r.status().as_u16();
                return (status, r.json().await.unwrap_or(Value::Null));
            }
            Err(_) => {
                tally.unanswered.fetch_add(1, Ordering::Relaxed);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Everything a fault may not break: every acknowledged command is in the
/// log, every stream runs 1, 2, 3... without a gap or a repeat, the server's
/// projection workers catch up and the audit is clean, and its relay's
/// stream holds the log exactly.
async fn assert_nothing_lost(store: &Store, tally: &Tally, nats: &NatsServer) {
    let client = store.pool().get().await.unwrap();
    let in_log: HashSet<(String, String)> = client
        .query("SELECT stream, type FROM events", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let acknowledged = tally.acknowledged.lock().unwrap().clone();
    println!(
        "{} acknowledged, {} answers of 503, {} unanswered, {} events in the log",
        acknowledged.len(),
        tally.unavailable.load(Ordering::Relaxed),
        tally.unanswered.load(Ordering::Relaxed),
        in_log.len()
    );
    let lost: Vec<_> = acknowledged
        .iter()
        .filter(|(s, e)| !in_log.contains(&(s.clone(), (*e).to_owned())))
        .collect();
    assert!(lost.is_empty(), "acknowledged but gone: {lost:?}");
    let broken: i64 = client
        .query_one(
            "SELECT count(*) FROM (SELECT stream FROM events GROUP BY stream
                                   HAVING max(seq) <> count(*) OR min(seq) <> 1) AS s",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(broken, 0, "streams with a gap or a repeated seq");
    drop(client);
    common::eventually("the projections catch up", || async {
        let status = store.projection_status().await.unwrap();
        status.iter().all(|s| s.live.lag_events == 0)
    })
    .await;
    let report = stockledger::audit::audit(store.pool()).await.unwrap();
    assert!(report.clean(), "{:#?}", report.differences);
    assert_exact(store, nats, STREAM).await;
}

/// The whole run of a fault test: the server and its 64 writers over
/// `cluster`, `fault` once `BEFORE` commands are acknowledged, `AFTER` more
/// acknowledged once it has happened, then everything `assert_nothing_lost`
/// checks, and no answer a writer did not expect. Returns what the writers
/// were told.
async fn under_load(cluster: &Cluster, fault: impl std::future::Future<Output = ()>) -> Arc<Tally> {
    let store = cluster.store(8).await;
    let front = Front::start(cluster, &store).await;
    let load = Load::start(&front).await;
    load.until_acknowledged("writes are acknowledged", BEFORE)
        .await;
    fault.await;
    load.until_acknowledged("writes resume on the new leader", AFTER)
        .await;
    let tally = load.stop().await;
    assert_nothing_lost(&store, &tally, &front.nats).await;
    front.stop().await;
    let unexpected = tally.unexpected.lock().unwrap().clone();
    assert!(unexpected.is_empty(), "{unexpected:?}");
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_killed_under_load_loses_nothing_and_callers_see_no_error() {
    if !needs::programs(&[PATRONI, PATRONICTL, ETCD, NATS_SERVER]) {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start("failover").await;
    let tally = under_load(&cluster, async {
        let old = cluster.kill_leader();
        common::eventually("a standby is promoted", || async {
            cluster.leader().is_some_and(|n| n != old)
        })
        .await;
    })
    .await;
    assert_eq!(
        tally.errors(),
        (0, 0),
        "commands caught in the failover wait for the new primary instead of failing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_planned_switchover_under_load_is_invisible_to_callers() {
    if !needs::programs(&[PATRONI, PATRONICTL, ETCD, NATS_SERVER]) {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start("switchover").await;
    let tally = under_load(&cluster, async {
        let old = cluster.switchover();
        common::eventually("the candidate leads", || async {
            cluster.leader().is_some_and(|n| n != old)
        })
        .await;
    })
    .await;
    assert_eq!(
        tally.errors(),
        (0, 0),
        "a switchover costs callers a wait, never an error"
    );
}

/// The primary cut off from etcd and the other nodes while clients still
/// reach it. Its commits wait for a synchronous standby they can no longer
/// reach, and it takes connections until its Patroni gives up on etcd and
/// demotes it; the demotion cuts those waits short, which leaves the
/// commits marked committed on that node alone (see
/// `a_commit_no_standby_has_is_never_acknowledged`). A standby is promoted,
/// and every command acknowledged is in the new primary's log, once (no
/// split brain). Callers may get 503 here: the waiting commits hold their
/// items' locks.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_primary_cut_off_from_the_cluster_acknowledges_nothing_that_is_lost() {
    if !needs::programs(&[PATRONI, PATRONICTL, ETCD, NATS_SERVER]) {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start_with_links("partition").await;
    under_load(&cluster, async {
        let old = cluster.leader().expect("a leader");
        cluster.cut_off(old);
        // Long enough for callers' COMMIT replies to be given up on and
        // their outcomes asked of this primary.
        common::eventually("commits wait for the lost standby", || async {
            cluster.commits_waiting(old, 2.0).await > 0
        })
        .await;
        common::eventually("another node is promoted", || async {
            cluster.leader().is_some_and(|n| n != old)
        })
        .await;
        common::eventually("the cut-off primary is demoted", || async {
            cluster.is_standby(old).await
        })
        .await;
    })
    .await;
}

async fn receive(store: &Store, id: &str) {
    store
        .execute(
            common::receive(id, "apple", 1),
            stockledger::domain::CommandContext::new("test"),
        )
        .await
        .unwrap()
        .unwrap();
}

/// A COMMIT that waits for its synchronous standby, whose reply is given up
/// on, and whose wait is then cut short (its backend terminated, as a
/// demotion's shutdown does): PostgreSQL now shows the transaction committed
/// and its rows visible on this node, though no standby has them. The
/// resolution of the lost reply must not call that committed, or the caller
/// would be told yes about a write the failover then drops.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_commit_no_standby_has_is_never_acknowledged() {
    if !needs::programs(&[PATRONI, PATRONICTL, ETCD, NATS_SERVER]) {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start("syncwait").await;
    let store = cluster.store(4).await;
    receive(&store, "in-1").await;
    let leader = cluster.leader().expect("a leader");
    let paused = cluster.patronictl(&["pause", "--wait"]);
    assert!(paused.status.success(), "{paused:?}");
    let url = node_url(leader);
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    for sql in [
        "ALTER SYSTEM SET synchronous_standby_names = 'nobody'",
        "SELECT pg_reload_conf()",
    ] {
        admin.batch_execute(sql).await.unwrap();
    }

    let writer = store.clone();
    let answer = tokio::spawn(async move {
        writer
            .execute(
                common::receive("in-2", "apple", 1),
                stockledger::domain::CommandContext::new("test"),
            )
            .await
    });
    common::eventually(
        "the COMMIT waits for a standby past its reply deadline",
        || async { cluster.commits_waiting(leader, 1.5).await > 0 },
    )
    .await;
    admin
        .batch_execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
        )
        .await
        .unwrap();
    // pg_terminate_backend only signals: the commit becomes visible once the
    // backend has left its wait for the standby and ended.
    let admin = &admin;
    common::eventually(
        "the cut-short commit is visible on this node",
        || async move {
            let seen: i64 = admin
                .query_one(
                    "SELECT count(*) FROM events WHERE stream = $1",
                    &[&common::receipt_stream("in-2")],
                )
                .await
                .unwrap()
                .get(0);
            seen == 1
        },
    )
    .await;
    let answer = answer.await.unwrap();
    assert!(
        matches!(answer, Err(ref e) if e.is_retryable()),
        "not acknowledged, but told to retry: {answer:?}"
    );
}

/// Pages of the log read on a hot standby (`Store::with_reads`): an open
/// writer on the primary holds the standby's reader back, nothing is
/// skipped, and once it ends the standby's pages equal the primary's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standby_reader_is_held_back_by_an_open_writer_on_the_primary() {
    if !needs::programs(&[PATRONI, PATRONICTL, ETCD, NATS_SERVER]) {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start("standby").await;
    let primary = cluster.store(8).await;
    let replica = node_url(Cluster::other_than(cluster.leader().expect("a leader")));
    let store = primary
        .clone()
        .with_reads(pool::build(replica.parse().unwrap(), 4).unwrap());
    let (standby, connection) = tokio_postgres::connect(&replica, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // Rows the standby has replayed, horizon or not.
    let replayed = || async {
        let row = standby.query_one("SELECT count(*) FROM events", &[]).await;
        row.unwrap().get::<_, i64>(0)
    };
    let page = || async {
        store
            .events(Cursor::START, 100, None)
            .await
            .unwrap()
            .events
            .len()
    };
    receive(&primary, "in-1").await;
    common::eventually("the standby serves the first event", || async {
        page().await == 1
    })
    .await;

    // A writer left open on the primary, then an event committed after it
    // and replayed on the standby: the standby's reader still stops before it.
    let (writer, connection) = tokio_postgres::connect(&cluster.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    writer
        .batch_execute("BEGIN; SELECT pg_current_xact_id()")
        .await
        .unwrap();
    receive(&primary, "in-2").await;
    common::eventually("the standby replays the second event", || async {
        replayed().await == 2
    })
    .await;
    assert_eq!(
        page().await,
        1,
        "nothing at or past the primary's open writer is read on the standby"
    );
    let item = stockledger::domain::Item {
        sku: stockledger::domain::Sku::parse("sku", "apple").unwrap(),
        location: stockledger::domain::Location::parse_or_default("location", None).unwrap(),
    };
    assert_eq!(
        store.item_history(&item).await.unwrap().len(),
        1,
        "an item's history on the standby stops there too"
    );
    writer.batch_execute("COMMIT").await.unwrap();
    common::eventually("the standby serves both once the writer ends", || async {
        page().await == 2
    })
    .await;
    let on_primary = primary.events(Cursor::START, 100, None).await.unwrap();
    let on_standby = store.events(Cursor::START, 100, None).await.unwrap();
    let ids = |p: &stockledger::store::EventPage| -> Vec<(String, i64)> {
        p.events
            .iter()
            .map(|e| (e.stream.to_string(), e.position))
            .collect()
    };
    assert_eq!(ids(&on_standby), ids(&on_primary));
}
