//! High availability on a real cluster manager (issue 13, under way): three
//! PostgreSQL nodes under Patroni with etcd and synchronous replication
//! (`.ci/ha-cluster`), writers reserving one hot item through a store that
//! names all three hosts, and the leader's Patroni and postmaster killed
//! with SIGKILL (a real promotion). Every acknowledged reservation must be
//! in the new leader's log, and the audit clean.
//!
//! Needs `patroni` and `etcd` on PATH (`.ci/run` installs Debian's). The
//! cluster uses fixed loopback ports, so the tests here take turns.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command as Process;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stockledger::domain::{Command, CommandContext, LineRequest, ReceiveRequest, ReserveRequest};
use stockledger::store::{pool, Cursor, Store};

mod common;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/ha-cluster");

/// One cluster at a time: it takes fixed ports.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Cluster {
    dir: PathBuf,
    url: String,
}

impl Cluster {
    fn start(test: &str) -> Cluster {
        let dir = std::env::temp_dir().join(format!("sl-ha-{}-{test}", std::process::id()));
        let out = Process::new(SCRIPT)
            .args(["start"])
            .arg(&dir)
            .output()
            .expect("running .ci/ha-cluster");
        assert!(
            out.status.success(),
            "the cluster did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        Cluster { dir, url }
    }

    /// Migrates `store` once the leader takes connections: Patroni may call
    /// the cluster up a moment before its leader accepts them.
    async fn migrate(&self, store: &Store) {
        common::eventually("the leader takes connections", || async {
            store.migrate().await.is_ok()
        })
        .await;
    }

    /// The leader's node number, from Patroni; none during a failover.
    fn leader(&self) -> Option<u32> {
        let out = Process::new("patronictl")
            .args(["-c"])
            .arg(self.dir.join("node1.yml"))
            .args(["list", "-f", "json"])
            .output()
            .unwrap();
        let members: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        members
            .as_array()?
            .iter()
            .find(|m| m["Role"] == "Leader" && m["State"] == "running")
            .and_then(|m| m["Member"].as_str())
            .and_then(|m| m.trim_start_matches("node").parse().ok())
    }

    /// The host:port of a replica (not the leader).
    fn replica(&self) -> String {
        let leader = self.leader().expect("a leader");
        let n = [1, 2, 3].into_iter().find(|n| *n != leader).unwrap();
        format!("127.0.0.1:544{n}")
    }

    /// SIGKILL to the leader's Patroni and postmaster together.
    fn kill_leader(&self) -> u32 {
        let n = self.leader().expect("a leader");
        let read_pid = |p: PathBuf| -> String {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .next()
                .unwrap()
                .trim()
                .to_owned()
        };
        // Patroni runs under runuser, so it is found by its config file.
        let config = self.dir.join(format!("node{n}.yml"));
        let patroni = Process::new("pgrep")
            .args(["-f", &format!("patroni {}", config.display())])
            .output()
            .unwrap();
        let postmaster = read_pid(self.dir.join(format!("node{n}/data/postmaster.pid")));
        let mut pids: Vec<String> = String::from_utf8(patroni.stdout)
            .unwrap()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert!(!pids.is_empty(), "the leader's Patroni runs");
        pids.push(postmaster);
        for pid in pids {
            Process::new("kill").args(["-9", &pid]).status().unwrap();
        }
        n
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Process::new(SCRIPT).arg("stop").arg(&self.dir).status();
    }
}

fn reserve(id: &str, sku: &str) -> Command {
    ReserveRequest {
        reservation_id: id.to_owned(),
        order_id: id.to_owned(),
        lines: vec![LineRequest {
            sku: sku.to_owned(),
            location: None,
            quantity: 1,
        }],
        ttl_seconds: None,
    }
    .validate()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_killed_under_load_loses_nothing_acknowledged() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start("failover");
    let config: tokio_postgres::Config = cluster.url.parse().unwrap();
    let store = Store::new(pool::build(config, 32).unwrap());
    cluster.migrate(&store).await;
    let stock = ReceiveRequest {
        receipt_id: "stock".into(),
        sku: "hot".into(),
        location: None,
        quantity: 1_000_000,
    }
    .validate()
    .unwrap();
    store
        .execute(stock, CommandContext::new("test"))
        .await
        .unwrap()
        .unwrap();

    let acknowledged = Arc::new(Mutex::new(HashSet::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..32 {
        let (store, acked, stop) = (store.clone(), acknowledged.clone(), stop.clone());
        writers.spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let id = format!("w{w}-{n}");
                // The same command again until it is answered (retries are
                // safe), or until the test ends: then it is not counted.
                while !stop.load(Ordering::Relaxed) {
                    match store
                        .execute(reserve(&id, "hot"), CommandContext::new("test"))
                        .await
                    {
                        Ok(Ok(_)) => {
                            acked.lock().unwrap().insert(id.clone());
                            break;
                        }
                        Ok(Err(r)) => panic!("{id} refused: {r:?}"),
                        Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                    }
                }
                n += 1;
            }
        });
    }
    let acked = || acknowledged.lock().unwrap().len();
    common::eventually("writes are acknowledged", || async { acked() >= 200 }).await;
    let old = cluster.kill_leader();
    common::eventually("a standby is promoted", || async {
        cluster.leader().is_some_and(|n| n != old)
    })
    .await;
    let at_promotion = acked();
    common::eventually("writes resume on the new leader", || async {
        acked() >= at_promotion + 200
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = writers.join_next().await {
        r.unwrap();
    }

    let client = store.pool().get().await.unwrap();
    let in_log: HashSet<String> = client
        .query(
            "SELECT order_id FROM events WHERE type = 'ReservationCreated'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let acknowledged = acknowledged.lock().unwrap().clone();
    let lost: Vec<_> = acknowledged.difference(&in_log).collect();
    println!(
        "acknowledged {}, in the log {}, lost {}",
        acknowledged.len(),
        in_log.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "acknowledged but gone: {lost:?}");
    let report = stockledger::audit::audit(store.pool()).await.unwrap();
    assert!(report.clean(), "{:#?}", report.differences);
}

async fn receive(store: &Store, id: &str) {
    let cmd = ReceiveRequest {
        receipt_id: id.into(),
        sku: "apple".into(),
        location: None,
        quantity: 1,
    }
    .validate()
    .unwrap();
    store
        .execute(cmd, CommandContext::new("test"))
        .await
        .unwrap()
        .unwrap();
}

/// Pages of the log read on a hot standby (`Store::with_reads`): an open
/// writer on the primary holds the standby's reader back, nothing is
/// skipped, and once it ends the standby's pages equal the primary's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standby_reader_is_held_back_by_an_open_writer_on_the_primary() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::start("standby");
    let primary = Store::new(pool::build(cluster.url.parse().unwrap(), 8).unwrap());
    cluster.migrate(&primary).await;
    let replica = format!("postgres://postgres@{}/postgres", cluster.replica());
    let reads = pool::build(replica.parse().unwrap(), 4).unwrap();
    let store = primary.clone().with_reads(reads);
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
