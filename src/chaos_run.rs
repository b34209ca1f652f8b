//! `stockledger chaos`: a self-contained run of mixed load through the
//! served command path (group commit) with faults injected between it and
//! PostgreSQL, then the verdict: what was acknowledged, whether any of it is
//! missing or doubled, whether anything was oversold, and the audit.
//!
//! The world is passed in: the database's connection settings, the run's
//! settings and a cancellation token. Writers act like order services: each
//! command is retried with the same ids until it is answered, and every
//! answer is kept to be checked against the log afterwards.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::info;

use fault_proxy::{CommitFault, Proxy, Upstream};
use stockledger::domain::{
    command, Command, CommandContext, EventType, LineRequest, Outcome, ReceiveRequest,
    ReservationState, ReserveRequest, StreamKind,
};
use stockledger::limits::{
    CHAOS_DIRECT_POOL_SIZE, CHAOS_FAULT_INTERVAL_MS, CHAOS_HELD_REPLY_MS, CHAOS_ITEMS,
    CHAOS_RETRY_PAUSE_MS, CHAOS_RETRY_SECONDS, CHAOS_SEED_QUANTITY, CHAOS_SETTLE_SECONDS,
};
use stockledger::store::error::Cause;
use stockledger::store::group::GroupConfig;
use stockledger::store::{pool, Store, StoreError};

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct ChaosConfig {
    pub seconds: u64,
    pub writers: usize,
    pub pool_size: usize,
    /// Whether to inject faults (off: the same load through the same proxy,
    /// as the baseline a run with faults is compared with).
    pub faults: bool,
}

/// The verdict.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ChaosReport {
    pub seconds: u64,
    pub writers: usize,
    /// Commands answered (accepted or refused by a business rule).
    pub acknowledged: u64,
    /// Answers of UNAVAILABLE that the writers retried.
    pub retried: u64,
    /// Commands still answered UNAVAILABLE when their writer stopped
    /// retrying (`CHAOS_RETRY_SECONDS` after the run): unacknowledged, so
    /// not expected in the log, but a sign the service did not come back.
    pub abandoned: u64,
    /// Faults injected, by kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// Acknowledged effects missing from the log.
    pub lost: u64,
    /// Streams holding more events than their commands can append.
    pub duplicated: u64,
    /// Items whose figures break `0 <= reserved <= on_hand`.
    pub oversold: u64,
    /// Commands answered with an error that is not retryable (a bug).
    pub failed: u64,
    pub audit_clean: bool,
    pub audit_differences: usize,
}

impl ChaosReport {
    pub fn passed(&self) -> bool {
        self.lost == 0
            && self.duplicated == 0
            && self.oversold == 0
            && self.failed == 0
            && self.audit_clean
    }
}

/// One acknowledged effect to find in the log afterwards: this stream holds
/// an event of this type at this seq.
#[derive(Clone, Debug)]
struct Expect {
    stream: String,
    seq: i32,
    event: &'static str,
}

#[derive(Default)]
struct Tally {
    acknowledged: u64,
    retried: u64,
    abandoned: u64,
    failed: u64,
    expected: Vec<Expect>,
}

