//! The store: PostgreSQL behind a small API. It loads state, asks the domain
//! core what a command does, and writes the answer, in one transaction.
//! Nothing in here decides a business rule.

mod context;
pub mod cut;
pub mod detach;
pub mod error;
pub mod event_types;
mod execute;
mod failed_batch;
pub mod group;
pub mod history;
pub mod horizon;
pub mod keys;
pub mod lag;
mod load;
pub mod locks;
pub mod log_row;
pub mod migrate;
mod outcome;
pub mod pack;
pub mod pool;
mod queries;
pub mod read;
mod readiness;
pub mod roles;
pub mod room;
pub(crate) mod rows;
pub mod snapshot;
mod statements;
mod write;
mod write_sql;

pub use error::StoreError;
pub use execute::{Answered, BatchResult};
pub use read::{Cursor, EventPage, ReservationDetails};

use std::sync::Arc;

use deadpool_postgres::Pool;
use tokio::sync::Notify;

use crate::domain::{Command, CommandContext, Outcome, Rejection};
use crate::limits::MAX_COMMANDS_PER_BATCH;
use crate::store::execute::LockWaits;
use crate::store::failed_batch::{after_failure, AfterFailure, Alone};

#[derive(Clone)]
pub struct Store {
    pool: Pool,
    /// Where pages of the log are read (`events`, `log_batch`): the same
    /// pool, or one on hot standbys (`with_reads`).
    reads: Pool,
    /// Set when `reads` is not `pool`: until when reads go to the primary
    /// because no standby could be reached (`queries::read_connection`).
    standby_down: Option<std::sync::Arc<std::sync::Mutex<Option<tokio::time::Instant>>>>,
    /// When set, single commands are gathered into group commits.
    group: Option<std::sync::Arc<group::GroupCommit>>,
    /// How long a batch of commands may take, all attempts and waits for a
    /// connection together (`with_command_deadline`).
    deadline: std::time::Duration,
    /// Notified after each commit that appended events (`with_commit_signal`).
    committed: Option<Arc<Notify>>,
}

impl Store {
    pub fn new(pool: Pool) -> Self {
        Store {
            reads: pool.clone(),
            standby_down: None,
            pool,
            group: None,
            deadline: std::time::Duration::from_millis(crate::limits::BATCH_DEADLINE_MS),
            committed: None,
        }
    }

    /// This store, notifying `committed` after each of its command
    /// transactions that appended events has committed: how the server wakes
    /// its projection runner without a round trip through the database. Set
    /// before `grouped`.
    pub fn with_commit_signal(mut self, committed: Arc<Notify>) -> Self {
        self.committed = Some(committed);
        self
    }

    /// This store, reading pages of the log (`events`, `log_batch`: the
    /// event pages, the event stream and the relay) and histories from
    /// `reads`, for example a pool on hot standbys
    /// (`target_session_attrs=read-only`). The safe horizon is read there
    /// too, and on a standby it is the standby's own snapshot (`horizon.rs`).
    /// When no connection can be had there, those reads fall back to the
    /// primary for a while (`READ_STANDBY_RETRY_MS`). Everything else stays
    /// on the primary.
    pub fn with_reads(mut self, reads: Pool) -> Self {
        self.reads = reads;
        self.standby_down = Some(Default::default());
        self
    }

    /// This store, giving each batch of commands `deadline` (instead of
    /// `BATCH_DEADLINE_MS`) for all its attempts, including waiting for a
    /// connection: a command caught in a failover waits this long for the
    /// new primary. Set before `grouped`.
    pub fn with_command_deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// This store, with `execute` gathering concurrent commands into shared
    /// transactions (see `group`). Needs a running tokio runtime.
    pub fn grouped(&self, config: group::GroupConfig) -> Self {
        let group = group::GroupCommit::start(
            self.pool.clone(),
            config,
            self.deadline,
            self.committed.clone(),
        );
        Store {
            group: Some(std::sync::Arc::new(group)),
            ..self.clone()
        }
    }

