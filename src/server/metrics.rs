//! Prometheus metrics, in a `prometheus_client::Registry` the server owns (not
//! a global one, so a test can run many servers in one process). Route labels
//! are the matched route patterns, so their number is bounded by the router;
//! label values are escaped by the encoder.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use std::fmt::Write;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The outcomes of a key lookup (`stockledger_key_lookups_total`).
pub const KEY_LOOKUP_OUTCOMES: [&str; 5] = ["found", "unknown", "refused", "stale", "failed"];

/// The content type of the OpenMetrics text the registry encodes.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A label value escaped as the exposition format requires (backslash, double
/// quote and newline). prometheus-client writes label values as they are, so
/// every label whose value is not a constant of ours goes through this.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Escaped(String);

impl EncodeLabelValue for Escaped {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandLabels {
    r#type: &'static str,
    outcome: Escaped,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: Escaped,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: Escaped,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: Escaped,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProjectionLabel {
    projection: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabel {
    worker: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RelayLabel {
    stream: Escaped,
}

/// No labels: a family of one series that a scrape can leave out.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NoLabels {}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LookupLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableLabel {
    table: Escaped,
}

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

pub struct Metrics {
    registry: Registry,
    commands: Family<CommandLabels, Counter>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabel, Histogram, fn() -> Histogram>,
    expiries: Counter,
    fills: Counter,
    pool: Family<StateLabel, Gauge>,
    pool_waiting: Gauge,
    lag_events: Family<ProjectionLabel, Gauge>,
    lag_seconds: Family<ProjectionLabel, Gauge<f64, AtomicU64>>,
    reservations: Family<StateLabel, Gauge>,
    reservation_units: Family<StateLabel, Gauge>,
    relay_lag: Family<RelayLabel, Gauge>,
    relay_published: Family<RelayLabel, Gauge>,
    // Families without labels, so that a scrape that cannot read them
    // leaves them out instead of showing their last value.
    seal_lag_events: Family<NoLabels, Gauge>,
    seal_lag_seconds: Family<NoLabels, Gauge<f64, AtomicU64>>,
    key_lookups: Family<LookupLabel, Counter>,
    log_partitions: Family<TableLabel, Gauge>,
    database_up: Gauge,
    figures_age: Gauge<f64, AtomicU64>,
    worker_restarts: Family<WorkerLabel, Counter>,
    worker_up: Family<WorkerLabel, Gauge>,
    /// Renders one at a time: each clears the figures read from the
    /// database before setting what this scrape read.
    rendering: std::sync::Mutex<()>,
}

/// Values read at scrape time from outside the registry.
pub struct Gauges {
    pub pool_size: usize,
    pub pool_available: usize,
    pub pool_waiting: usize,
    /// (projection, lag in events, lag in seconds)
    pub projections: Vec<(&'static str, i64, f64)>,
    /// (state, reservations, units), from the `reservation_totals` read model.
    pub reservations: Vec<(String, i64, i64)>,
    /// (broker stream, events published, lag in events), from the relay checkpoints.
    pub relays: Vec<(String, i64, i64)>,
    /// (the log or the chain, partitions attached).
    pub partitions: Vec<(String, i64)>,
    /// (events no seal covers yet, age of the oldest in seconds), when read.
    pub seal: Option<(i64, f64)>,
    /// Whether the database answered the server's last readiness check.
    pub database_up: bool,
    /// Seconds since the figures read from the database (lag, reservations,
    /// relays) were last all read; figures that could not be read this time
    /// are left out, never repeated.
    pub figures_age_seconds: f64,
    /// Each worker, and whether it runs now.
    pub workers: Vec<(&'static str, bool)>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut m = Metrics {
            registry: Registry::with_prefix("stockledger"),
            commands: Family::default(),
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            expiries: Counter::default(),
            fills: Counter::default(),
            pool: Family::default(),
            pool_waiting: Gauge::default(),
            lag_events: Family::default(),
            lag_seconds: Family::default(),
            reservations: Family::default(),
            reservation_units: Family::default(),
            relay_lag: Family::default(),
            relay_published: Family::default(),
            seal_lag_events: Family::default(),
            seal_lag_seconds: Family::default(),
            key_lookups: Family::default(),
            log_partitions: Family::default(),
            database_up: Gauge::default(),
            figures_age: Gauge::default(),
            worker_restarts: Family::default(),
            worker_up: Family::default(),
            rendering: std::sync::Mutex::new(()),
        };
        m.register();
        // Every outcome from the start, at 0: `increase()` cannot see the
        // first lookups of a series that appears with them.
        for outcome in KEY_LOOKUP_OUTCOMES {
            m.key_lookups
                .get_or_create(&LookupLabel { outcome })
                .inc_by(0);
        }
        m
    }
}

impl Metrics {
    fn register(&mut self) {
        let r = &mut self.registry;
        r.register(
            "commands",
            "Commands answered, by type and outcome",
            self.commands.clone(),
        );
        r.register(
            "http_requests",
            "HTTP requests, by route and status",
            self.requests.clone(),
        );
        r.register(
            "http_request_duration_seconds",
            "HTTP request latency, by route",
            self.latency.clone(),
        );
        r.register(
            "expiries",
            "Reservations expired by this process's expiry worker",
            self.expiries.clone(),
        );
        r.register(
            "backorder_fills",
            "Reservations whose waiting units this process's backorder worker filled or dropped",
            self.fills.clone(),
        );
        r.register(
            "pool_connections",
            "Database connections in the pool, by state",
            self.pool.clone(),
        );
        r.register(
            "pool_waiting_requests",
            "Callers waiting for a pooled connection",
            self.pool_waiting.clone(),
        );
        r.register(
            "projection_lag_events",
            "Committed events a projection has not applied",
            self.lag_events.clone(),
        );
        r.register(
            "projection_lag_seconds",
            "Age of the oldest event a projection has not applied",
            self.lag_seconds.clone(),
        );
        r.register(
            "reservations",
            "Reservations by state, as far as the reservation_totals read model has come",
            self.reservations.clone(),
        );
        r.register(
            "reservation_units",
            "Units held or settled by reservations, by state",
            self.reservation_units.clone(),
        );
        self.register_log();
        self.register_health();
    }

    /// The log beyond the commands: the relay's progress, the partitions.
    fn register_log(&mut self) {
        let r = &mut self.registry;
        r.register(
            "relay_lag_events",
            "Committed events the event relay has not yet had acknowledged by the broker",
            self.relay_lag.clone(),
        );
        r.register(
            "relay_published_events",
            "Events in the broker stream, as the relay last saw acknowledged",
            self.relay_published.clone(),
        );
        r.register(
            "seal_lag_events",
            "Committed events no seal covers yet (counted up to a cap)",
            self.seal_lag_events.clone(),
        );
        r.register(
            "seal_lag_seconds",
            "Age of the oldest event no seal covers yet; 0 when all are sealed",
            self.seal_lag_seconds.clone(),
        );
        r.register(
            "log_partitions",
            "Partitions of the log (events) and the chain (event_chain) attached; every lookup \
             of a stream or an order probes each of the log's",
            self.log_partitions.clone(),
        );
    }

    /// The server's own health: the database, the figures' age, the workers.
    fn register_health(&mut self) {
        let r = &mut self.registry;
        r.register(
            "database_up",
            "1 if the database answered the server's last readiness check, else 0",
            self.database_up.clone(),
        );
        r.register(
            "database_figures_age_seconds",
            "Seconds since the figures read from the database (projection lag, reservations, \
             relays) were last read; figures that cannot be read are left out",
            self.figures_age.clone(),
        );
        r.register(
            "key_lookups",
            "API keys looked up in the database (not in the key cache), by outcome: found, \
             unknown, refused (the address's budget for unknown keys is spent), stale (the \
             database is away and a key seen lately is honoured), failed",
            self.key_lookups.clone(),
        );
        r.register(
            "worker_restarts",
            "Times a worker panicked and was started again",
            self.worker_restarts.clone(),
        );
        r.register(
            "worker_up",
            "1 while a worker runs, 0 while it waits to restart or has stopped",
            self.worker_up.clone(),
        );
    }

    /// A worker panicked and is to be started again.
    pub fn worker_restarted(&self, worker: &'static str) {
        self.worker_restarts
            .get_or_create(&WorkerLabel { worker })
            .inc();
    }

    /// An API key looked up in the database: `outcome` is one of
    /// `KEY_LOOKUP_OUTCOMES`.
    pub fn key_lookup(&self, outcome: &'static str) {
        debug_assert!(KEY_LOOKUP_OUTCOMES.contains(&outcome), "{outcome}");
        self.key_lookups
            .get_or_create(&LookupLabel { outcome })
            .inc();
    }

    /// A command answered: `outcome` is `created`, `replayed`, `error` or a rejection code.
    pub fn command(&self, kind: &'static str, outcome: &str) {
        let labels = CommandLabels {
            r#type: kind,
            outcome: Escaped(outcome.to_owned()),
        };
        self.commands.get_or_create(&labels).inc();
    }

    pub fn request(&self, route: &str, status: u16, took: Duration) {
        let labels = RequestLabels {
            route: Escaped(route.to_owned()),
            status,
        };
        self.requests.get_or_create(&labels).inc();
        let route = RouteLabel {
            route: Escaped(route.to_owned()),
        };
        self.latency
            .get_or_create(&route)
            .observe(took.as_secs_f64());
    }

    pub fn expired(&self, n: u64) {
        self.expiries.inc_by(n);
    }

    pub fn filled(&self, n: u64) {
        self.fills.inc_by(n);
    }

    /// The OpenMetrics text exposition, with the scrape-time gauges set first.
    pub fn render(&self, g: &Gauges) -> String {
        let _one_at_a_time = self.rendering.lock().unwrap_or_else(|e| e.into_inner());
        // What was read from the database is this scrape's only: a figure
        // that could not be read now must not show its last value.
        self.lag_events.clear();
        self.lag_seconds.clear();
        self.reservations.clear();
        self.reservation_units.clear();
        self.relay_lag.clear();
        self.relay_published.clear();
        self.log_partitions.clear();
        self.seal_lag_events.clear();
        self.seal_lag_seconds.clear();
        if let Some((events, seconds)) = g.seal {
            self.seal_lag_events.get_or_create(&NoLabels {}).set(events);
            self.seal_lag_seconds
                .get_or_create(&NoLabels {})
                .set(seconds);
        }
        self.database_up.set(i64::from(g.database_up));
        self.figures_age.set(g.figures_age_seconds);
        for (worker, up) in &g.workers {
            self.worker_up
                .get_or_create(&WorkerLabel { worker })
                .set(i64::from(*up));
            // At 0 before the first restart, for the same reason as above.
            self.worker_restarts
                .get_or_create(&WorkerLabel { worker })
                .inc_by(0);
        }
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        let state = |s: &str| StateLabel {
            state: Escaped(s.to_owned()),
        };
        let (open, idle) = (state("open"), state("idle"));
        self.pool.get_or_create(&open).set(gauge(g.pool_size));
        self.pool.get_or_create(&idle).set(gauge(g.pool_available));
        self.pool_waiting.set(gauge(g.pool_waiting));
        for (name, events, seconds) in &g.projections {
            let p = ProjectionLabel { projection: name };
            self.lag_events.get_or_create(&p).set(*events);
            self.lag_seconds.get_or_create(&p).set(*seconds);
        }
        for (name, n, units) in &g.reservations {
            self.reservations.get_or_create(&state(name)).set(*n);
            self.reservation_units
                .get_or_create(&state(name))
                .set(*units);
        }
        for (stream, published, lag) in &g.relays {
            let l = RelayLabel {
                stream: Escaped(stream.clone()),
            };
            self.relay_lag.get_or_create(&l).set(*lag);
            self.relay_published.get_or_create(&l).set(*published);
        }
        for (table, n) in &g.partitions {
            let t = TableLabel {
                table: Escaped(table.clone()),
            };
            self.log_partitions.get_or_create(&t).set(*n);
        }
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let m = Metrics::default();
        m.command("reserve", "a\"b\\c\nd");
        let text = m.render(&Gauges {
            pool_size: 1,
            pool_available: 1,
            pool_waiting: 0,
            projections: vec![("stock_levels", 3, 0.5)],
            reservations: vec![("RESERVED".into(), 2, 7)],
            relays: vec![("LEDGER".into(), 10, 4)],
            partitions: vec![("events".into(), 3)],
            seal: Some((12, 1.5)),
            database_up: true,
            figures_age_seconds: 0.5,
            workers: vec![("expiry", true)],
        });
        assert!(
            text.contains(r#"outcome="a\"b\\c\nd""#),
            "a quote, a backslash and a newline are escaped:\n{text}"
        );
        assert!(text.contains(r#"stockledger_projection_lag_events{projection="stock_levels"} 3"#));
        assert!(text.contains(r#"stockledger_reservation_units{state="RESERVED"} 7"#));
        assert!(text.contains(r#"stockledger_relay_lag_events{stream="LEDGER"} 4"#));
        assert!(text.contains(r#"stockledger_log_partitions{table="events"} 3"#));
        assert!(
            text.contains("stockledger_seal_lag_events{} 12\n"),
            "{text}"
        );
        assert!(
            text.contains("stockledger_seal_lag_seconds{} 1.5\n"),
            "{text}"
        );
        assert!(text.contains("stockledger_database_up 1"));
        assert!(text.contains(r#"stockledger_worker_up{worker="expiry"} 1"#));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn figures_not_read_are_dropped_not_repeated() {
        let m = Metrics::default();
        let gauges = |lag: Vec<(&'static str, i64, f64)>, up: bool| Gauges {
            pool_size: 1,
            pool_available: 1,
            pool_waiting: 0,
            seal: up.then_some((4, 0.25)),
            projections: lag,
            reservations: vec![],
            relays: vec![],
            partitions: vec![],
            database_up: up,
            figures_age_seconds: 0.0,
            workers: vec![],
        };
        let before = m.render(&gauges(vec![("stock_levels", 3, 0.5)], true));
        assert!(before.contains("stockledger_projection_lag_events{"));
        assert!(
            before.contains("stockledger_seal_lag_events{} 4"),
            "{before}"
        );
        let after = m.render(&gauges(vec![], false));
        assert!(
            !after.contains("stockledger_projection_lag_events{"),
            "{after}"
        );
        assert!(!after.contains("stockledger_seal_lag_events{"), "{after}");
        assert!(after.contains("stockledger_database_up 0"), "{after}");
    }
}
