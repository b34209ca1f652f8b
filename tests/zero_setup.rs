//! The zero-setup start: with no DATABASE_URL, the program initialises and
//! starts a private PostgreSQL cluster from the installed binaries. This test
//! does it from nothing in a fresh directory, then stops it again.

use std::path::PathBuf;

use stockledger::db::cluster::PrivateCluster;
use stockledger::store::{pool, Store};

struct Stopper(PrivateCluster, PathBuf);

impl Drop for Stopper {
    fn drop(&mut self) {
        self.0.stop();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

#[tokio::test]
async fn a_private_cluster_starts_from_nothing() {
    let root = std::env::temp_dir().join(format!(
        "stockledger-zero-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let cluster = PrivateCluster::at(root.join("data/postgres"));
    let _stop = Stopper(cluster.clone(), root.clone());

    let c = cluster.clone();
    let first = tokio::task::spawn_blocking(move || c.ensure_running())
        .await
        .unwrap()
        .unwrap();
    assert!(first.initialised && first.started);
    let c = cluster.clone();
    let second = tokio::task::spawn_blocking(move || c.ensure_running())
        .await
        .unwrap()
        .unwrap();
    assert!(
        !second.initialised && !second.started,
        "already running: nothing to do"
    );

    // It listens on a socket in its own directory, and the ledger works on it.
    assert!(cluster.socket_dir().join(".s.PGSQL.5432").exists());
    stockledger::db::ensure_database(&cluster.config("postgres"), "ledger")
        .await
        .unwrap();
    let store = Store::new(pool::build(cluster.config("ledger"), 2).unwrap());
    store.migrate().await.unwrap();
    let client = store.pool().get().await.unwrap();
    let listen: String = client
        .query_one("SHOW listen_addresses", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        listen, "",
        "no TCP port, so it never clashes with another server"
    );
}
