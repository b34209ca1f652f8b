//! Fills a database with a realistic log: receipts for every item, then
//! reservations of one to three items that are confirmed (60%), released
//! (25%) or left to expire (15%), with restocking when an item runs short.
//! Everything goes through `Store::execute_batch`, the command path callers use.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::bench::rng::Rng;
use crate::domain::{
    command, Command, CommandContext, LineRequest, Outcome, ReceiveRequest, Rejection,
    ReserveRequest,
};
use crate::store::{Store, StoreError};

/// Units each item starts with, and what a restock adds.
const INITIAL_UNITS: i64 = 200;
const RESTOCK_UNITS: i64 = 500;
/// Time to live of reservations that are meant to expire.
const EXPIRING_TTL_SECONDS: i64 = 1;

#[derive(Clone, Debug)]
pub struct FillConfig {
    /// Stop once at least this many events are in the log.
    pub events: u64,
    pub items: u32,
    /// Commands per transaction.
    pub batch: usize,
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

enum Settle {
    Confirm,
    Release,
}

pub async fn fill(
    store: &Store,
    cfg: &FillConfig,
    mut progress: impl FnMut(u64),
) -> Result<FillReport, StoreError> {
    let started = Instant::now();
    let mut rng = Rng::new(cfg.seed);
    let ctx = || CommandContext::new("bench");
    let sku = |i: u64| format!("{}-sku-{i}", cfg.prefix);
    let receipt = |id: String, sku: String, quantity: i64| {
        ReceiveRequest {
            receipt_id: id,
            sku,
            location: None,
            quantity,
        }
        .validate()
        .expect("valid receipt")
    };

    let (mut events, mut commands, mut next_id) = (0u64, 0u64, 0u64);
    let mut pending: VecDeque<Command> = (0..u64::from(cfg.items))
        .map(|i| receipt(format!("{}-in-{i}", cfg.prefix), sku(i), INITIAL_UNITS))
        .collect();
    let mut open: VecDeque<(String, Settle)> = VecDeque::new();
    let mut expiring: VecDeque<(String, Instant)> = VecDeque::new();

    loop {
        let filling = events < cfg.events;
        if !filling && expiring.is_empty() && pending.is_empty() {
            break;
        }
        let mut batch: Vec<(Command, CommandContext)> = Vec::with_capacity(cfg.batch);
        while batch.len() < cfg.batch {
            let Some(c) = pending.pop_front() else { break };
            batch.push((c, ctx()));
        }
        while batch.len() < cfg.batch / 2 {
            let Some((id, how)) = open.pop_front() else {
                break;
            };
            let cmd = match how {
                Settle::Confirm => command::confirm(&id),
                Settle::Release => command::release(&id, Some("customer cancelled")),
            };
            batch.push((cmd.expect("valid"), ctx()));
        }
        while expiring
            .front()
            .is_some_and(|(_, at)| at.elapsed() > Duration::from_millis(1100))
        {
            let (id, _) = expiring.pop_front().expect("checked");
            batch.push((command::expire(&id).expect("valid"), ctx()));
        }
        while filling && batch.len() < cfg.batch {
            next_id += 1;
            let n_lines = 1 + rng.below(3);
            let lines = (0..n_lines)
                .map(|_| LineRequest {
                    sku: sku(rng.below(u64::from(cfg.items))),
                    location: None,
                    quantity: 1 + rng.below(3) as i64,
                })
                .collect();
            let expires = rng.chance(15);
            let cmd = ReserveRequest {
                reservation_id: format!("{}-r-{next_id}", cfg.prefix),
                order_id: format!("{}-o-{next_id}", cfg.prefix),
                lines,
                ttl_seconds: Some(if expires { EXPIRING_TTL_SECONDS } else { 3600 }),
            }
            .validate()
            .expect("valid reservation");
            batch.push((cmd, ctx()));
        }
        if batch.is_empty() {
            // Only expiries are left and none is due yet.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let results = store.execute_batch(&batch).await?;
        commands += batch.len() as u64;
        for ((cmd, _), result) in batch.iter().zip(results) {
            match (cmd, result) {
                (
                    Command::Reserve(r),
                    Ok(Outcome::Reservation {
                        replayed: false, ..
                    }),
                ) => {
                    events += 1;
                    let id = r.reservation_id.to_string();
                    if r.ttl_seconds as i64 == EXPIRING_TTL_SECONDS {
                        expiring.push_back((id, Instant::now()));
                    } else if rng.chance(71) {
                        // 60% of all reservations are confirmed, 25% released.
                        open.push_back((id, Settle::Confirm));
                    } else {
                        open.push_back((id, Settle::Release));
                    }
                }
                (_, Ok(Outcome::NotDue { .. })) => {}
                (_, Ok(o)) if !o.replayed() => events += 1,
                (_, Ok(_)) => {}
                (_, Err(Rejection::InsufficientStock { shortfalls })) => {
                    for s in shortfalls {
                        next_id += 1;
                        pending.push_back(receipt(
                            format!("{}-restock-{next_id}", cfg.prefix),
                            s.sku,
                            RESTOCK_UNITS,
                        ));
                    }
                }
                (_, Err(other)) => {
                    return Err(StoreError::Database(
                        format!("the generator sent a command the ledger refused: {other}").into(),
                    ))
                }
            }
        }
        progress(events);
    }
    Ok(FillReport {
        events,
        commands,
        seconds: started.elapsed().as_secs_f64(),
    })
}
