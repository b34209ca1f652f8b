//! Fills a database with a realistic log: receipts for every item, then
//! reservations of one to three items that are confirmed (60%), released
//! (25%) or left to expire (15%), with restocking when an item runs short
//! (through a purchase order: expected, delivered a little short against it,
//! the rest cancelled);
//! among them, transfers of a few units to a back room (2% of new commands)
//! stock counts of the back room (1%), per-order limits set on an item
//! or lifted (0.5%, never below a line's most units, so no reserve is
//! refused by one) and reorder points (1%, around the units an item
//! starts with, so the log has low-stock alerts both ways). Of the reservations settled by
//! hand, some ship in parts (a partial confirm, then the rest) or lose a
//! line first (a partial release, then the rest released), and some have
//! their hold extended first; and every `preorder::EVENTS_PER_EPISODE`
//! events, a pre-order episode (`preorder.rs`): backorders placed, filled
//! in placing order, and dropped where the supplier falls short.
//! Everything goes through `Store::execute_batch` (the episodes through
//! `Store::execute` and the backorder worker's pass), the command path
//! callers use.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use stockledger::domain::{
    command, Command, CommandContext, ConfirmLinesRequest, CountRequest, ExtendRequest,
    LimitRequest, LineRequest, Outcome, ReceiveRequest, Rejection, ReleaseLinesRequest,
    ReorderPointRequest, ReservationState, ReserveRequest, TransferRequest,
};
use stockledger::store::{Store, StoreError};

/// Units each item starts with, and what a restock adds.
const INITIAL_UNITS: i64 = 200;
const RESTOCK_UNITS: i64 = 500;
/// A restock's purchase order expects this many units more than arrive; the
/// rest is cancelled.
const RESTOCK_SHORT: i64 = 20;
/// The date restocks' purchase orders are due.
const RESTOCK_DUE: &str = "2027-01-15";
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
/// Percentage of new commands that count an item's back room (nothing is
/// reserved there, so a count is never refused).
const COUNT_PERCENT: f64 = 1.0;
/// Most units a back-room count finds.
const MAX_COUNTED: i64 = 20;
/// Percentage of new commands that set (or, one time in four, lift) an
/// item's per-order limit, and the range of limits set: never below the
/// most a reservation asks of one item (its lines may name one item
/// `MAX_LINES` times, `MAX_LINE_QUANTITY` each, and are merged).
const LIMIT_PERCENT: f64 = 0.5;
const LIMITS: std::ops::RangeInclusive<i64> =
    MAX_LINES as i64 * MAX_LINE_QUANTITY..=2 * MAX_LINES as i64 * MAX_LINE_QUANTITY;
/// Percentage of new commands that set an item's reorder point, and the
/// range of points set: around the units an item starts with, so that
/// reservations take items below their point and releases, expiries,
/// restocks and lower points bring them back.
const REORDER_POINT_PERCENT: f64 = 1.0;
/// Purchase orders placed ahead of need, of new commands: each is expected,
/// delivered a little short against it and the rest cancelled, as restocks
/// are, so every log holds expected receipts even when nothing runs short.
const PURCHASE_ORDER_PERCENT: f64 = 0.5;
const REORDER_POINTS: std::ops::RangeInclusive<i64> = INITIAL_UNITS / 2..=INITIAL_UNITS + 50;
/// Percentage of confirmed (released) reservations that are settled in two
/// steps: one unit of their first line first, then the rest.
const IN_PARTS_PERCENT: f64 = 15.0;
/// Percentage of settled reservations whose hold is extended first, and by
/// how much (later than `LIVE_TTL_SECONDS`, so always a later expiry).
const EXTENDED_PERCENT: f64 = 5.0;
const EXTENDED_TTL_SECONDS: i64 = 2 * LIVE_TTL_SECONDS;
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
    /// Events the fill appended: its commands' and the low-stock alerts the
    /// ledger wrote beside them (counted in the log, before and after).
    pub events: u64,
    pub commands: u64,
    pub seconds: f64,
}

