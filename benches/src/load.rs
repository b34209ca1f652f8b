//! A closed-loop load generator: N callers, each sending its next command as
//! soon as the previous one is answered, for a fixed time or number of
//! commands; every latency goes into an HDR histogram.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// The longest latency the histogram tells apart, in microseconds (a
/// minute); a slower answer is recorded as this. Bounds the histogram's size.
pub const MAX_TRACKED_LATENCY_MICROS: u64 = 60_000_000;

/// Significant decimal digits kept of every latency (3: within 0.1%).
pub const LATENCY_SIGNIFICANT_DIGITS: u8 = 3;

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

/// What a run did: counts by outcome, wall time and latencies.
#[derive(Clone, Debug)]
pub struct RunStats {
    pub commands: u64,
    pub ok: u64,
    pub refused: u64,
    pub failed: u64,
    pub seconds: f64,
    /// Latency of every command, in microseconds.
    latencies: Histogram<u64>,
}

impl Default for RunStats {
    fn default() -> Self {
        RunStats {
            commands: 0,
            ok: 0,
            refused: 0,
            failed: 0,
            seconds: 0.0,
            latencies: Histogram::new_with_bounds(
                1,
                MAX_TRACKED_LATENCY_MICROS,
                LATENCY_SIGNIFICANT_DIGITS,
            )
            .expect("valid histogram bounds"),
        }
    }
}

impl RunStats {
    pub fn per_second(&self) -> f64 {
        self.commands as f64 / self.seconds.max(1e-9)
    }

    /// Latency percentile in milliseconds (`p` in 0..=100); 0 when nothing ran.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        self.latencies.value_at_quantile(p / 100.0) as f64 / 1000.0
    }

    /// Counts one command that took `latency`.
    fn record(&mut self, sent: Sent, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latencies.saturating_record(micros.max(1));
        self.commands += 1;
        match sent {
            Sent::Ok => self.ok += 1,
            Sent::Refused => self.refused += 1,
            Sent::Failed => self.failed += 1,
        }
    }

    /// Adds the counts and latencies of `other` (wall time is the caller's).
    fn merge(&mut self, other: &RunStats) {
        self.commands += other.commands;
        self.ok += other.ok;
        self.refused += other.refused;
        self.failed += other.failed;
        self.latencies
            .add(&other.latencies)
            .expect("histograms of the same bounds add up");
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
    let started = Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> = (0..callers)
        .map(|caller| {
            let (op, sent) = (op.clone(), sent.clone());
            tokio::spawn(caller_loop(caller, op, sent, limit, deadline))
        })
        .collect();
    let mut total = RunStats::default();
    for t in tasks {
        total.merge(&t.await.expect("a benchmark caller panicked"));
    }
    total.seconds = started.elapsed().as_secs_f64();
    total
}

/// One caller: the next command as soon as the previous one is answered,
/// while time is left and the run's `limit` (shared through `sent`) is not
/// reached.
async fn caller_loop<F, Fut>(
    caller: usize,
    op: Arc<F>,
    sent: Arc<AtomicU64>,
    limit: u64,
    deadline: Instant,
) -> RunStats
where
    F: Fn(usize, u64) -> Fut,
    Fut: Future<Output = Sent>,
{
    let mut stats = RunStats::default();
    let mut n = 0;
    while Instant::now() < deadline && sent.fetch_add(1, Ordering::Relaxed) < limit {
        let t = Instant::now();
        let result = op(caller, n).await;
        stats.record(result, t.elapsed());
        n += 1;
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_every_recorded_latency() {
        let mut stats = RunStats::default();
        assert_eq!(stats.percentile_ms(99.0), 0.0, "nothing ran");
        for ms in 1..=1000u64 {
            stats.record(Sent::Ok, Duration::from_millis(ms));
        }
        let mut other = RunStats::default();
        other.record(Sent::Refused, Duration::from_secs(3600));
        stats.merge(&other);
        assert_eq!((stats.commands, stats.ok, stats.refused), (1001, 1000, 1));
        let near = |got: f64, want: f64| (got - want).abs() <= want / 500.0;
        assert!(
            near(stats.percentile_ms(50.0), 501.0),
            "{}",
            stats.percentile_ms(50.0)
        );
        assert!(
            near(stats.percentile_ms(99.0), 991.0),
            "{}",
            stats.percentile_ms(99.0)
        );
        // An answer slower than the histogram tracks counts as the longest.
        let max_ms = MAX_TRACKED_LATENCY_MICROS as f64 / 1000.0;
        assert!(near(stats.percentile_ms(100.0), max_ms));
    }

    #[tokio::test]
    async fn a_closed_loop_stops_at_its_command_limit() {
        let stats = closed_loop(4, Duration::from_secs(60), Some(100), |_, n| async move {
            if n % 2 == 0 {
                Sent::Ok
            } else {
                Sent::Failed
            }
        })
        .await;
        assert_eq!(stats.commands, 100);
        assert_eq!(stats.ok + stats.failed, 100);
    }
}
