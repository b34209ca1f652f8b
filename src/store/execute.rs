//! The command path: one transaction decides a whole batch of commands.
//!
//! lock and load -> decide each command in order (pure) -> append all events
//! -> move balances -> commit -> answer.
//!
//! Every attempt has a deadline. An attempt that fails because the server
//! rolled it back (deadlock, a concurrent duplicate) runs again from the
//! start with the same command ids. An attempt whose connection failed or
//! stalled may have committed, may still be open on the server, or may be
//! gone: it is resolved by its transaction id (`outcome.rs`), never guessed.
//! Committed: the callers get the answers that commit produced. Aborted (or
//! ended by us): the batch runs again.
//!
//! A failover is ridden out the same way: while no primary takes connections
//! the batch waits for one (until its deadline), and an attempt cut by the
//! old primary's death is resolved on the new one, by its command ids.

use std::collections::HashMap;
use std::time::Duration;

use deadpool_postgres::{Object, Pool};
use tokio::sync::Notify;
use tokio::time::Instant;
use tracing::{debug, warn};

use chrono::{DateTime, Utc};

use crate::domain::{
    apply, decide, Command, CommandContext, Decision, EventMetadata, LedgerState, NewEvent,
    Outcome, RecordedEvent, Rejection, StreamId,
};
use crate::limits::{
    COMMIT_REPLY_DEADLINE_MS, MAX_COMMANDS_PER_BATCH, MAX_TRANSACTION_ATTEMPTS,
    OUTCOME_RESOLUTION_DEADLINE_MS, RECONNECT_PAUSE_MS, RETRY_BACKOFF_MAX_MS,
    RETRY_BACKOFF_START_MS, TRANSACTION_ATTEMPT_DEADLINE_MS,
};
use crate::store::error::{Cause, Failure};
use crate::store::load::{Backend, TxIdentity};
use crate::store::outcome::{release_abandoned, resolve, TxOutcome, Written};
use crate::store::statements::Statements;
use crate::store::{load, pool, read, readiness, room, write, StoreError};

/// The answer to each command of a batch, in order.
pub type BatchResult = Vec<Result<Outcome, Rejection>>;

/// A command's answer and, for a reservation command, the reservation's
/// events as its own commit left them: what an answer shows is built from the
/// batch (the events loaded under its locks and those it appended), never
/// read back afterwards, when the reservation may have moved on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answered {
    pub result: Result<Outcome, Rejection>,
    /// Empty for anything but a decided reservation command.
    pub timeline: Vec<RecordedEvent>,
}

/// What one attempt got as far as, kept when the attempt is cut short: which
/// transaction it was, and the answers it decided (true if it committed).
#[derive(Default)]
struct Attempt {
    /// The backend and its transaction, known from the first statement on.
    backend: Option<Backend>,
    tx: Option<TxIdentity>,
    /// Whether COMMIT was sent: until then the attempt cannot have committed.
    commit_sent: bool,
    decided: Option<Pending>,
    /// What the attempt wrote (nothing: nothing to resolve, whatever
    /// happened to its connection).
    wrote: Option<Written>,
}

/// What an attempt does when a lock wait runs out (`LockTimeout`: another
/// transaction holds a row or a stream the batch needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockWaits {
    /// Answer at once: the runner has other commands to keep moving and
    /// sets these aside (group commit, the expiry pass, `execute_each`).
    Answer,
    /// Try again until the deadline: a caller running its own batch has
    /// nothing else to do meanwhile (`Store::execute_batch`).
    Retry,
}

/// Runs `batch` in one transaction, trying again (and waiting for a
/// connection) until `deadline` from now has passed. `committed` is notified
/// once a transaction that appended events has committed.
pub(crate) async fn execute_batch(
    pool: &Pool,
    batch: &[(Command, CommandContext)],
    deadline: Duration,
    committed: Option<&Notify>,
    lock_waits: LockWaits,
) -> Result<Vec<Answered>, StoreError> {
    assert!(
        batch.len() <= MAX_COMMANDS_PER_BATCH,
        "batch of {} commands exceeds MAX_COMMANDS_PER_BATCH",
        batch.len()
    );
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let (answers, wrote) = attempts(pool, batch, deadline, lock_waits).await?;
    if let (true, Some(n)) = (wrote, committed) {
        n.notify_one();
    }
    Ok(answers)
}

