//! Crashes: the service killed with SIGKILL under load and started again,
//! and PostgreSQL restarted the hard way (`pg_ctl restart -m immediate`)
//! under load. After each, every acknowledged command is in the log, nothing
//! is oversold, and the audit is clean.

mod common;

use std::collections::HashSet;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::json;
use stockledger::db::cluster::PrivateCluster;
use stockledger::domain::CommandContext;
use stockledger::store::group::GroupConfig;
use stockledger::store::{pool, Store};
use tokio_util::sync::CancellationToken;

fn serve(db: &TestDb, port: u16) -> Child {
    Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .args(["serve", "--dev", "--listen", &format!("127.0.0.1:{port}")])
        .env("DATABASE_URL", db.url())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start stockledger serve")
}

async fn wait_ready(http: &reqwest::Client, base: &str) {
    for _ in 0..300 {
        if let Ok(r) = http.get(format!("{base}/readyz")).send().await {
            if r.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server never became ready");
}

/// Reserves through HTTP until `stop`; returns the ids acknowledged (201/200).
async fn writer(
    http: reqwest::Client,
    base: String,
    w: usize,
    stop: CancellationToken,
) -> Vec<String> {
    let mut acknowledged = Vec::new();
    for k in 0.. {
        if stop.is_cancelled() {
            break;
        }
        let id = format!("r{w}-{k}");
        let body = json!({"reservation_id": id, "order_id": format!("o{w}-{k}"),
                          "lines": [{"sku": "hot", "quantity": 1}]});
        if let Ok(r) = http
            .post(format!("{base}/v1/reservations"))
            .json(&body)
            .send()
            .await
        {
            if r.status().is_success() {
                acknowledged.push(id);
            }
        }
    }
    acknowledged
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_service_killed_under_load_loses_nothing_acknowledged() {
    let db = TestDb::new().await;
    db.receive("in-hot", "hot", 1_000_000).await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut server = serve(&db, port);
    wait_ready(&http, &base).await;
    let stop = CancellationToken::new();
    let writers: Vec<_> = (0..32)
        .map(|w| tokio::spawn(writer(http.clone(), base.clone(), w, stop.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.kill().expect("SIGKILL");
    server.wait().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.cancel();
    let mut acknowledged = Vec::new();
    for w in writers {
        acknowledged.extend(w.await.unwrap());
    }
    assert!(
        acknowledged.len() > 50,
        "load reached the server: {}",
        acknowledged.len()
    );
    let logged: HashSet<String> = db
        .column::<String>("SELECT stream FROM events WHERE stream LIKE 'reservation:%'")
        .await
        .into_iter()
        .collect();
    for id in &acknowledged {
        assert!(
            logged.contains(&res_stream(id)),
            "{id} acknowledged but lost"
        );
    }
    // Started again, it serves and its workers carry on.
    let mut again = serve(&db, port);
    wait_ready(&http, &base).await;
    let r = http
        .post(format!("{base}/v1/reservations"))
        .json(&json!({"reservation_id": "after", "order_id": "o-after", "lines": [{"sku": "hot", "quantity": 1}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    again.kill().unwrap();
    again.wait().unwrap();
    let (on_hand, reserved, _) = db.figures("hot").await;
    assert_eq!(
        reserved as usize,
        logged.len() + 1,
        "balances match the log"
    );
    assert!(reserved <= on_hand);
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// How the server is crashed under load.
#[derive(Clone, Copy)]
enum Crash {
    /// `pg_ctl restart -m immediate`: every process stopped, crash recovery.
    Restart,
    /// One busy backend killed with SIGKILL: the postmaster ends every other
    /// backend and runs crash recovery without restarting (same start time).
    KillBackend,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_restarted_under_load_loses_nothing_acknowledged() {
    crash_under_load(Crash::Restart).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backend_killed_with_sigkill_under_load_loses_nothing_acknowledged() {
    crash_under_load(Crash::KillBackend).await;
}

async fn crash_under_load(crash: Crash) {
    let dir = std::env::temp_dir().join(format!(
        "stockledger-crash-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let cluster = PrivateCluster::at(dir.join("pg"));
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.ensure_running())
        .await
        .unwrap()
        .expect("a private cluster (PostgreSQL's binaries are installed)");
    stockledger::db::ensure_database(&cluster.config("postgres"), "crash")
        .await
        .unwrap();
    let store = Store::with_group_commit(
        pool::build(cluster.config("crash"), 8).unwrap(),
        GroupConfig::default(),
    );
    store.migrate().await.unwrap();
    store
        .execute(
            receive("in-hot", "hot", 1_000_000),
            CommandContext::new("test"),
        )
        .await
        .unwrap()
        .unwrap();
    let stop = CancellationToken::new();
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..32)
        .map(|w| {
            let (store, stop, acknowledged) = (store.clone(), stop.clone(), acknowledged.clone());
            tokio::spawn(async move {
                for k in 0.. {
                    if stop.is_cancelled() {
                        return;
                    }
                    let id = format!("r{w}-{k}");
                    // Retry with the same ids until answered, as a caller would.
                    loop {
                        let cmd = reserve(&id, &format!("o{w}-{k}"), &[("hot", 1)], None);
                        match store.execute(cmd, CommandContext::new("test")).await {
                            Ok(Ok(_)) => {
                                acknowledged.lock().unwrap().push(id.clone());
                                break;
                            }
                            Ok(Err(r)) => panic!("{id}: {r}"),
                            Err(e) if e.is_retryable() => {
                                tokio::time::sleep(Duration::from_millis(50)).await
                            }
                            Err(e) => panic!("{id}: not retryable: {e}"),
                        }
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let before = acknowledged.lock().unwrap().len();
    match crash {
        Crash::Restart => {
            let c = cluster.clone();
            tokio::task::spawn_blocking(move || c.restart_immediately())
                .await
                .unwrap()
                .expect("pg_ctl restart -m immediate");
        }
        Crash::KillBackend => {
            let admin = stockledger::store::pool::build(cluster.config("crash"), 1).unwrap();
            let client = admin.get().await.unwrap();
            let pid: i32 = client
                .query_one(
                    "SELECT pid FROM pg_stat_activity
                     WHERE datname = 'crash' AND pid <> pg_backend_pid()
                       AND backend_type = 'client backend'
                     ORDER BY state = 'active' DESC, random() LIMIT 1",
                    &[],
                )
                .await
                .expect("a backend of the database")
                .get(0);
            drop(client);
            let killed = Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
        }
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.cancel();
    for w in writers {
        w.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() > before,
        "writes resumed after the restart by themselves"
    );
    let client = pool::get(store.pool()).await.unwrap();
    let logged: HashSet<String> = client
        .query(
            "SELECT substr(stream, 13) FROM events WHERE stream LIKE 'reservation:%'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    for id in &acknowledged {
        assert!(logged.contains(id), "{id} acknowledged but lost");
    }
    assert_eq!(
        logged.len(),
        acknowledged.len(),
        "nothing written twice or unanswered"
    );
    let reserved: i64 = client
        .query_one("SELECT reserved FROM item_balances WHERE sku = 'hot'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(reserved as usize, acknowledged.len());
    drop(client);
    assert!(
        stockledger::projection::worker::catch_up_fully(store.pool(), Duration::from_secs(30))
            .await
            .unwrap()
    );
    let report = stockledger::audit::audit(store.pool()).await.unwrap();
    assert!(report.clean(), "{:#?}", report.differences);
    cluster.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