/// Runs the load and the faults for `config.seconds`, settles, and checks.
/// `database` must be a fresh, migrated database; the run connects to it
/// through a fault proxy.
pub async fn run(
    database: tokio_postgres::Config,
    config: ChaosConfig,
    cancel: CancellationToken,
) -> Result<ChaosReport, StoreError> {
    let direct = Store::new(pool::build(database.clone(), CHAOS_DIRECT_POOL_SIZE)?);
    direct.migrate().await?;
    seed_stock(&direct).await?;
    let proxy =
        Arc::new(Proxy::start(Upstream::of(&database)).await.map_err(|e| {
            StoreError::Unavailable(Cause::with_source("starting the fault proxy", e))
        })?);
    let store = Store::with_group_commit(
        pool::build(proxy.config(&database), config.pool_size)?,
        GroupConfig::default(),
    );
    let workers = CancellationToken::new();
    let projections = tokio::spawn(stockledger::projection::worker::run_all(
        direct.pool().clone(),
        // The writers are in this process, but their store goes through the
        // proxy; the runner polls as it would for another process's writers.
        Default::default(),
        workers.clone(),
        Default::default(),
    ));
    let until = Instant::now() + Duration::from_secs(config.seconds);
    let tally = Arc::new(Mutex::new(Tally::default()));
    let writers: Vec<_> = (0..config.writers)
        .map(|w| {
            let (store, cancel, tally) = (store.clone(), cancel.clone(), tally.clone());
            tokio::spawn(writer(store, w, until, cancel, tally))
        })
        .collect();
    // The proxy outlives the writers: a command still being retried when
    // the faults end must reach the database, not a closed port.
    let faults = if config.faults {
        inject(proxy.clone(), direct.clone(), database, until, cancel).await
    } else {
        tokio::select! {
            _ = tokio::time::sleep_until(until) => {}
            _ = cancel.cancelled() => {}
        }
        BTreeMap::new()
    };
    for w in writers {
        let _ = w.await;
    }
    drop(proxy);
    // Every fault is over: the read models catch up, then the verdict.
    let settle = Duration::from_secs(CHAOS_SETTLE_SECONDS);
    let _ = stockledger::projection::worker::catch_up_fully(direct.pool(), settle).await?;
    workers.cancel();
    let _ = projections.await;
    let tally = std::mem::take(&mut *tally.lock().expect("tally lock"));
    verdict(&direct, &config, tally, faults).await
}

/// Stock to sell, received before the faults begin.
async fn seed_stock(direct: &Store) -> Result<(), StoreError> {
    let seed: Vec<_> = (0..CHAOS_ITEMS as usize)
        .map(|i| {
            let cmd = receive(&format!("seed-{i}"), i, CHAOS_SEED_QUANTITY);
            (cmd, CommandContext::new("chaos"))
        })
        .collect();
    direct.execute_batch(&seed).await?;
    Ok(())
}

/// What was acknowledged against what the log holds, and the audit.
async fn verdict(
    direct: &Store,
    config: &ChaosConfig,
    tally: Tally,
    faults: BTreeMap<&'static str, u64>,
) -> Result<ChaosReport, StoreError> {
    let mut report = verify(direct, &tally.expected).await?;
    report.seconds = config.seconds;
    report.writers = config.writers;
    report.acknowledged = tally.acknowledged;
    report.retried = tally.retried;
    report.abandoned = tally.abandoned;
    report.failed = tally.failed;
    report.faults = faults;
    let audit = stockledger::audit::audit(direct.pool()).await?;
    report.audit_clean = audit.clean();
    report.audit_differences = audit.differences.len();
    Ok(report)
}

/// A writer: receipts now and then, reservations of one or two items, each
/// followed by a confirm or a release. Every command is retried with the same
/// ids until answered.
async fn writer(
    store: Store,
    w: usize,
    until: Instant,
    cancel: CancellationToken,
    tally: Arc<Mutex<Tally>>,
) {
    for k in 0u64.. {
        if Instant::now() >= until || cancel.is_cancelled() {
            return;
        }
        let pick = |salt: u64| ((w as u64 * 7919 + k * 104_729 + salt) % CHAOS_ITEMS) as usize;
        if k % 10 == 0 {
            let id = format!("in-{w}-{k}");
            let cmd = receive(&id, pick(1), 50);
            if let Some(Ok(_)) = answer(&store, cmd, &tally, &cancel, until).await {
                expect(
                    &tally,
                    StreamKind::Receipt,
                    &id,
                    1,
                    opening(StreamKind::Receipt),
                );
            }
            continue;
        }
        let id = format!("r-{w}-{k}");
        let lines = [(pick(2), 1 + (k % 3) as i64), (pick(3), 1)];
        let reserve = reserve(&id, &format!("o-{w}-{k}"), &lines);
        let Some(Ok(_)) = answer(&store, reserve, &tally, &cancel, until).await else {
            continue; // refused (not enough stock): nothing to settle
        };
        let kind = StreamKind::Reservation;
        expect(&tally, kind, &id, 1, opening(kind));
        let (settle, to) = if k % 3 == 0 {
            (command::release(&id, None), ReservationState::Released)
        } else {
            (command::confirm(&id), ReservationState::Confirmed)
        };
        let settle = settle.expect("generated ids are valid");
        if let Some(Ok(_)) = answer(&store, settle, &tally, &cancel, until).await {
            let event = EventType::settling(to).expect("every end has its type");
            expect(&tally, kind, &id, 2, event);
        }
    }
}

