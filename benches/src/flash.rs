//! A flash sale for the benchmarks that measure a worker under load: writers
//! each reserving one unit of the same hot item through group commit, one
//! new order after another, until stopped (with enough stock that none is
//! refused).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use stockledger::domain::{Command, CommandContext, LineRequest, ReceiveRequest, ReserveRequest};
use stockledger::store::Store;

pub struct FlashSale {
    stop: Arc<AtomicBool>,
    writers: tokio::task::JoinSet<anyhow::Result<i64>>,
}

impl FlashSale {
    /// Stocks the hot item of run `tag` and starts `writers` writers.
    pub async fn start(store: &Store, tag: &str, writers: usize) -> anyhow::Result<FlashSale> {
        let grouped = store.grouped(Default::default());
        let hot = format!("{tag}-hot");
        let stock: Command = ReceiveRequest {
            receipt_id: format!("{tag}-stock"),
            sku: hot.clone(),
            location: None,
            quantity: i64::from(stockledger::limits::MAX_QUANTITY),
            against: None,
        }
        .validate()?;
        grouped
            .execute(stock, CommandContext::new("bench"))
            .await??;
        let stop = Arc::new(AtomicBool::new(false));
        let mut set = tokio::task::JoinSet::new();
        for w in 0..writers {
            let (s, stop, hot, tag) = (grouped.clone(), stop.clone(), hot.clone(), tag.to_owned());
            set.spawn(async move {
                let mut n = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    let id = format!("{tag}-{w}-{n}");
                    let cmd: Command = ReserveRequest {
                        reservation_id: id.clone(),
                        order_id: id,
                        lines: vec![LineRequest {
                            sku: hot.clone(),
                            location: None,
                            quantity: 1,
                        }],
                        ttl_seconds: None,
                        backorder: false,
                        latest_arrival: None,
                    }
                    .validate()
                    .expect("a valid reservation");
                    s.execute(cmd, CommandContext::new("bench")).await??;
                    n += 1;
                }
                anyhow::Ok(n)
            });
        }
        Ok(FlashSale { stop, writers: set })
    }

    /// Stops the writers; returns the reservations they made.
    pub async fn stop(mut self) -> anyhow::Result<i64> {
        self.stop.store(true, Ordering::Relaxed);
        let mut written = 0;
        while let Some(n) = self.writers.join_next().await {
            written += n??;
        }
        Ok(written)
    }
}
