//! A closed-loop load generator: N callers, each sending its next command as
//! soon as the previous one is answered, for a fixed time or number of
//! commands; latencies kept per command.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most latency samples kept per run; beyond it, every caller keeps sampling
/// its own share evenly. Bounds memory for long runs.
pub const MAX_LATENCY_SAMPLES: usize = 2_000_000;

/// How one command went, as far as a benchmark cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Done (reserved, confirmed, a replay...).
    Ok,
    /// A business refusal (no stock): answered, nothing done.
    Refused,
    /// Not answered properly (an error, a timeout).
    Failed,
}

#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub commands: u64,
    pub ok: u64,
    pub refused: u64,
    pub failed: u64,
    pub seconds: f64,
    latencies_us: Vec<u32>,
}

impl RunStats {
    pub fn per_second(&self) -> f64 {
        self.commands as f64 / self.seconds.max(1e-9)
    }

    /// Latency percentile in milliseconds (`p` in 0..=100).
    pub fn percentile_ms(&mut self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return 0.0;
        }
        self.latencies_us.sort_unstable();
        let i = ((p / 100.0) * (self.latencies_us.len() - 1) as f64).round() as usize;
        f64::from(self.latencies_us[i.min(self.latencies_us.len() - 1)]) / 1000.0
    }
}

/// Runs `callers` closed loops of `op(caller, n)` until `duration` passes or
/// `max_commands` have been sent in all.
pub async fn closed_loop<F, Fut>(
    callers: usize,
    duration: Duration,
    max_commands: Option<u64>,
    op: F,
) -> RunStats
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Sent> + Send + 'static,
{
    let op = Arc::new(op);
    let sent = Arc::new(AtomicU64::new(0));
    let limit = max_commands.unwrap_or(u64::MAX);
    let per_caller_samples = (MAX_LATENCY_SAMPLES / callers.max(1)).max(1);
    let started = Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> = (0..callers)
        .map(|caller| {
            let (op, sent) = (op.clone(), sent.clone());
            tokio::spawn(async move {
                let mut s = RunStats::default();
                let mut n = 0;
                while Instant::now() < deadline && sent.fetch_add(1, Ordering::Relaxed) < limit {
                    let t = Instant::now();
                    let r = op(caller, n).await;
                    if s.latencies_us.len() < per_caller_samples {
                        s.latencies_us
                            .push(t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                    }
                    s.commands += 1;
                    match r {
                        Sent::Ok => s.ok += 1,
                        Sent::Refused => s.refused += 1,
                        Sent::Failed => s.failed += 1,
                    }
                    n += 1;
                }
                s
            })
        })
        .collect();
    let mut total = RunStats::default();
    for t in tasks {
        let s = t.await.expect("a benchmark caller panicked");
        total.commands += s.commands;
        total.ok += s.ok;
        total.refused += s.refused;
        total.failed += s.failed;
        total.latencies_us.extend(s.latencies_us);
    }
    total.seconds = started.elapsed().as_secs_f64();
    total
}