/// A stream's name, as the log stores it.
fn stream(kind: StreamKind, id: &str) -> String {
    format!("{}{id}", kind.prefix())
}

/// The type that opens a stream of `kind` (a receipt, a reservation).
fn opening(kind: StreamKind) -> EventType {
    EventType::opening(kind).expect("receipts and reservations open with one type")
}

/// An acknowledged command's event: the `seq`th of the stream of `kind`
/// named `id`, of type `event`.
fn expect(tally: &Mutex<Tally>, kind: StreamKind, id: &str, seq: i32, event: EventType) {
    let (stream, event) = (stream(kind, id), event.as_str());
    tally
        .lock()
        .expect("tally lock")
        .expected
        .push(Expect { stream, seq, event });
}

/// Sends `cmd` until it is answered (retrying UNAVAILABLE with the same
/// ids), for at most `CHAOS_RETRY_SECONDS` after the run's end `until`: an
/// answer that never comes is left unacknowledged, so it is not expected.
async fn answer(
    store: &Store,
    cmd: Command,
    tally: &Mutex<Tally>,
    cancel: &CancellationToken,
    until: Instant,
) -> Option<Result<Outcome, stockledger::domain::Rejection>> {
    let give_up = until + Duration::from_secs(CHAOS_RETRY_SECONDS);
    loop {
        match store
            .execute(cmd.clone(), CommandContext::new("chaos"))
            .await
        {
            Ok(answer) => {
                tally.lock().expect("tally lock").acknowledged += 1;
                return Some(answer);
            }
            Err(e) if e.is_retryable() && !cancel.is_cancelled() && Instant::now() < give_up => {
                tally.lock().expect("tally lock").retried += 1;
                tokio::time::sleep(Duration::from_millis(CHAOS_RETRY_PAUSE_MS)).await;
            }
            Err(e) => {
                let mut tally = tally.lock().expect("tally lock");
                if !e.is_retryable() {
                    tracing::error!(error = %e, "a command failed for good");
                    tally.failed += 1;
                } else if !cancel.is_cancelled() {
                    tracing::warn!(error = %e, "a command given up on, still unavailable");
                    tally.abandoned += 1;
                }
                return None;
            }
        }
    }
}

fn sku(i: usize) -> String {
    format!("chaos-{i}")
}

fn receive(id: &str, item: usize, quantity: i64) -> Command {
    ReceiveRequest {
        receipt_id: id.into(),
        sku: sku(item),
        location: None,
        quantity,
        against: None,
    }
    .validate()
    .expect("generated receipts are valid")
}

fn reserve(id: &str, order: &str, lines: &[(usize, i64)]) -> Command {
    ReserveRequest {
        reservation_id: id.into(),
        order_id: order.into(),
        lines: lines
            .iter()
            .map(|(i, q)| LineRequest {
                sku: sku(*i),
                location: None,
                quantity: *q,
            })
            .collect(),
        ttl_seconds: None,
        backorder: false,
        latest_arrival: None,
    }
    .validate()
    .expect("generated reservations are valid")
}

