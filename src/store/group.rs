//! Group commit: concurrent commands gathered into one transaction.
//!
//! Callers put their command on a bounded queue and wait. A pipeline takes
//! the first command, then whatever else is queued (up to the batch limit);
//! while another pipeline's batch is committing it keeps gathering until that
//! commit ends (with none committing it goes at once: see `Gather`); it runs the batch through the
//! ordinary command path (`execute_batch`: locks once in sorted order, decides
//! in arrival order against the balances in memory, one INSERT, one commit)
//! and answers every caller after the commit.
//!
//! When a batch fails, the one policy for failed batches decides
//! (`failed_batch`): a retryable failure is answered to every caller, which is
//! true for each of them; a lock wait that ran out (`LockTimeout`: another
//! transaction holds a row or stream this batch needs) or any other failure
//! makes the pipeline run each command on its own, a few at a time, so one
//! bad command or one held lock cannot give its neighbours a wrong answer.
//! The commands that still wait out a lock mark their items and streams
//! *suspect*.
//!
//! Commands that touch a suspect item never join a batch: they run on their
//! own beside the pipelines (a bounded few at once, the rest answered
//! UNAVAILABLE at once), so one stuck transaction costs only the callers that
//! need what it holds. A pipeline that panics answers its callers with an
//! internal error and goes on with the next batch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use futures_util::FutureExt;
use tokio::sync::{mpsc, oneshot, Mutex, Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::{error, warn};

use crate::domain::{Command, CommandContext, Items};
use crate::limits::{
    GROUP_COMMIT_MAX_BATCH, GROUP_COMMIT_MAX_GATHER_MICROS, GROUP_COMMIT_PIPELINES,
    GROUP_COMMIT_QUEUE_DEPTH, GROUP_COMMIT_WINDOW_MICROS, MAX_SUSPECT_ITEMS, ONE_BY_ONE_IN_FLIGHT,
    SUSPECT_COMMANDS_IN_FLIGHT, SUSPECT_ITEM_MS,
};
use crate::store::execute::{execute_batch, LockWaits};
use crate::store::failed_batch::{after_failure, AfterFailure, Alone, Answer};
use crate::store::StoreError;

struct Job {
    command: Command,
    context: CommandContext,
    caller: Caller,
    reply: oneshot::Sender<Answer>,
}

/// Whether a queued command's caller still waits for it. A command must not
/// start once its caller has gone (an HTTP request timed out, a client hung
/// up) or its deadline has passed: nobody would hear the answer, and a
/// reservation would hold stock for its whole hold time for nobody. One
/// already started may finish; its caller's 503 says to retry with the same
/// ids, which finds it.
#[derive(Clone)]
struct Caller {
    /// Cancelled when the caller stops waiting (its future is dropped).
    gone: CancellationToken,
    /// The command's deadline, from when it was queued.
    deadline: Instant,
}

impl Caller {
    fn waiting(&self) -> bool {
        !self.gone.is_cancelled() && Instant::now() < self.deadline
    }
}

/// The answer to a command that was not started because its caller stopped
/// waiting: heard only by a caller whose deadline passed while still there.
fn not_started() -> StoreError {
    StoreError::Unavailable(
        "the command waited past its deadline and was not started; send it again with the same ids"
            .into(),
    )
}

#[derive(Clone, Copy, Debug)]
pub struct GroupConfig {
    pub max_batch: usize,
    pub window: Duration,
    pub gather: Gather,
    pub pipelines: usize,
    pub queue_depth: usize,
}

/// How a batch gathers more commands once its first has arrived and the
/// queue is empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Gather {
    /// The leader/follower rule of database group commit: when no other
    /// batch is committing, the batch goes at once with what is queued (no
    /// timer on an idle path: a lone caller waits for nothing); while one is,
    /// it gathers until that one has committed, the batch is full, or
    /// `GROUP_COMMIT_MAX_GATHER_MICROS` has passed.
    #[default]
    Adaptive,
    /// Waits on a timer until `window` has passed. A tokio timer fires on the
    /// next tick of its 1 ms wheel, so even a zero window waits up to 1 ms.
    Timer,
    /// Without a timer: yields once, so tasks already running (callers about
    /// to enqueue) get to, then takes what is queued and goes.
    Yield,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            max_batch: GROUP_COMMIT_MAX_BATCH,
            window: Duration::from_micros(GROUP_COMMIT_WINDOW_MICROS),
            gather: Gather::default(),
            pipelines: GROUP_COMMIT_PIPELINES,
            queue_depth: GROUP_COMMIT_QUEUE_DEPTH,
        }
    }
}