    /// A store whose `execute` gathers concurrent commands into shared
    /// transactions (see `group`). Needs a running tokio runtime.
    pub fn with_group_commit(pool: Pool, config: group::GroupConfig) -> Self {
        Store::new(pool).grouped(config)
    }

    /// The pool, to hand to what takes one and owns its SQL: the projection
    /// workers, the rebuild and the audit. The shells (server, CLI) never
    /// query through it; every read they make is a method of `Store`.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Runs one command. The outer error is the store's (retryable or not);
    /// the inner one is the business answer.
    pub async fn execute(
        &self,
        cmd: Command,
        ctx: CommandContext,
    ) -> Result<Result<Outcome, Rejection>, StoreError> {
        Ok(self.execute_answered(cmd, ctx).await?.result)
    }

    /// Runs one command; a reservation command's answer comes with the
    /// reservation's events as its own commit left them (`Answered`).
    pub async fn execute_answered(
        &self,
        cmd: Command,
        ctx: CommandContext,
    ) -> Result<Answered, StoreError> {
        if let Some(group) = &self.group {
            return group.execute(cmd, ctx).await;
        }
        let mut answers = self.execute_batch_answered(&[(cmd, ctx)]).await?;
        Ok(answers.pop().expect("one answer per command"))
    }

    /// Runs many commands, each decided in order against the state the previous
    /// ones left, in as few transactions as the batch limit allows: the
    /// caller's own batch, answered as a whole or failed as a whole.
    ///
    /// Without group commit there is nothing else to keep moving while a lock
    /// is waited for, so a lock wait that runs out (a long queue on one hot
    /// stream, say) is tried again until the command deadline
    /// (`LockWaits::Retry`); group commit instead answers it at once and sets
    /// the item aside (`group`).
    pub async fn execute_batch(
        &self,
        batch: &[(Command, CommandContext)],
    ) -> Result<BatchResult, StoreError> {
        let answers = self.execute_batch_answered(batch).await?;
        Ok(answers.into_iter().map(|a| a.result).collect())
    }

    /// `execute_batch`, each answer with its reservation's events as its own
    /// command left them (`Answered`).
    pub async fn execute_batch_answered(
        &self,
        batch: &[(Command, CommandContext)],
    ) -> Result<Vec<Answered>, StoreError> {
        let mut results = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(MAX_COMMANDS_PER_BATCH) {
            let answers = execute::execute_batch(
                &self.pool,
                chunk,
                self.deadline,
                self.committed.as_deref(),
                LockWaits::Retry,
            )
            .await?;
            results.extend(answers);
        }
        Ok(results)
    }

    /// Runs independent commands (each with its own caller, like the expiry
    /// pass's), batched as `execute_batch` does, and answers each on its
    /// own: a batch that fails is handled by the one policy for failed
    /// batches (`failed_batch`), so one bad command or one held lock costs
    /// only the commands it concerns. Commands that run on their own run one
    /// at a time: this is for background work, which must not take the
    /// pool from the callers group commit serves.
    pub async fn execute_each(
        &self,
        batch: &[(Command, CommandContext)],
    ) -> Vec<Result<Answered, StoreError>> {
        let alone = Alone {
            pool: &self.pool,
            deadline: self.deadline,
            committed: self.committed.as_deref(),
            in_flight: 1,
        };
        let mut results = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(MAX_COMMANDS_PER_BATCH) {
            let failed = match execute::execute_batch(
                &self.pool,
                chunk,
                self.deadline,
                self.committed.as_deref(),
                LockWaits::Answer,
            )
            .await
            {
                Ok(answers) => {
                    results.extend(answers.into_iter().map(Ok));
                    continue;
                }
                Err(e) => e,
            };
            match after_failure(&failed, chunk.len()) {
                AfterFailure::AnswerAll => {
                    results.extend(chunk.iter().map(|_| Err(failed.clone())));
                }
                AfterFailure::OneByOne => {
                    tracing::warn!(error = %failed, commands = chunk.len(), "batch failed; running its commands one by one");
                    let each = chunk.iter().cloned().map(|c| (c, ())).collect();
                    results.extend(alone.run(each, |_, _| None, |_, _| {}).await);
                }
            }
        }
        results
    }
}