/// Injects a random fault every `CHAOS_FAULT_INTERVAL_MS` or so until `until`.
async fn inject(
    proxy: Arc<Proxy>,
    direct: Store,
    database: tokio_postgres::Config,
    until: Instant,
    cancel: CancellationToken,
) -> BTreeMap<&'static str, u64> {
    let mut faults = BTreeMap::new();
    let mut n: u64 = 0;
    while Instant::now() < until && !cancel.is_cancelled() {
        let pause = CHAOS_FAULT_INTERVAL_MS / 2 + rand::random_range(0..CHAOS_FAULT_INTERVAL_MS);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        n += 1;
        let kind = match n % 6 {
            0 => {
                proxy.cut_all();
                "connections cut"
            }
            1 => {
                proxy.on_next_commits(&[CommitFault::HoldReply(Duration::from_millis(
                    CHAOS_HELD_REPLY_MS,
                ))]);
                "commit reply held"
            }
            2 => {
                proxy.on_next_commits(&[CommitFault::CutAfter]);
                "cut after commit"
            }
            3 => {
                proxy.on_next_commits(&[CommitFault::CutBefore]);
                "cut before commit"
            }
            4 => {
                proxy.on_next_commits(&[CommitFault::BlackHole]);
                "commit reply black-holed"
            }
            _ => {
                if kill_a_backend(&direct, &database).await {
                    "backend killed"
                } else {
                    "backend kill missed"
                }
            }
        };
        *faults.entry(kind).or_insert(0) += 1;
    }
    info!(?faults, "faults injected");
    // Black holes left armed but unused must not outlive the run.
    proxy.cut_all();
    faults
}

/// Ends one backend of the run's database that is not our own connection.
async fn kill_a_backend(direct: &Store, database: &tokio_postgres::Config) -> bool {
    let Ok(client) = pool::get(direct.pool()).await else {
        return false;
    };
    let dbname = database.get_dbname().unwrap_or_default().to_owned();
    client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM (
                 SELECT pid FROM pg_stat_activity
                 WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                   AND application_name = 'stockledger' AND state = 'active'
                 ORDER BY random() LIMIT 1) AS victim",
            &[&dbname],
        )
        .await
        .map(|r| r.get::<_, i64>(0) > 0)
        .unwrap_or(false)
}

/// Checks every acknowledged effect against the log, looks for doubled
/// streams and oversold items.
async fn verify(direct: &Store, expected: &[Expect]) -> Result<ChaosReport, StoreError> {
    let client = pool::get(direct.pool()).await?;
    let mut logged: HashMap<(String, i32), String> = HashMap::new();
    let mut closing_per_stream: HashMap<String, i64> = HashMap::new();
    for row in client
        .query("SELECT stream, seq, type FROM events", &[])
        .await?
    {
        let stream: String = row.get(0);
        let type_name: String = row.get(2);
        // A stream is doubled when an event follows the one that closes it.
        let closes = EventType::parse(&type_name).is_some_and(StreamKind::closes);
        *closing_per_stream.entry(stream.clone()).or_default() += i64::from(closes);
        logged.insert((stream, row.get(1)), type_name);
    }
    let lost = expected
        .iter()
        .filter(|e| logged.get(&(e.stream.clone(), e.seq)).map(String::as_str) != Some(e.event))
        .count() as u64;
    let duplicated = closing_per_stream
        .iter()
        .filter(|(_, closing)| **closing > 1)
        .count() as u64;
    let oversold: i64 = client
        .query_one(
            "SELECT count(*) FROM item_balances WHERE reserved < 0 OR reserved > on_hand OR on_hand < 0",
            &[],
        )
        .await?
        .get(0);
    Ok(ChaosReport {
        lost,
        duplicated,
        oversold: oversold as u64,
        ..ChaosReport::default()
    })
}
