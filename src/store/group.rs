//! Group commit: concurrent commands gathered into one transaction.
//!
//! Callers put their command on a bounded queue and wait. A pipeline takes
//! the first command, then whatever else is queued (up to the batch limit),
//! waiting at most a short window for more; it runs the batch through the
//! ordinary command path (`execute_batch`: locks once in sorted order, decides
//! in arrival order against the balances in memory, one INSERT, one commit)
//! and answers every caller after the commit.
//!
//! When a batch fails: a retryable failure (contention or a lost connection
//! that outlasted the store's own attempts) is answered to every caller as
//! retryable, which is true for each of them; any other failure makes the
//! pipeline run each command of the batch on its own, so one bad command
//! cannot give its neighbours a wrong answer.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot, Mutex};
use tracing::warn;

use crate::domain::{Command, CommandContext, Outcome, Rejection};
use crate::limits::{
    GROUP_COMMIT_MAX_BATCH, GROUP_COMMIT_PIPELINES, GROUP_COMMIT_QUEUE_DEPTH,
    GROUP_COMMIT_WINDOW_MICROS,
};
use crate::store::execute::execute_batch;
use crate::store::StoreError;

type Answer = Result<Result<Outcome, Rejection>, StoreError>;

struct Job {
    command: Command,
    context: CommandContext,
    reply: oneshot::Sender<Answer>,
}

#[derive(Clone, Copy, Debug)]
pub struct GroupConfig {
    pub max_batch: usize,
    pub window: Duration,
    pub pipelines: usize,
    pub queue_depth: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            max_batch: GROUP_COMMIT_MAX_BATCH,
            window: Duration::from_micros(GROUP_COMMIT_WINDOW_MICROS),
            pipelines: GROUP_COMMIT_PIPELINES,
            queue_depth: GROUP_COMMIT_QUEUE_DEPTH,
        }
    }
}

/// The queue in front of the pipelines. Dropping every handle stops them
/// once the queue is empty.
pub struct GroupCommit {
    queue: mpsc::Sender<Job>,
}

impl GroupCommit {
    pub fn start(pool: Pool, config: GroupConfig) -> GroupCommit {
        assert!(
            config.max_batch >= 1 && config.pipelines >= 1,
            "a group commit needs a batch and a pipeline"
        );
        let (queue, rx) = mpsc::channel(config.queue_depth.max(1));
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..config.pipelines {
            tokio::spawn(pipeline(pool.clone(), rx.clone(), config));
        }
        GroupCommit { queue }
    }

    /// Queues a command and waits for its answer, given after the commit.
    pub async fn execute(&self, command: Command, context: CommandContext) -> Answer {
        let (reply, answer) = oneshot::channel();
        self.queue
            .try_send(Job {
                command,
                context,
                reply,
            })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => {
                    StoreError::Unavailable("the command queue is full".into())
                }
                mpsc::error::TrySendError::Closed(_) => {
                    StoreError::Unavailable("the command queue is closed".into())
                }
            })?;
        answer.await.map_err(|_| {
            StoreError::Unavailable("the command pipeline stopped before answering".into())
        })?
    }
}

async fn pipeline(pool: Pool, rx: Arc<Mutex<mpsc::Receiver<Job>>>, config: GroupConfig) {
    loop {
        // Gather under the receiver lock, so that two pipelines never split
        // what arrived together; commit without it, so the next can gather.
        let batch = {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else { return };
            let mut batch = vec![first];
            let deadline = tokio::time::Instant::now() + config.window;
            while batch.len() < config.max_batch {
                match rx.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(mpsc::error::TryRecvError::Disconnected) => break,
                    Err(mpsc::error::TryRecvError::Empty) => {
                        match tokio::time::timeout_at(deadline, rx.recv()).await {
                            Ok(Some(job)) => batch.push(job),
                            _ => break,
                        }
                    }
                }
            }
            batch
        };
        run(&pool, batch).await;
    }
}

async fn run(pool: &Pool, batch: Vec<Job>) {
    let commands: Vec<(Command, CommandContext)> = batch
        .iter()
        .map(|j| (j.command.clone(), j.context.clone()))
        .collect();
    match execute_batch(pool, &commands).await {
        Ok(answers) => {
            for (job, answer) in batch.into_iter().zip(answers) {
                let _ = job.reply.send(Ok(answer));
            }
        }
        Err(e) if e.is_retryable() || batch.len() == 1 => {
            for job in batch {
                let _ = job.reply.send(Err(e.clone()));
            }
        }
        Err(e) => {
            warn!(error = %e, commands = batch.len(), "batch failed; running its commands one by one");
            for (job, command) in batch.into_iter().zip(commands) {
                let answer = execute_batch(pool, std::slice::from_ref(&command)).await;
                let _ = job
                    .reply
                    .send(answer.map(|mut a| a.pop().expect("one answer per command")));
            }
        }
    }
}
