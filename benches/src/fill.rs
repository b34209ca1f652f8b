//! Fills a database with a realistic log: receipts for every item, then
//! reservations of one to three items that are confirmed (60%), released
//! (25%) or left to expire (15%), with restocking when an item runs short;
//! among them, transfers of a few units to a back room (2% of new commands).
//! Everything goes through `Store::execute_batch`, the command path callers use.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use stockledger::domain::{
    command, Command, CommandContext, LineRequest, Outcome, ReceiveRequest, Rejection,
    ReserveRequest, TransferRequest,
};
use stockledger::store::{Store, StoreError};

/// Units each item starts with, and what a restock adds.
const INITIAL_UNITS: i64 = 200;
const RESTOCK_UNITS: i64 = 500;
/// Time to live of reservations that are meant to expire.
const EXPIRING_TTL_SECONDS: i64 = 1;
/// Time to live of the others: long enough never to expire during a fill.
const LIVE_TTL_SECONDS: i64 = 3600;
/// How long after its reservation an expiry is sent: the TTL and a margin,
/// so that it is due.
const EXPIRY_DUE_AFTER: Duration = Duration::from_millis(1100);
/// How long to wait when only expiries are left and none is due yet.
const EXPIRY_POLL: Duration = Duration::from_millis(100);
/// Percentage of reservations left to expire.
const EXPIRING_PERCENT: f64 = 15.0;
/// Percentage of the other reservations that are confirmed rather than
/// released: 71% of 85% is 60% of all reservations (and 25% released).
const CONFIRMED_PERCENT_OF_SETTLED: f64 = 71.0;
/// Percentage of new commands that move stock to the back room instead of
/// reserving it.
const TRANSFER_PERCENT: f64 = 2.0;
const BACKROOM: &str = "backroom";
/// Most lines of a reservation, and most units of a line.
const MAX_LINES: u64 = 3;
const MAX_LINE_QUANTITY: i64 = 3;

#[derive(Clone, Debug)]
pub struct FillConfig {
    /// Stop once at least this many events are in the log.
    pub events: u64,
    pub items: u32,
    /// Commands per transaction.
    pub batch: usize,
    /// Seed of the random workload: the same seed makes the same log.
    pub seed: u64,
    /// Prefix of every id, so fills can share a database.
    pub prefix: String,
}

#[derive(Clone, Debug)]
pub struct FillReport {
    pub events: u64,
    pub commands: u64,
    pub seconds: f64,
}

/// How an open reservation will be settled.
enum Settle {
    Confirm,
    Release,
}

