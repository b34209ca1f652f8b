//! Prometheus metrics, kept by the server itself (no global registry, so a
//! test can run many servers in one process). Route labels are the matched
//! route patterns, so their number is bounded by the router.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        for (i, le) in BUCKETS.iter().enumerate() {
            if seconds <= *le {
                self.counts[i] += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }
}

#[derive(Default)]
pub struct Metrics {
    commands: Mutex<BTreeMap<(&'static str, String), u64>>,
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
    expiries: AtomicU64,
}

/// Values read at scrape time from outside the registry.
pub struct Gauges {
    pub pool_size: usize,
    pub pool_available: usize,
    pub pool_waiting: usize,
    /// (projection, lag in events, lag in seconds)
    pub projections: Vec<(&'static str, i64, f64)>,
}

impl Metrics {
    /// A command answered: `outcome` is `created`, `replayed` or a rejection code.
    pub fn command(&self, kind: &'static str, outcome: &str) {
        *self
            .commands
            .lock()
            .expect("metrics lock")
            .entry((kind, outcome.to_owned()))
            .or_default() += 1;
    }

    pub fn request(&self, route: &str, status: u16, took: Duration) {
        *self
            .requests
            .lock()
            .expect("metrics lock")
            .entry((route.to_owned(), status))
            .or_default() += 1;
        self.latency
            .lock()
            .expect("metrics lock")
            .entry(route.to_owned())
            .or_default()
            .observe(took.as_secs_f64());
    }

    pub fn expired(&self, n: u64) {
        self.expiries.fetch_add(n, Ordering::Relaxed);
    }

    /// The Prometheus text exposition format.
    pub fn render(&self, g: &Gauges) -> String {
        let mut out = String::new();
        out.push_str("# HELP stockledger_commands_total Commands answered, by type and outcome.\n");
        out.push_str("# TYPE stockledger_commands_total counter\n");
        for ((kind, outcome), n) in self.commands.lock().expect("metrics lock").iter() {
            let _ = writeln!(
                out,
                "stockledger_commands_total{{type=\"{kind}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        out.push_str(
            "# HELP stockledger_http_requests_total HTTP requests, by route and status.\n",
        );
        out.push_str("# TYPE stockledger_http_requests_total counter\n");
        for ((route, status), n) in self.requests.lock().expect("metrics lock").iter() {
            let _ = writeln!(
                out,
                "stockledger_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        out.push_str(
            "# HELP stockledger_http_request_duration_seconds HTTP request latency, by route.\n",
        );
        out.push_str("# TYPE stockledger_http_request_duration_seconds histogram\n");
        for (route, h) in self.latency.lock().expect("metrics lock").iter() {
            for (le, n) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(out, "stockledger_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{le}\"}} {n}");
            }
            let _ = writeln!(out, "stockledger_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(
                out,
                "stockledger_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "stockledger_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.count
            );
        }
        out.push_str("# HELP stockledger_expiries_total Reservations expired by this process's expiry worker.\n");
        out.push_str("# TYPE stockledger_expiries_total counter\n");
        let _ = writeln!(
            out,
            "stockledger_expiries_total {}",
            self.expiries.load(Ordering::Relaxed)
        );
        out.push_str(
            "# HELP stockledger_pool_connections Database connections in the pool, by state.\n",
        );
        out.push_str("# TYPE stockledger_pool_connections gauge\n");
        let _ = writeln!(
            out,
            "stockledger_pool_connections{{state=\"open\"}} {}",
            g.pool_size
        );
        let _ = writeln!(
            out,
            "stockledger_pool_connections{{state=\"idle\"}} {}",
            g.pool_available
        );
        let _ = writeln!(out, "stockledger_pool_waiting_requests {}", g.pool_waiting);
        out.push_str("# HELP stockledger_projection_lag_events Committed events a projection has not applied.\n");
        out.push_str("# TYPE stockledger_projection_lag_events gauge\n");
        for (name, events, _) in &g.projections {
            let _ = writeln!(
                out,
                "stockledger_projection_lag_events{{projection=\"{name}\"}} {events}"
            );
        }
        out.push_str("# HELP stockledger_projection_lag_seconds Age of the oldest event a projection has not applied.\n");
        out.push_str("# TYPE stockledger_projection_lag_seconds gauge\n");
        for (name, _, seconds) in &g.projections {
            let _ = writeln!(
                out,
                "stockledger_projection_lag_seconds{{projection=\"{name}\"}} {seconds}"
            );
        }
        out
    }
}