/// The queue in front of the pipelines. Dropping every handle stops them
/// once the queue is empty.
pub struct GroupCommit {
    queue: mpsc::Sender<Job>,
    /// How long a queued command may wait before it starts.
    deadline: Duration,
}

/// What the pipelines share.
struct Shared {
    pool: Pool,
    /// Each batch's deadline (`Store::with_command_deadline`).
    deadline: Duration,
    suspects: Suspects,
    /// Permits for commands on suspect items running on their own.
    aside: Arc<Semaphore>,
    /// Batches committing now, and a wake-up each time one has ended: what
    /// adaptive gathering waits on.
    committing: AtomicUsize,
    committed: Notify,
    /// Notified after each commit that appended events (`Store::with_commit_signal`).
    appended: Option<Arc<Notify>>,
}

impl GroupCommit {
    pub fn start(
        pool: Pool,
        config: GroupConfig,
        deadline: Duration,
        appended: Option<Arc<Notify>>,
    ) -> GroupCommit {
        assert!(
            config.max_batch >= 1 && config.pipelines >= 1,
            "a group commit needs a batch and a pipeline"
        );
        let (queue, rx) = mpsc::channel(config.queue_depth.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let shared = Arc::new(Shared {
            pool,
            deadline,
            suspects: Suspects::default(),
            aside: Arc::new(Semaphore::new(SUSPECT_COMMANDS_IN_FLIGHT)),
            committing: AtomicUsize::new(0),
            committed: Notify::new(),
            appended,
        });
        for _ in 0..config.pipelines {
            tokio::spawn(pipeline(shared.clone(), rx.clone(), config));
        }
        GroupCommit { queue, deadline }
    }

    /// Queues a command and waits for its answer, given after the commit.
    pub async fn execute(&self, command: Command, context: CommandContext) -> Answer {
        let (reply, answer) = oneshot::channel();
        let gone = CancellationToken::new();
        // Dropped with this future: the pipelines then know nobody waits.
        let _waiting = gone.clone().drop_guard();
        let caller = Caller {
            gone,
            deadline: Instant::now() + self.deadline,
        };
        self.queue
            .try_send(Job {
                command,
                context,
                caller,
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

async fn pipeline(shared: Arc<Shared>, rx: Arc<Mutex<mpsc::Receiver<Job>>>, config: GroupConfig) {
    loop {
        // Gather under the receiver lock, so that two pipelines never split
        // what arrived together; commit without it, so the next can gather.
        let batch = {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else { return };
            let batch = gather(&shared, &mut rx, first, config).await;
            // Counted before the next pipeline can gather, so it follows.
            shared.committing.fetch_add(1, Ordering::AcqRel);
            batch
        };
        let (batch, abandoned): (Vec<Job>, Vec<Job>) =
            batch.into_iter().partition(|j| j.caller.waiting());
        if !abandoned.is_empty() {
            warn!(
                commands = abandoned.len(),
                "commands whose callers stopped waiting were not started"
            );
        }
        for job in abandoned {
            let _ = job.reply.send(Err(not_started()));
        }
        let (aside, batch): (Vec<Job>, Vec<Job>) = batch
            .into_iter()
            .partition(|j| shared.suspects.touches(&j.command));
        for job in aside {
            run_aside(&shared, job);
        }
        if !batch.is_empty() {
            answer_guarded(batch, |commands, callers| run(&shared, commands, callers)).await;
        }
        shared.committing.fetch_sub(1, Ordering::AcqRel);
        shared.committed.notify_waiters();
    }
}

/// Takes more jobs after `first`, as `config.gather` says, up to the batch limit.
async fn gather(
    shared: &Shared,
    rx: &mut mpsc::Receiver<Job>,
    first: Job,
    config: GroupConfig,
) -> Vec<Job> {
    let mut batch = vec![first];
    let deadline = tokio::time::Instant::now()
        + match config.gather {
            Gather::Adaptive => Duration::from_micros(GROUP_COMMIT_MAX_GATHER_MICROS),
            Gather::Timer | Gather::Yield => config.window,
        };
    while batch.len() < config.max_batch {
        match rx.try_recv() {
            Ok(job) => batch.push(job),
            Err(mpsc::error::TryRecvError::Disconnected) => break,
            Err(mpsc::error::TryRecvError::Empty) => {
                let more = match config.gather {
                    Gather::Adaptive => follow(shared, rx, deadline).await,
                    Gather::Yield => {
                        tokio::task::yield_now().await;
                        rx.try_recv().ok()
                    }
                    Gather::Timer => tokio::time::timeout_at(deadline, rx.recv())
                        .await
                        .ok()
                        .flatten(),
                };
                match more {
                    Some(job) => batch.push(job),
                    None => break,
                }
            }
        }
    }
    batch
}

/// Adaptive gathering with the queue empty: the next job if it arrives while
/// another batch is still committing (and before `deadline`); `None` at once
/// when no batch is committing.
async fn follow(
    shared: &Shared,
    rx: &mut mpsc::Receiver<Job>,
    deadline: tokio::time::Instant,
) -> Option<Job> {
    let ended = shared.committed.notified();
    let mut ended = std::pin::pin!(ended);
    // Registered before the count is read, so an end between the two is
    // not missed.
    ended.as_mut().enable();
    if shared.committing.load(Ordering::Acquire) == 0 {
        return None;
    }
    tokio::select! {
        job = rx.recv() => job,
        _ = ended => None,
        _ = tokio::time::sleep_until(deadline) => None,
    }
}

/// Runs `work` over the jobs' commands and sends each job its answer. A panic
/// inside (a bug: an assertion in the core) answers every job with an internal
/// error instead of leaving it without an answer, and the pipeline goes on.
async fn answer_guarded<F, Fut>(jobs: Vec<Job>, work: F)
where
    F: FnOnce(Vec<(Command, CommandContext)>, Vec<Caller>) -> Fut,
    Fut: std::future::Future<Output = Vec<Answer>>,
{
    let mut commands = Vec::with_capacity(jobs.len());
    let mut callers = Vec::with_capacity(jobs.len());
    let mut replies = Vec::with_capacity(jobs.len());
    for j in jobs {
        commands.push((j.command, j.context));
        callers.push(j.caller);
        replies.push(j.reply);
    }
    let n = commands.len();
    let answers = std::panic::AssertUnwindSafe(work(commands, callers))
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let what = panic_message(&panic);
            error!(panic = %what, commands = n, "a command pipeline panicked; its callers get an internal error");
            vec![Err(StoreError::Invariant(format!("the command path panicked: {what}").into())); n]
        });
    for (reply, answer) in replies.into_iter().zip(answers) {
        let _ = reply.send(answer);
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

/// Runs one batch and gives each command its answer; a batch that fails
/// is handled by the one policy for failed batches (`failed_batch`).
async fn run(
    shared: &Shared,
    commands: Vec<(Command, CommandContext)>,
    callers: Vec<Caller>,
) -> Vec<Answer> {
    let failed = match execute_batch(
        &shared.pool,
        &commands,
        shared.deadline,
        shared.appended.as_deref(),
        LockWaits::Answer,
    )
    .await
    {
        Ok(answers) => return answers.into_iter().map(Ok).collect(),
        Err(e) => e,
    };
    match after_failure(&failed, commands.len()) {
        AfterFailure::AnswerAll => {
            let answer = Err(failed);
            for (command, _) in &commands {
                shared.suspects.learn(command, &answer);
            }
            vec![answer; commands.len()]
        }
        AfterFailure::OneByOne => {
            warn!(error = %failed, commands = commands.len(), "batch failed; running its commands one by one");
            one_by_one(shared, commands, callers).await
        }
    }
}

/// Runs each command in its own transaction, a few at once, marking the
/// items of those that wait out a lock as suspect. A command whose caller
/// stopped waiting while the batch waited is not started.
async fn one_by_one(
    shared: &Shared,
    commands: Vec<(Command, CommandContext)>,
    callers: Vec<Caller>,
) -> Vec<Answer> {
    alone(shared)
        .run(
            commands.into_iter().zip(callers).collect(),
            |command, caller| {
                if !caller.waiting() {
                    return Some(not_started());
                }
                // Another command of this batch already found its item
                // locked: answer at once rather than wait out the same lock.
                shared
                    .suspects
                    .touches(command)
                    .then_some(StoreError::LockTimeout)
            },
            |command, answer| shared.suspects.learn(command, answer),
        )
        .await
}

/// Where a command runs on its own.
fn alone(shared: &Shared) -> Alone<'_> {
    Alone {
        pool: &shared.pool,
        deadline: shared.deadline,
        committed: shared.appended.as_deref(),
        in_flight: ONE_BY_ONE_IN_FLIGHT,
    }
}

/// Runs a command on a suspect item on its own, beside the pipelines, or
/// answers UNAVAILABLE at once when enough such commands already run.
fn run_aside(shared: &Arc<Shared>, job: Job) {
    let Ok(permit) = shared.aside.clone().try_acquire_owned() else {
        let _ = job.reply.send(Err(StoreError::LockTimeout));
        return;
    };
    let shared = shared.clone();
    tokio::spawn(async move {
        let shared = &shared;
        answer_guarded(vec![job], |commands, callers| async move {
            let mut answers = Vec::with_capacity(1);
            for (command, caller) in commands.iter().zip(&callers) {
                if !caller.waiting() {
                    answers.push(Err(not_started()));
                    continue;
                }
                let answer = alone(shared).one(command).await;
                shared.suspects.learn(&command.0, &answer);
                answers.push(answer);
            }
            answers
        })
        .await;
        drop(permit);
    });
}

/// Items and streams whose commands recently waited out a lock.
#[derive(Default)]
struct Suspects {
    marked: SyncMutex<HashMap<String, Instant>>,
}

impl Suspects {
    /// The streams and the items the command names. The items a reservation
    /// or an expected receipt holds are not known before its stream is read;
    /// its stream stands for them.
    fn keys(command: &Command) -> impl Iterator<Item = String> {
        let touches = command.touches();
        let streams: Vec<String> = touches.streams().map(ToString::to_string).collect();
        let items = match touches.items {
            Items::Named(items) => items,
            Items::HeldBy(_) | Items::ExpectedOf(_) => Vec::new(),
        };
        streams
            .into_iter()
            .chain(items.into_iter().map(|i| format!("item:{i}")))
    }

    fn touches(&self, command: &Command) -> bool {
        let mut marked = self.marked.lock().expect("suspects lock");
        if marked.is_empty() {
            return false;
        }
        let ttl = Duration::from_millis(SUSPECT_ITEM_MS);
        marked.retain(|_, at| at.elapsed() < ttl);
        Self::keys(command).any(|k| marked.contains_key(&k))
    }

    /// Marks the command's keys after it waited out a lock; clears them after
    /// it got through.
    fn learn(&self, command: &Command, answer: &Answer) {
        let mut marked = self.marked.lock().expect("suspects lock");
        match answer {
            Err(StoreError::LockTimeout) => {
                if marked.len() >= MAX_SUSPECT_ITEMS {
                    let oldest = marked
                        .iter()
                        .min_by_key(|(_, at)| **at)
                        .map(|(k, _)| k.clone());
                    if let Some(k) = oldest {
                        marked.remove(&k);
                    }
                }
                for k in Self::keys(command) {
                    marked.insert(k, Instant::now());
                }
            }
            Ok(_) if !marked.is_empty() => {
                for k in Self::keys(command) {
                    marked.remove(&k);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::execute::Answered;

    fn job() -> (Job, oneshot::Receiver<Answer>) {
        let (reply, answer) = oneshot::channel();
        let command = crate::domain::command::confirm("r1").expect("a valid id");
        let job = Job {
            command,
            context: CommandContext::new("test"),
            caller: Caller {
                gone: CancellationToken::new(),
                deadline: Instant::now() + Duration::from_secs(60),
            },
            reply,
        };
        (job, answer)
    }

    /// A panic in the command path (an assertion in the core) answers every
    /// caller of the batch with an internal error instead of leaving them
    /// waiting, and the pipeline that ran it goes on.
    #[tokio::test]
    async fn a_panicking_batch_answers_its_callers_with_an_error() {
        let (jobs, answers): (Vec<_>, Vec<_>) = (0..3).map(|_| job()).unzip();
        answer_guarded(jobs, |_, _| async {
            panic!("decide produced an invalid balance")
        })
        .await;
        for answer in answers {
            match answer.await.expect("answered") {
                Err(StoreError::Invariant(why)) => {
                    assert!(why.message().contains("invalid balance"), "{why}")
                }
                other => panic!("expected an internal error, got {other:?}"),
            }
        }
        // The same pipeline code answers the next batch normally.
        let (next, answer) = job();
        answer_guarded(vec![next], |commands, _| async move {
            commands
                .iter()
                .map(|_| Err(StoreError::LockTimeout))
                .collect()
        })
        .await;
        assert!(matches!(answer.await, Ok(Err(StoreError::LockTimeout))));
    }

    #[test]
    fn suspects_are_marked_by_lock_timeouts_and_cleared_by_success() {
        let suspects = Suspects::default();
        let hot = crate::domain::command::confirm("hot").expect("a valid id");
        let cold = crate::domain::command::confirm("cold").expect("a valid id");
        assert!(!suspects.touches(&hot));
        suspects.learn(&hot, &Err(StoreError::LockTimeout));
        assert!(suspects.touches(&hot));
        assert!(!suspects.touches(&cold));
        let done = Ok(Answered {
            result: Ok(crate::domain::Outcome::NotDue {
                reservation_id: crate::domain::ReservationId::parse("id", "hot").expect("valid"),
                state: None,
            }),
            timeline: Vec::new(),
        });
        suspects.learn(&hot, &done);
        assert!(!suspects.touches(&hot));
    }
}