/// Fills `store` until `cfg.events` events are in the log and every
/// reservation meant to expire has; `progress` hears the event count after
/// each transaction.
pub async fn fill(
    store: &Store,
    cfg: &FillConfig,
    mut progress: impl FnMut(u64),
) -> Result<FillReport, StoreError> {
    let started = Instant::now();
    let mut generator = Generator::new(cfg);
    let mut commands = 0u64;
    while !generator.finished() {
        let batch = generator.next_batch();
        if batch.is_empty() {
            tokio::time::sleep(EXPIRY_POLL).await;
            continue;
        }
        let results = store.execute_batch(&batch).await?;
        commands += batch.len() as u64;
        for ((cmd, _), result) in batch.iter().zip(results) {
            generator.answered(cmd, result)?;
        }
        progress(generator.events);
    }
    Ok(FillReport {
        events: generator.events,
        commands,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The workload: what is queued to send, and what each answer leads to.
struct Generator<'a> {
    cfg: &'a FillConfig,
    rng: Xoshiro256PlusPlus,
    /// Events the log has gained so far.
    events: u64,
    /// The number in the next generated id.
    next_id: u64,
    /// Receipts to send: the initial stock, then restocks.
    receipts: VecDeque<Command>,
    /// Reservations made, waiting to be confirmed or released.
    open: VecDeque<(String, Settle)>,
    /// Reservations meant to expire, with when they were made.
    expiring: VecDeque<(String, Instant)>,
}

impl<'a> Generator<'a> {
    fn new(cfg: &'a FillConfig) -> Generator<'a> {
        let receipts = (0..u64::from(cfg.items))
            .map(|i| receipt(format!("{}-in-{i}", cfg.prefix), sku(cfg, i), INITIAL_UNITS))
            .collect();
        Generator {
            cfg,
            rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed),
            events: 0,
            next_id: 0,
            receipts,
            open: VecDeque::new(),
            expiring: VecDeque::new(),
        }
    }

    /// Still making new reservations: the log is not yet long enough.
    fn filling(&self) -> bool {
        self.events < self.cfg.events
    }

    fn finished(&self) -> bool {
        !self.filling() && self.expiring.is_empty() && self.receipts.is_empty()
    }

    /// The next transaction: queued receipts first, then settlements (up to
    /// half a batch), every expiry that is due, and new reservations.
    fn next_batch(&mut self) -> Vec<(Command, CommandContext)> {
        let size = self.cfg.batch;
        let mut batch = Vec::with_capacity(size);
        while batch.len() < size {
            let Some(c) = self.receipts.pop_front() else {
                break;
            };
            batch.push(c);
        }
        while batch.len() < size / 2 {
            let Some((id, how)) = self.open.pop_front() else {
                break;
            };
            batch.push(
                match how {
                    Settle::Confirm => command::confirm(&id),
                    Settle::Release => command::release(&id, Some("customer cancelled")),
                }
                .expect("valid settlement"),
            );
        }
        while self
            .expiring
            .front()
            .is_some_and(|(_, at)| at.elapsed() > EXPIRY_DUE_AFTER)
        {
            let (id, _) = self.expiring.pop_front().expect("checked");
            batch.push(command::expire(&id).expect("valid expiry"));
        }
        while self.filling() && batch.len() < size {
            let next = if self.rng.random_bool(TRANSFER_PERCENT / 100.0) {
                self.transfer()
            } else {
                self.reservation()
            };
            batch.push(next);
        }
        batch
            .into_iter()
            .map(|c| (c, CommandContext::new("bench")))
            .collect()
    }

    /// A few units of a random item moved from its shelf to the back room.
    fn transfer(&mut self) -> Command {
        self.next_id += 1;
        let item = self.rng.random_range(0..u64::from(self.cfg.items));
        TransferRequest {
            transfer_id: format!("{}-t-{}", self.cfg.prefix, self.next_id),
            sku: sku(self.cfg, item),
            from_location: stockledger::domain::ids::DEFAULT_LOCATION.into(),
            to_location: BACKROOM.into(),
            quantity: self.rng.random_range(1..=MAX_LINE_QUANTITY),
        }
        .validate()
        .expect("valid transfer")
    }

    /// A new reservation of one to `MAX_LINES` random items.
    fn reservation(&mut self) -> Command {
        self.next_id += 1;
        let lines = (0..self.rng.random_range(1..=MAX_LINES))
            .map(|_| LineRequest {
                sku: sku(
                    self.cfg,
                    self.rng.random_range(0..u64::from(self.cfg.items)),
                ),
                location: None,
                quantity: self.rng.random_range(1..=MAX_LINE_QUANTITY),
            })
            .collect();
        let expires = self.rng.random_bool(EXPIRING_PERCENT / 100.0);
        ReserveRequest {
            reservation_id: format!("{}-r-{}", self.cfg.prefix, self.next_id),
            order_id: format!("{}-o-{}", self.cfg.prefix, self.next_id),
            lines,
            ttl_seconds: Some(if expires {
                EXPIRING_TTL_SECONDS
            } else {
                LIVE_TTL_SECONDS
            }),
        }
        .validate()
        .expect("valid reservation")
    }

    /// Counts the events of one answer and queues what follows from it: a
    /// settlement or an expiry for a new reservation, restocks for a
    /// shortfall. Any other refusal means the generator is wrong.
    fn answered(
        &mut self,
        cmd: &Command,
        result: Result<Outcome, Rejection>,
    ) -> Result<(), StoreError> {
        match (cmd, result) {
            (
                Command::Reserve(r),
                Ok(Outcome::Reservation {
                    replayed: false, ..
                }),
            ) => {
                self.events += 1;
                let id = r.reservation_id.to_string();
                if r.ttl_seconds as i64 == EXPIRING_TTL_SECONDS {
                    self.expiring.push_back((id, Instant::now()));
                } else if self.rng.random_bool(CONFIRMED_PERCENT_OF_SETTLED / 100.0) {
                    self.open.push_back((id, Settle::Confirm));
                } else {
                    self.open.push_back((id, Settle::Release));
                }
            }
            (_, Ok(Outcome::NotDue { .. })) => {}
            (_, Ok(o)) if !o.replayed() => self.events += 1,
            (_, Ok(_)) => {}
            (_, Err(Rejection::InsufficientStock { shortfalls })) => {
                for s in shortfalls {
                    self.next_id += 1;
                    let id = format!("{}-restock-{}", self.cfg.prefix, self.next_id);
                    self.receipts.push_back(receipt(id, s.sku, RESTOCK_UNITS));
                }
            }
            (_, Err(other)) => {
                return Err(StoreError::Database(
                    format!("the generator sent a command the ledger refused: {other}").into(),
                ))
            }
        }
        Ok(())
    }
}

/// The id of item `i`.
fn sku(cfg: &FillConfig, i: u64) -> String {
    format!("{}-sku-{i}", cfg.prefix)
}

/// A receipt of `quantity` units of `sku` at the default location; the ids
/// are the harness's own, so they are valid.
pub fn receipt(id: String, sku: String, quantity: i64) -> Command {
    ReceiveRequest {
        receipt_id: id,
        sku,
        location: None,
        quantity,
    }
    .validate()
    .expect("valid receipt")
}
