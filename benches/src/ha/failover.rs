//! One failover under load: callers reserving through the HA server, the
//! leader killed, and what the callers saw and what the new primary kept.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stockledger::domain::{LineRequest, ReserveRequest, StreamKind};
use stockledger::store::Store;

use super::cluster::ScriptCluster;
use super::HaArgs;
use crate::commands::http::{HttpSender, HttpTarget};
use crate::commands::workload::ITEMS;

/// Writes acknowledged before the kill, so the load is in full swing.
const WARM_UP: Duration = Duration::from_secs(3);
/// Load kept up once writes are acknowledged on the new primary.
const AFTER_RECOVERY: Duration = Duration::from_secs(3);
/// The longest a failover may take before the run gives up.
const FAILOVER_LIMIT: Duration = Duration::from_secs(90);
/// Pause before a request that got 503 or no answer is sent again.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How long the new primary may take to answer the lookup of the log.
const LOOKUP_LIMIT: Duration = Duration::from_secs(60);

/// What one failover showed.
pub struct Failover {
    pub killed: u32,
    pub acknowledged: usize,
    /// Acknowledged reservations not in the new primary's log (goal 0).
    pub lost: usize,
    /// Answers of 503, and requests that got no answer (each retried).
    pub unavailable: usize,
    pub unanswered: usize,
    /// From the kill to the first write acknowledged after the outage.
    pub to_first_write_s: f64,
    /// The longest time with no write acknowledged.
    pub longest_gap_s: f64,
}

impl Failover {
    pub const HEADER: &'static [&'static str] = &[
        "run",
        "acknowledged",
        "lost",
        "answers of 503",
        "unanswered",
        "kill → first write on new primary (s)",
        "longest time without a write (s)",
    ];

    pub fn row(&self) -> Vec<String> {
        vec![
            format!("node {} killed", self.killed),
            self.acknowledged.to_string(),
            self.lost.to_string(),
            self.unavailable.to_string(),
            self.unanswered.to_string(),
            format!("{:.2}", self.to_first_write_s),
            format!("{:.2}", self.longest_gap_s),
        ]
    }

    pub fn json(&self) -> Value {
        json!({"killed": self.killed, "acknowledged": self.acknowledged, "lost": self.lost,
               "unavailable": self.unavailable, "unanswered": self.unanswered,
               "to_first_write_s": self.to_first_write_s, "longest_gap_s": self.longest_gap_s})
    }
}

/// What the callers were told.
#[derive(Default)]
struct Tally {
    /// When each reservation was acknowledged, and its id.
    acknowledged: Mutex<Vec<(Instant, String)>>,
    unavailable: AtomicUsize,
    unanswered: AtomicUsize,
    /// Answers no caller expects (a refusal: there is plenty of stock).
    unexpected: AtomicUsize,
}

/// A reservation of one unit of one of the mixed workload's items.
fn reservation(id: &str, item: u64) -> stockledger::domain::Command {
    ReserveRequest {
        reservation_id: id.to_owned(),
        order_id: format!("o-{id}"),
        lines: vec![LineRequest {
            sku: format!("mixed-i-{}", item % ITEMS),
            location: None,
            quantity: 1,
        }],
        ttl_seconds: None,
        backorder: false,
        latest_arrival: None,
    }
    .validate()
    .expect("a valid reservation")
}

