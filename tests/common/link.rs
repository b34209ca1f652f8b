//! A network link that a test can break: a plain TCP forwarder from a fixed
//! local port to a target. Broken, it stops carrying anything: connections
//! through it stay open but nothing passes either way, and new ones are
//! accepted and then ignored, as a partitioned network drops packets (so
//! whoever is on either side finds out only by its own timeouts). Healed, it
//! forwards new connections again. The partition test puts one on every path
//! out of a database node (`.ci/ha-cluster`, `HA_LINKS=1`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub struct Link {
    broken: Arc<AtomicBool>,
    /// Cancelled to stop carrying every connection open now; replaced after.
    carrying: Arc<Mutex<CancellationToken>>,
    /// Cancelled when the link is dropped: every held connection closes.
    stop: CancellationToken,
}

impl Link {
    /// Forwards `127.0.0.1:port` to `target` until dropped.
    pub async fn start(port: u16, target: String) -> Link {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| panic!("the link port {port} is taken: {e}"));
        let link = Link {
            broken: Arc::new(AtomicBool::new(false)),
            carrying: Arc::new(Mutex::new(CancellationToken::new())),
            stop: CancellationToken::new(),
        };
        let (broken, carrying, stop) = (
            link.broken.clone(),
            link.carrying.clone(),
            link.stop.clone(),
        );
        tokio::spawn(async move {
            loop {
                let inbound = tokio::select! {
                    _ = stop.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((s, _)) => s,
                        Err(_) => continue,
                    },
                };
                let stop = stop.clone();
                if broken.load(Ordering::SeqCst) {
                    // Accepted and never answered, until the link goes.
                    tokio::spawn(async move {
                        stop.cancelled().await;
                        drop(inbound);
                    });
                    continue;
                }
                let carried = carrying.lock().unwrap().clone();
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(outbound) = TcpStream::connect(&target).await else {
                        return;
                    };
                    let (mut a, mut b) = (inbound, outbound);
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::io::copy_bidirectional(&mut a, &mut b) => return,
                        _ = carried.cancelled() => {}
                    }
                    // Broken: both ends stay open, and nothing passes.
                    stop.cancelled().await;
                });
            }
        });
        link
    }

    /// Stops carrying anything, on open connections and new ones.
    pub fn break_off(&self) {
        self.broken.store(true, Ordering::SeqCst);
        let mut carrying = self.carrying.lock().unwrap();
        carrying.cancel();
        *carrying = CancellationToken::new();
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
