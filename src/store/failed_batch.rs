//! What happens when a batch of commands fails as a whole: the one policy
//! every runner of independent commands follows (group commit, the expiry
//! pass, `Store::execute_each`).
//!
//! A batch is many callers' commands in one transaction, so its failure is
//! not necessarily true of each command:
//!
//! | failure                                        | commands | then                       |
//! |------------------------------------------------|----------|----------------------------|
//! | retryable (contention, a lost connection, ...) | any      | every command gets it      |
//! | a lock wait ran out (`LockTimeout`)            | 1        | the command gets it        |
//! | a lock wait ran out (`LockTimeout`)            | several  | each runs on its own       |
//! | anything else (a corrupt stream, a bug)        | 1        | the command gets it        |
//! | anything else                                  | several  | each runs on its own       |
//!
//! A retryable failure is true for each command: the same ones sent again
//! may succeed. A lock held elsewhere names no command, and one bad command
//! must not give its neighbours a wrong answer: run alone, only the
//! commands that need the lock, or the bad one, fail. How long a lock is
//! waited for is the attempt loop's business (`execute::LockWaits`), not
//! this policy's.

use deadpool_postgres::Pool;
use futures_util::StreamExt;
use tokio::sync::Notify;

use crate::domain::{Command, CommandContext};
use crate::store::execute::{execute_batch, Answered, LockWaits};
use crate::store::StoreError;

/// One command's answer, or the store's failure to give one.
pub(crate) type Answer = Result<Answered, StoreError>;

/// What a runner does after its batch failed with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AfterFailure {
    /// Every command of the batch is answered with the batch's error.
    AnswerAll,
    /// Each command runs again in a transaction of its own.
    OneByOne,
}

/// The policy (see the table above).
pub(crate) fn after_failure(error: &StoreError, commands: usize) -> AfterFailure {
    let lock = matches!(error, StoreError::LockTimeout);
    if commands <= 1 || (error.is_retryable() && !lock) {
        AfterFailure::AnswerAll
    } else {
        AfterFailure::OneByOne
    }
}

/// Where each command of a failed batch runs on its own.
pub(crate) struct Alone<'a> {
    pub pool: &'a Pool,
    pub deadline: std::time::Duration,
    pub committed: Option<&'a Notify>,
    /// How many run at once, each on a connection of the pool: a few for
    /// group commit, whose callers wait; one for a background pass, which
    /// must not take the pool from them.
    pub in_flight: usize,
}

impl Alone<'_> {
    /// Runs each command in its own transaction, `in_flight` at once,
    /// answering at once when a lock wait runs out. `skip`
    /// answers a command without running it (its caller left, or its item is
    /// known to be held); `learn` hears each answer. Answers are in order.
    pub(crate) async fn run<C>(
        &self,
        commands: Vec<((Command, CommandContext), C)>,
        skip: impl Fn(&Command, &C) -> Option<StoreError>,
        learn: impl Fn(&Command, &Answer),
    ) -> Vec<Answer> {
        let (skip, learn) = (&skip, &learn);
        futures_util::stream::iter(commands)
            .map(|(command, extra)| async move {
                if let Some(e) = skip(&command.0, &extra) {
                    return Err(e);
                }
                let answer = self.one(&command).await;
                learn(&command.0, &answer);
                answer
            })
            .buffered(self.in_flight.max(1))
            .collect()
            .await
    }

    /// One command in a transaction of its own.
    pub(crate) async fn one(&self, command: &(Command, CommandContext)) -> Answer {
        execute_batch(
            self.pool,
            std::slice::from_ref(command),
            self.deadline,
            self.committed,
            LockWaits::Answer,
        )
        .await
        .map(|mut answers| answers.pop().expect("one answer per command"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::error::Cause;

    /// One case per row of the table in the module's comment.
    #[test]
    fn the_policy_is_the_table() {
        let unavailable = || StoreError::Unavailable(Cause::from("gone"));
        let corrupt = || StoreError::Corrupt(Cause::from("bad stream"));
        let rows = [
            (unavailable(), 1, AfterFailure::AnswerAll),
            (unavailable(), 5, AfterFailure::AnswerAll),
            (StoreError::LockTimeout, 1, AfterFailure::AnswerAll),
            (StoreError::LockTimeout, 5, AfterFailure::OneByOne),
            (corrupt(), 1, AfterFailure::AnswerAll),
            (corrupt(), 5, AfterFailure::OneByOne),
        ];
        for (error, commands, then) in rows {
            assert_eq!(after_failure(&error, commands), then, "{error} x{commands}");
        }
    }
}