/// One caller: reservation after reservation, each sent again after a 503
/// or no answer until it is answered (the same id: a retry is a replay).
async fn caller(sender: HttpSender, tally: Arc<Tally>, stop: Arc<AtomicBool>, tag: String) {
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let id = format!("{tag}-{n}");
        let cmd = reservation(&id, n.wrapping_mul(0x9e37_79b9) ^ id.len() as u64);
        loop {
            match sender.post(&cmd).await {
                Ok(s) if s.is_success() => {
                    tally
                        .acknowledged
                        .lock()
                        .unwrap()
                        .push((Instant::now(), id));
                    break;
                }
                Ok(s) if s.as_u16() == 503 => tally.unavailable.fetch_add(1, Ordering::Relaxed),
                Ok(_) => {
                    tally.unexpected.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(_) => tally.unanswered.fetch_add(1, Ordering::Relaxed),
            };
            if stop.load(Ordering::Relaxed) {
                return;
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
        n += 1;
    }
}

pub async fn run(
    http: &HttpTarget,
    cluster: &ScriptCluster,
    store: &Store,
    args: &HaArgs,
    f: usize,
) -> anyhow::Result<Failover> {
    let (tally, stop) = (Arc::new(Tally::default()), Arc::new(AtomicBool::new(false)));
    let mut callers = tokio::task::JoinSet::new();
    for c in 0..args.callers {
        let (tally, stop) = (tally.clone(), stop.clone());
        callers.spawn(caller(http.sender(), tally, stop, format!("fo{f}-{c}")));
    }
    tokio::time::sleep(WARM_UP).await;
    let (killed, killed_at) = cluster.kill_leader()?;
    // Until a new leader is known and a write acknowledged after that.
    let mut promoted_at = None;
    loop {
        anyhow::ensure!(
            killed_at.elapsed() < FAILOVER_LIMIT,
            "no failover within {FAILOVER_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        if promoted_at.is_none() && cluster.member("Leader").is_some_and(|n| n != killed) {
            promoted_at = Some(Instant::now());
        }
        let last_ack = tally.acknowledged.lock().unwrap().last().map(|(t, _)| *t);
        if let (Some(p), Some(a)) = (promoted_at, last_ack) {
            if a > p {
                break;
            }
        }
    }
    tokio::time::sleep(AFTER_RECOVERY).await;
    stop.store(true, Ordering::Relaxed);
    while let Some(c) = callers.join_next().await {
        c?;
    }
    let acknowledged = std::mem::take(&mut *tally.acknowledged.lock().unwrap());
    anyhow::ensure!(
        tally.unexpected.load(Ordering::Relaxed) == 0,
        "callers got answers they did not expect"
    );
    let (to_first_write_s, longest_gap_s) = outage(&acknowledged, killed_at);
    let lost = lost(store, &acknowledged).await?;
    Ok(Failover {
        killed,
        acknowledged: acknowledged.len(),
        lost,
        unavailable: tally.unavailable.load(Ordering::Relaxed),
        unanswered: tally.unanswered.load(Ordering::Relaxed),
        to_first_write_s,
        longest_gap_s,
    })
}

/// The longest stretch without an acknowledged write from the last one
/// before the kill on, and the time from the kill to the write that ended it.
fn outage(acknowledged: &[(Instant, String)], killed_at: Instant) -> (f64, f64) {
    let mut times: Vec<Instant> = acknowledged.iter().map(|(t, _)| *t).collect();
    times.sort();
    let from = times.partition_point(|t| *t <= killed_at).saturating_sub(1);
    let after = &times[from..];
    let longest = after
        .windows(2)
        .max_by_key(|w| w[1] - w[0])
        .map(|w| (w[1], w[1] - w[0]));
    match longest {
        Some((end, gap)) => (
            end.saturating_duration_since(killed_at).as_secs_f64(),
            gap.as_secs_f64(),
        ),
        None => (0.0, 0.0),
    }
}

/// Acknowledged reservations that are not in the (new) primary's log.
async fn lost(store: &Store, acknowledged: &[(Instant, String)]) -> anyhow::Result<usize> {
    let prefix = StreamKind::Reservation.prefix();
    let streams: Vec<String> = acknowledged
        .iter()
        .map(|(_, id)| format!("{prefix}{id}"))
        .collect();
    let sql = "SELECT count(DISTINCT stream) FROM events
               WHERE stream = ANY($1) AND type = 'ReservationCreated'";
    let deadline = Instant::now() + LOOKUP_LIMIT;
    loop {
        // The pool's connections to the old primary are broken: the first
        // tries may fail until they are replaced.
        let found = match store.pool().get().await {
            Ok(client) => client
                .query_one(sql, &[&streams])
                .await
                .map(|r| r.get::<_, i64>(0)),
            Err(e) => {
                anyhow::ensure!(Instant::now() < deadline, "looking up the log: {e}");
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            }
        };
        match found {
            Ok(n) => return Ok(streams.len() - usize::try_from(n)?),
            Err(e) => anyhow::ensure!(Instant::now() < deadline, "looking up the log: {e}"),
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outage_is_the_longest_gap_after_the_kill() {
        let t0 = Instant::now();
        let at = |ms: u64| (t0 + Duration::from_millis(ms), String::new());
        // Acks every 10 ms, the kill at 105 ms, one straggler answered at
        // 107 ms, then nothing until 4107 ms: a gap of 4 s ending 4002 ms
        // after the kill.
        let mut acks: Vec<_> = (0..=10).map(|k| at(10 * k)).collect();
        acks.extend([at(107), at(4107), at(4110)]);
        let (to_first, gap) = outage(&acks, t0 + Duration::from_millis(105));
        assert!((to_first - 4.002).abs() < 1e-6, "{to_first}");
        assert!((gap - 4.0).abs() < 1e-6, "{gap}");
    }
}