/// What an open reservation is sent next. The partial steps and the
/// extension are followed by the whole confirm or release.
enum Settle {
    Confirm,
    Release,
    /// One unit of this SKU first, then the rest.
    ConfirmInParts(String),
    ReleaseInParts(String),
    /// A longer hold first, then a confirm (`true`) or release.
    Extend(bool),
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
    let before = logged(store).await?;
    let mut generator = Generator::new(cfg);
    let mut commands = 0u64;
    let mut episodes = 0u64;
    while !generator.finished() {
        if generator.events / crate::preorder::EVENTS_PER_EPISODE > episodes {
            episodes += 1;
            crate::preorder::episode(store, &cfg.prefix, episodes).await?;
        }
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
        events: (logged(store).await? - before) as u64,
        commands,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The events in the log. The commands' answers do not tell of the alerts
/// the ledger writes beside them, so the fill counts what the log holds.
async fn logged(store: &Store) -> Result<i64, StoreError> {
    let client = stockledger::store::pool::get(store.pool()).await?;
    Ok(client
        .query_one("SELECT count(*) FROM events", &[])
        .await?
        .get(0))
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
            batch.push(settlement(&id, how));
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
            let pick = self.rng.random_range(0.0..100.0);
            let next = if pick < TRANSFER_PERCENT {
                self.transfer()
            } else if pick < TRANSFER_PERCENT + COUNT_PERCENT {
                self.count()
            } else if pick < TRANSFER_PERCENT + COUNT_PERCENT + LIMIT_PERCENT {
                self.limit()
            } else if pick
                < TRANSFER_PERCENT + COUNT_PERCENT + LIMIT_PERCENT + REORDER_POINT_PERCENT
            {
                self.reorder_point()
            } else if pick
                < TRANSFER_PERCENT
                    + COUNT_PERCENT
                    + LIMIT_PERCENT
                    + REORDER_POINT_PERCENT
                    + PURCHASE_ORDER_PERCENT
            {
                let item = self.rng.random_range(0..u64::from(self.cfg.items));
                self.purchase_order(sku(self.cfg, item));
                continue;
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

    /// A stock take of a random item's back room.
    fn count(&mut self) -> Command {
        self.next_id += 1;
        let item = self.rng.random_range(0..u64::from(self.cfg.items));
        CountRequest {
            count_id: format!("{}-c-{}", self.cfg.prefix, self.next_id),
            sku: sku(self.cfg, item),
            location: Some(BACKROOM.into()),
            counted: self.rng.random_range(0..=MAX_COUNTED),
        }
        .validate()
        .expect("valid count")
    }

    /// A per-order limit on a random item, or its limit lifted.
    fn limit(&mut self) -> Command {
        self.next_id += 1;
        let item = self.rng.random_range(0..u64::from(self.cfg.items));
        let max = self.rng.random_range(LIMITS);
        LimitRequest {
            limit_id: format!("{}-l-{}", self.cfg.prefix, self.next_id),
            sku: sku(self.cfg, item),
            location: None,
            max_per_order: (!self.rng.random_bool(0.25)).then_some(max),
        }
        .validate()
        .expect("valid limit")
    }

    /// A reorder point on a random item.
    fn reorder_point(&mut self) -> Command {
        self.next_id += 1;
        let item = self.rng.random_range(0..u64::from(self.cfg.items));
        ReorderPointRequest {
            reorder_point_id: format!("{}-p-{}", self.cfg.prefix, self.next_id),
            sku: sku(self.cfg, item),
            location: None,
            reorder_point: Some(self.rng.random_range(REORDER_POINTS)),
        }
        .validate()
        .expect("valid reorder point")
    }

    /// A restock through a purchase order, queued to go before anything
    /// else: expected, received against it a little short, and the rest
    /// cancelled.
    fn purchase_order(&mut self, sku: String) {
        self.next_id += 1;
        let id = format!("{}-restock-{}", self.cfg.prefix, self.next_id);
        self.receipts
            .push_back(expected(&id, &sku, RESTOCK_UNITS + RESTOCK_SHORT));
        self.receipts
            .push_back(receipt_against(id.clone(), sku, RESTOCK_UNITS, &id));
        self.receipts.push_back(
            stockledger::domain::CancelExpected::validate(&id).expect("valid cancellation"),
        );
    }

    /// How a reservation that is not left to expire will be settled.
    fn plan(&mut self, r: &stockledger::domain::command::Reserve) -> Settle {
        let confirm = self.rng.random_bool(CONFIRMED_PERCENT_OF_SETTLED / 100.0);
        if self.rng.random_bool(EXTENDED_PERCENT / 100.0) {
            return Settle::Extend(confirm);
        }
        if self.rng.random_bool(IN_PARTS_PERCENT / 100.0) {
            let first = r.lines[0].item.sku.to_string();
            return match confirm {
                true => Settle::ConfirmInParts(first),
                false => Settle::ReleaseInParts(first),
            };
        }
        match confirm {
            true => Settle::Confirm,
            false => Settle::Release,
        }
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
            backorder: false,
            latest_arrival: None,
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
                } else {
                    let plan = self.plan(r);
                    self.open.push_back((id, plan));
                }
            }
            // A first step that left units open: the rest follows.
            (
                Command::ConfirmLines(_) | Command::ReleaseLines(_) | Command::Extend(_),
                Ok(Outcome::Reservation { view, replayed }),
            ) => {
                self.events += u64::from(!replayed);
                if view.state == ReservationState::Reserved {
                    let confirm = match cmd {
                        Command::ReleaseLines(_) => false,
                        Command::Extend(e) => e.extension_id.as_str().ends_with("-confirm"),
                        _ => true,
                    };
                    let then = if confirm {
                        Settle::Confirm
                    } else {
                        Settle::Release
                    };
                    self.open.push_back((view.reservation_id.to_string(), then));
                }
            }
            (_, Ok(Outcome::NotDue { .. })) => {}
            // A delivery against an expected receipt appends to both streams.
            (Command::Receive(r), Ok(o)) if !o.replayed() && r.against.is_some() => {
                self.events += 2
            }
            (_, Ok(o)) if !o.replayed() => self.events += 1,
            (_, Ok(_)) => {}
            (_, Err(Rejection::InsufficientStock { shortfalls })) => {
                for s in shortfalls {
                    self.purchase_order(s.sku);
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

/// The command that settles (or begins to settle) reservation `id`.
fn settlement(id: &str, how: Settle) -> Command {
    let one = |sku: String| {
        vec![LineRequest {
            sku,
            location: None,
            quantity: 1,
        }]
    };
    match how {
        Settle::Confirm => command::confirm(id),
        Settle::Release => command::release(id, Some("customer cancelled")),
        Settle::ConfirmInParts(sku) => ConfirmLinesRequest {
            confirmation_id: "parcel-1".into(),
            lines: one(sku),
        }
        .validate(id),
        Settle::ReleaseInParts(sku) => ReleaseLinesRequest {
            release_id: "line-removed".into(),
            lines: one(sku),
            reason: Some("customer removed a line".into()),
        }
        .validate(id),
        // The extension's id says what follows it.
        Settle::Extend(confirm) => ExtendRequest {
            extension_id: if confirm {
                "hold-confirm"
            } else {
                "hold-release"
            }
            .into(),
            ttl_seconds: EXTENDED_TTL_SECONDS,
        }
        .validate(id),
    }
    .expect("valid settlement")
}

/// The id of item `i`.
fn sku(cfg: &FillConfig, i: u64) -> String {
    format!("{}-sku-{i}", cfg.prefix)
}

/// An expected receipt (a purchase order) of `quantity` units of `sku`.
fn expected(id: &str, sku: &str, quantity: i64) -> Command {
    stockledger::domain::ExpectRequest {
        expected_id: id.to_owned(),
        sku: sku.to_owned(),
        location: None,
        quantity,
        expected_on: RESTOCK_DUE.to_owned(),
    }
    .validate()
    .expect("valid expected receipt")
}

/// A receipt of `quantity` units of `sku` delivered against `against`.
fn receipt_against(id: String, sku: String, quantity: i64, against: &str) -> Command {
    ReceiveRequest {
        receipt_id: id,
        sku,
        location: None,
        quantity,
        against: Some(against.to_owned()),
    }
    .validate()
    .expect("valid receipt")
}

/// A receipt of `quantity` units of `sku` at the default location; the ids
/// are the harness's own, so they are valid.
pub fn receipt(id: String, sku: String, quantity: i64) -> Command {
    ReceiveRequest {
        receipt_id: id,
        sku,
        location: None,
        quantity,
        against: None,
    }
    .validate()
    .expect("valid receipt")
}
