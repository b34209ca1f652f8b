//! The command path: one transaction decides a whole batch of commands.
//!
//! lock and load -> decide each command in order (pure) -> append all events
//! -> move balances -> commit -> answer. A failed attempt that is worth
//! retrying (deadlock, concurrent duplicate, lost connection) runs the whole
//! batch again from the start with the same command ids; because every command
//! is idempotent by its stream, a re-run after a commit whose acknowledgement
//! was lost finds its own events and gives the caller the true answer.

use std::time::Duration;

use deadpool_postgres::Pool;
use tracing::{debug, warn};

use crate::domain::{apply, decide, Command, CommandContext, Outcome, Rejection};
use crate::limits::{MAX_COMMANDS_PER_BATCH, MAX_TRANSACTION_ATTEMPTS, RETRY_BACKOFF_START_MS};
use crate::store::error::Failure;
use crate::store::{load, pool, write, StoreError};

/// The answer to each command of a batch, in order.
pub type BatchResult = Vec<Result<Outcome, Rejection>>;

pub(crate) async fn execute_batch(
    pool: &Pool,
    batch: &[(Command, CommandContext)],
) -> Result<BatchResult, StoreError> {
    assert!(
        batch.len() <= MAX_COMMANDS_PER_BATCH,
        "batch of {} commands exceeds MAX_COMMANDS_PER_BATCH",
        batch.len()
    );
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let mut backoff_ms = RETRY_BACKOFF_START_MS;
    let mut last = String::new();
    for attempt in 1..=MAX_TRANSACTION_ATTEMPTS {
        let mut client = pool::get(pool).await?;
        match run_once(&mut client, batch).await {
            Ok(results) => return Ok(results),
            Err(Failure::Fatal(e)) => return Err(e),
            Err(Failure::Retry(why)) => {
                warn!(attempt, commands = batch.len(), %why, "command transaction will be retried");
                last = why;
                // Jitter keeps two colliding transactions from colliding again.
                let jitter = uuid::Uuid::new_v4().as_u128() as u64 % (backoff_ms + 1);
                tokio::time::sleep(Duration::from_millis(backoff_ms + jitter)).await;
                backoff_ms *= 2;
            }
        }
    }
    Err(StoreError::Exhausted {
        attempts: MAX_TRANSACTION_ATTEMPTS,
        last,
    })
}

async fn run_once(
    client: &mut deadpool_postgres::Object,
    batch: &[(Command, CommandContext)],
) -> Result<BatchResult, Failure> {
    let started = std::time::Instant::now();
    let tx = client.transaction().await?;
    let load::Loaded {
        mut state,
        existing,
        now,
    } = load::lock_and_load(&tx, batch).await?;

    let mut results = Vec::with_capacity(batch.len());
    let mut events = Vec::new();
    for (cmd, ctx) in batch {
        match decide(&state, cmd, ctx.command_id, now) {
            Ok(decision) => {
                apply(&mut state, &decision, ctx.command_id, now);
                for e in decision.events {
                    let meta = ctx.metadata(e.fingerprint.clone());
                    events.push((e, meta));
                }
                results.push(Ok(decision.outcome));
            }
            Err(rejection) => results.push(Err(rejection)),
        }
    }

    // Phase times go to the debug log: they are how batch costs were measured
    // (docs/benchmarks.md), and lock waits show up in `load`.
    let loaded = started.elapsed();
    if !events.is_empty() {
        write::append(&tx, &events, now).await?;
    }
    let appended = started.elapsed();
    if !events.is_empty() {
        write::move_balances(&tx, &events, &existing).await?;
    }
    let balanced = started.elapsed();
    tx.commit().await?;
    debug!(
        commands = batch.len(),
        events = events.len(),
        load_us = loaded.as_micros() as u64,
        append_us = (appended - loaded).as_micros() as u64,
        balances_us = (balanced - appended).as_micros() as u64,
        commit_us = (started.elapsed() - balanced).as_micros() as u64,
        "batch committed"
    );
    Ok(results)
}