/// `execute_batch`'s attempts; the answers, and whether the transaction
/// that gave them appended events.
async fn attempts(
    pool: &Pool,
    batch: &[(Command, CommandContext)],
    deadline: Duration,
    lock_waits: LockWaits,
) -> Result<(Vec<Answered>, bool), StoreError> {
    let deadline = Instant::now() + deadline;
    let mut backoff_ms = RETRY_BACKOFF_START_MS;
    let mut last = Cause::from("no attempt was made");
    let mut attempt_no = 0;
    // Set once a connection failed or could not be had: the server may be a
    // primary fresh from a failover, so the next connection must show that a
    // commit can finish before the batch takes its locks (`readiness`).
    let mut recovering = false;
    // Whether the last attempt waited out a lock: past the deadline, that
    // is the answer, not `Exhausted`.
    let mut locked = false;
    while attempt_no < MAX_TRANSACTION_ATTEMPTS {
        if attempt_no > 0 && Instant::now() >= deadline {
            break;
        }
        // Only the attempt that ends the loop says whether it was a lock.
        locked = false;
        let Some(client) =
            connection_for_attempt(pool, deadline, &mut recovering, &mut last).await?
        else {
            tokio::time::sleep(Duration::from_millis(RECONNECT_PAUSE_MS)).await;
            continue;
        };
        attempt_no += 1;
        let mut guard = Unfinished(Some(client));
        let mut attempt = Attempt::default();
        let ran = tokio::time::timeout(
            Duration::from_millis(TRANSACTION_ATTEMPT_DEADLINE_MS),
            run_once(guard.client(), batch, &mut attempt),
        )
        .await
        // No answer in time: the connection is stalled somewhere between us
        // and the server, which is a broken connection too.
        .unwrap_or_else(|_| {
            Err(Failure::Broken(Cause::from(format!(
                "no answer within {TRANSACTION_ATTEMPT_DEADLINE_MS} ms"
            ))))
        });
        // Whatever `ran` says, no transaction is left open on the connection
        // unless it is discarded below.
        let client = guard.finished();
        let wrote = attempt.wrote.is_some();
        let why = match ran {
            Ok(results) => return Ok((results, wrote)),
            Err(Failure::Fatal(StoreError::LockTimeout)) if lock_waits == LockWaits::Retry => {
                locked = true;
                Cause::from("a lock wait ran out")
            }
            Err(Failure::Fatal(e)) => return Err(e),
            Err(Failure::Retry(why) | Failure::NoRoom(why, _)) => why,
            Err(Failure::Broken(why)) => {
                // Never hand this connection out again.
                discard(client);
                recovering = true;
                if let Some(results) = settle(pool, &mut attempt, &why, deadline).await? {
                    return Ok((results, wrote));
                }
                why
            }
        };
        warn!(attempt = attempt_no, commands = batch.len(), %why, "command transaction will be retried");
        last = why;
        // Jitter keeps two colliding transactions from colliding again.
        let jitter = rand::random_range(0..=backoff_ms);
        tokio::time::sleep(Duration::from_millis(backoff_ms + jitter)).await;
        backoff_ms = (backoff_ms * 2).min(RETRY_BACKOFF_MAX_MS);
    }
    if locked {
        return Err(StoreError::LockTimeout);
    }
    Err(StoreError::Exhausted {
        attempts: attempt_no,
        last,
    })
}

/// A connection for the next attempt, or `None` to pause and ask again.
///
/// No connection (the primary is gone, a standby is being promoted, the
/// server restarts): wait for one until the deadline. Nothing was tried, so
/// this is not an attempt; the deadline bounds it. After a lost connection
/// (`recovering`) the server must also show that a commit can finish
/// (`readiness`) before the batch takes its locks.
async fn connection_for_attempt(
    pool: &Pool,
    deadline: Instant,
    recovering: &mut bool,
    last: &mut Cause,
) -> Result<Option<Object>, StoreError> {
    let client = match pool::get(pool).await {
        Ok(client) => client,
        Err(StoreError::Unavailable(why)) if Instant::now() < deadline => {
            debug!(%why, "no database connection; waiting for one");
            (*recovering, *last) = (true, why);
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    if !*recovering {
        return Ok(Some(client));
    }
    match readiness::can_commit(&client).await {
        Ok(true) => {
            *recovering = false;
            Ok(Some(client))
        }
        not_yet => {
            *last = match not_yet {
                Err(e) => Cause::with_source("asking whether a commit can finish", e),
                Ok(_) => "no synchronous standby is streaming yet".into(),
            };
            if Instant::now() >= deadline {
                let why = std::mem::replace(last, "the deadline passed".into());
                return Err(StoreError::Unavailable(why));
            }
            Ok(None)
        }
    }
}

/// Takes a connection out of the pool for good; dropping it closes it.
fn discard(client: Object) {
    drop(Object::take(client));
}

/// A connection whose transaction (begun by hand, `BEGIN` in a pipeline)
/// may still be open. Dropped before `finished` (a panic, or a caller that
/// gave up on the future), it discards the connection rather than let it go
/// back to the pool in the middle of a transaction: closing it ends the
/// transaction on the server.
struct Unfinished(Option<Object>);

impl Unfinished {
    fn client(&mut self) -> &mut Object {
        self.0.as_mut().expect("held until finished")
    }

    fn finished(mut self) -> Object {
        self.0.take().expect("held until finished")
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            discard(client);
        }
    }
}

/// After an attempt lost its connection: `Some(answers)` if its transaction
/// committed, `None` if it did not (the batch may run again), or an error if
/// that cannot be established in time. An attempt that cannot have committed
/// has its transaction ended if the server still holds it open.
///
/// Resolving may wait for a new primary (a failover): it may take until the
/// batch's deadline, and never less than `OUTCOME_RESOLUTION_DEADLINE_MS`.
async fn settle(
    pool: &Pool,
    attempt: &mut Attempt,
    why: &Cause,
    batch_deadline: Instant,
) -> Result<Option<Vec<Answered>>, StoreError> {
    let (Some(tx), Some(written), true) = (attempt.tx, attempt.wrote.as_ref(), attempt.commit_sent)
    else {
        if let Some(backend) = attempt.backend {
            release_abandoned(pool, backend).await;
        }
        return Ok(None);
    };
    let deadline =
        batch_deadline.max(Instant::now() + Duration::from_millis(OUTCOME_RESOLUTION_DEADLINE_MS));
    match resolve(pool, tx, written, deadline).await? {
        TxOutcome::Committed => {
            warn!(xid = tx.xid, %why, "the commit reply was lost; the transaction committed");
            let pending = attempt
                .decided
                .take()
                .expect("an attempt that wrote has decided");
            Ok(Some(pending.read_back(pool).await?))
        }
        TxOutcome::Aborted => Ok(None),
    }
}

/// One attempt. A statement that fails leaves the transaction open and
/// aborted; it is rolled back here, before the connection can go back to the
/// pool. A connection that cannot even do that is given up as broken.
async fn run_once(
    client: &mut Object,
    batch: &[(Command, CommandContext)],
    attempt: &mut Attempt,
) -> Result<Vec<Answered>, Failure> {
    let result = transaction(client, batch, attempt).await;
    if let Err(Failure::Retry(_) | Failure::Fatal(_) | Failure::NoRoom(..)) = &result {
        if let Err(e) = client.batch_execute("ROLLBACK").await {
            return Err(Failure::Broken(Cause::with_source(
                "the failed transaction could not be rolled back",
                e,
            )));
        }
    }
    match result {
        // The next attempt finds the room this one made. Making room that
        // failed (its lock wait, 2 s, ran out behind another maker) is
        // retried like the append: the next attempt may find it made.
        Err(Failure::NoRoom(why, rows)) => {
            let client: &tokio_postgres::Client = client;
            match room::make_room(client, rows).await {
                Ok(_) => Err(Failure::Retry(why)),
                Err(e) => Err(Failure::Retry(Cause::with_source(
                    "making room in the log",
                    e,
                ))),
            }
        }
        other => other,
    }
}

/// Three round trips at most: load (one or two, `load.rs`), then append,
/// move balances and commit in one (`write.rs`). Statements are prepared
/// before the transaction begins, so no pipeline waits on a PREPARE.
async fn transaction(
    client: &Object,
    batch: &[(Command, CommandContext)],
    attempt: &mut Attempt,
) -> Result<Vec<Answered>, Failure> {
    let started = std::time::Instant::now();
    let stmts = Statements::prepare(client).await?;
    let load::Loaded {
        mut state,
        mut timelines,
        existing,
        now,
        tx: identity,
    } = load::lock_and_load(client, &stmts, batch, &mut attempt.backend).await?;
    attempt.tx = Some(identity);

    let Decided {
        results,
        shows,
        events,
    } = decide_all(&mut state, &timelines, batch, now);
    attempt.decided = Some(Pending {
        results: results.clone(),
        shows: shows.clone(),
    });
    // Phase times go to the debug log: they are how batch costs were measured
    // (docs/benchmarks.md), and lock waits show up in `load`.
    let loaded = started.elapsed();
    if !events.is_empty() {
        attempt.wrote = Some(Written {
            streams: events.iter().map(|(e, _)| e.stream.to_string()).collect(),
            command_ids: events
                .iter()
                .map(|(_, m)| m.command_id.to_string())
                .collect(),
        });
    }
    attempt.commit_sent = true;
    let positions = tokio::time::timeout(Duration::from_millis(COMMIT_REPLY_DEADLINE_MS), async {
        if events.is_empty() {
            // Nothing to write: the COMMIT only ends the transaction and frees
            // its locks.
            return Ok(client.batch_execute("COMMIT").await.map(|()| Vec::new())?);
        }
        let net = write::net_effects(&events);
        let backlogs = write::changed_backlogs(&events, &state);
        let writes = write::Writes::new(&events, &net, &backlogs, &existing, now);
        write::append_move_commit(client, &stmts, &writes).await
    })
    .await
    .map_err(|_| {
        Failure::Broken(format!("no COMMIT reply within {COMMIT_REPLY_DEADLINE_MS} ms").into())
    })??;
    for ((e, meta), stamped) in events.iter().zip(positions) {
        if let StreamId::Reservation(_) = e.stream {
            let event = recorded(e, meta, stamped);
            timelines.entry(e.stream.clone()).or_default().push(event);
        }
    }
    debug!(
        commands = batch.len(),
        events = events.len(),
        load_us = loaded.as_micros() as u64,
        write_us = (started.elapsed() - loaded).as_micros() as u64,
        "batch committed"
    );
    Ok(answers(results, shows, &timelines))
}

/// Answers decided and waiting for their commit: the results and, for each,
/// the part of its stream it shows.
struct Pending {
    results: Vec<Result<Outcome, Rejection>>,
    shows: Vec<Option<(StreamId, usize)>>,
}

impl Pending {
    /// The answers of an attempt that committed but whose reply was lost:
    /// the positions of its events never came back, so the timelines are
    /// read from the log (each cut at its own command's events).
    async fn read_back(self, pool: &Pool) -> Result<Vec<Answered>, StoreError> {
        let client = pool::get(pool).await?;
        let mut timelines = load::Timelines::new();
        for (stream, _) in self.shows.iter().flatten() {
            if let (StreamId::Reservation(id), false) = (stream, timelines.contains_key(stream)) {
                let events = read::reservation(&client, id)
                    .await?
                    .map(|d| d.events)
                    .unwrap_or_default();
                timelines.insert(stream.clone(), events);
            }
        }
        Ok(answers(self.results, self.shows, &timelines))
    }
}

/// The batch's commands decided in order, each against the state the
/// previous ones left.
struct Decided {
    results: Vec<Result<Outcome, Rejection>>,
    /// For each answer, its stream and how many of the stream's events it shows.
    shows: Vec<Option<(StreamId, usize)>>,
    events: Vec<(NewEvent, EventMetadata)>,
}

fn decide_all(
    state: &mut LedgerState,
    timelines: &load::Timelines,
    batch: &[(Command, CommandContext)],
    now: DateTime<Utc>,
) -> Decided {
    let mut d = Decided {
        results: Vec::with_capacity(batch.len()),
        shows: Vec::with_capacity(batch.len()),
        events: Vec::new(),
    };
    let mut appending: HashMap<StreamId, usize> = HashMap::new();
    for (cmd, ctx) in batch {
        match decide(state, cmd, ctx.command_id, now) {
            Ok(decision) => {
                apply(state, &decision, ctx.command_id, now);
                let stream = cmd.stream();
                let adding = appending.entry(stream.clone()).or_default();
                // Only the command's own stream: its alerts are in others.
                *adding += decision
                    .events
                    .iter()
                    .filter(|e| e.stream == stream)
                    .count();
                let loaded = timelines.get(&stream).map_or(&[][..], Vec::as_slice);
                let shown = own_event_at(loaded, &decision, ctx).unwrap_or(loaded.len() + *adding);
                for e in decision.events {
                    let meta = ctx.metadata(e.fingerprint.clone());
                    d.events.push((e, meta));
                }
                let reservation = matches!(decision.outcome, Outcome::Reservation { .. });
                d.shows.push(reservation.then_some((stream, shown)));
                d.results.push(Ok(decision.outcome));
            }
            Err(rejection) => {
                d.shows.push(None);
                d.results.push(Err(rejection));
            }
        }
    }
    d
}

/// For a command that appends nothing because it is re-run after its own
/// COMMIT reply was lost, the number of loaded events up to and including
/// its own: its answer shows the stream as its own commit left it, not what
/// later commands made of it (`docs/domain.md`, "truthful answers").
fn own_event_at(
    loaded: &[RecordedEvent],
    decision: &Decision,
    ctx: &CommandContext,
) -> Option<usize> {
    if !decision.events.is_empty() {
        return None;
    }
    loaded
        .iter()
        .rposition(|e| e.metadata.command_id == ctx.command_id)
        .map(|i| i + 1)
}

/// An appended event as it reads back, stamped as the log holds it.
fn recorded(e: &NewEvent, metadata: &EventMetadata, stamped: write::Stamped) -> RecordedEvent {
    RecordedEvent {
        position: stamped.position,
        stream: e.stream.clone(),
        seq: e.seq,
        event: e.event.clone(),
        version: crate::domain::shape::current(e.event.event_type()),
        metadata: metadata.clone(),
        recorded_at: stamped.recorded_at,
        tx_id: stamped.tx_id,
    }
}

/// Pairs each result with the part of its stream's timeline it shows.
fn answers(
    results: Vec<Result<Outcome, Rejection>>,
    shows: Vec<Option<(StreamId, usize)>>,
    timelines: &load::Timelines,
) -> Vec<Answered> {
    results
        .into_iter()
        .zip(shows)
        .map(|(result, shows)| {
            let timeline = shows
                .and_then(|(stream, n)| {
                    timelines.get(&stream).map(|t| t[..n.min(t.len())].to_vec())
                })
                .unwrap_or_default();
            Answered { result, timeline }
        })
        .collect()
}
