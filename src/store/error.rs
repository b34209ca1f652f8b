//! The store's one error type. SQLSTATE codes are translated here and nowhere
//! else: the rest of the program sees what went wrong, not how PostgreSQL
//! spells it.

use std::sync::Arc;

use tokio_postgres::error::SqlState;

/// What went wrong, in words, with the error that caused it kept whole (for
/// `source()` chains and logs). Cheap to clone: group commit answers every
/// caller of a batch with the same error.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct Cause {
    message: String,
    #[source]
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Cause {
    /// A cause with a source: `message` says what was being done.
    pub fn with_source(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Cause {
        Cause {
            message: message.into(),
            source: Some(Arc::new(source)),
        }
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<String> for Cause {
    fn from(message: String) -> Cause {
        Cause {
            message,
            source: None,
        }
    }
}

impl From<&str> for Cause {
    fn from(message: &str) -> Cause {
        Cause::from(message.to_owned())
    }
}

/// The stable code of a failure worth retrying with the same ids.
pub const UNAVAILABLE: &str = "UNAVAILABLE";
/// The stable code of a failure that is the server's fault.
pub const INTERNAL: &str = "INTERNAL";
/// The stable code of a read whose answer left the database with archived
/// partitions.
pub const HISTORY_ARCHIVED: &str = "HISTORY_ARCHIVED";

#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or the pool is exhausted. Retryable: the
    /// caller sends the same command again with the same ids.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] Cause),

    /// Contention or a lost connection outlasted every attempt. Retryable.
    #[error("gave up after {attempts} attempts: {last}")]
    Exhausted {
        attempts: u32,
        #[source]
        last: Cause,
    },

    /// A statement ran longer than the configured statement timeout.
    #[error("statement timed out")]
    Timeout,

    /// A lock the command needs is held by another transaction for longer than
    /// `LOCK_TIMEOUT_MS`. Retryable: nothing was written.
    #[error("a lock the command needs is held by another transaction")]
    LockTimeout,

    /// The database never confirmed a COMMIT, and whether it happened could not
    /// be established in time. Retryable with the same ids: every command is
    /// idempotent by its stream, so a retry finds the work if it was done.
    #[error("the outcome of a commit is unknown: {0}")]
    OutcomeUnknown(#[source] Cause),

    /// Someone tried to change or delete logged events.
    #[error("the event log is append-only: {0}")]
    AppendOnly(#[source] Cause),

    /// The database refused a write that would break a domain invariant
    /// (a CHECK constraint or a balance changed without events). This is a bug
    /// in the code above the store, never the caller's fault.
    #[error("invariant violated: {0}")]
    Invariant(#[source] Cause),

    /// The log holds something the domain cannot read.
    #[error("corrupt log: {0}")]
    Corrupt(#[source] Cause),

    #[error("migration failed: {0}")]
    Migration(#[source] Cause),

    #[error("database error: {0}")]
    Database(#[source] Cause),

    /// What a read asks for left the database with archived partitions
    /// (`stockledger archive --detach`, `store/cut.rs`): the archive holds
    /// it. Not retryable; the log here is whole after `whole_after` (a
    /// cursor, `TX:POSITION`).
    #[error(
        "{what} left the database with archived history: the archive holds it \
         (the log here is whole after {whole_after})"
    )]
    Archived { what: String, whole_after: String },
}

impl StoreError {
    /// The stable code callers see for this failure, in the API and the CLI.
    pub fn code(&self) -> &'static str {
        if self.is_retryable() {
            UNAVAILABLE
        } else if matches!(self, StoreError::Archived { .. }) {
            HISTORY_ARCHIVED
        } else {
            INTERNAL
        }
    }

    /// Whether sending the same command again later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Unavailable(_)
            | StoreError::Exhausted { .. }
            | StoreError::Timeout
            | StoreError::LockTimeout
            | StoreError::OutcomeUnknown(_) => true,
            StoreError::AppendOnly(_)
            | StoreError::Invariant(_)
            | StoreError::Corrupt(_)
            | StoreError::Migration(_)
            | StoreError::Database(_)
            | StoreError::Archived { .. } => false,
        }
    }

    /// What happened, in plain words for a caller: never a database message,
    /// which may name tables, values or the server's internals (those go to
    /// the log).
    pub fn public_reason(&self) -> &'static str {
        match self {
            StoreError::Unavailable(_) => "the database cannot be reached right now",
            StoreError::Exhausted { .. } => "the database was too busy to take the command",
            StoreError::Timeout => "the database did not answer in time",
            StoreError::LockTimeout => "an item the command needs is locked by another transaction",
            StoreError::OutcomeUnknown(_) => {
                "the database did not confirm the commit; the command may or may not have taken effect"
            }
            StoreError::AppendOnly(_)
            | StoreError::Invariant(_)
            | StoreError::Corrupt(_)
            | StoreError::Migration(_)
            | StoreError::Database(_) => "internal error",
            StoreError::Archived { .. } => "what was asked for is in the archive",
        }
    }
}

/// How one failed attempt should be handled by the retry loop.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The server rolled the transaction back (deadlock, serialization
    /// failure, a concurrent duplicate): try the whole transaction again.
    Retry(Cause),
    /// The connection failed or was ended. A transaction open on it may have
    /// committed (the COMMIT was sent), may still be open on the server (the
    /// connection is stalled, not closed), or is gone: the retry loop resolves
    /// which by the transaction id before it tries again.
    Broken(Cause),
    /// An append found no partition of the log (or the chain) for its
    /// position: the partitions ahead were not made in time. Make room
    /// (`room.rs`) for the rows it appends (0 when not known) and try again.
    NoRoom(Cause, i64),
    Fatal(StoreError),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Self {
        classify(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::Fatal(e)
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        match classify(e) {
            Failure::Fatal(f) => f,
            Failure::Retry(cause) | Failure::Broken(cause) | Failure::NoRoom(cause, _) => {
                StoreError::Unavailable(cause)
            }
        }
    }
}

/// The server's message and SQLSTATE, with the error kept as the source.
fn cause(e: tokio_postgres::Error) -> Cause {
    let message = match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    };
    Cause::with_source(message, e)
}

/// Whether a check violation is PostgreSQL's "no partition of relation …
/// found for row" on the log or the chain: it names the table and, unlike a
/// CHECK constraint's violation, no constraint.
fn finds_no_partition(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        db.constraint().is_none() && matches!(db.table(), Some("events" | "event_chain"))
    })
}

/// The one place SQLSTATE codes are read.
pub(crate) fn classify(e: tokio_postgres::Error) -> Failure {
    let Some(code) = e.code().cloned() else {
        // No SQLSTATE: either the connection broke (worth another attempt on
        // a new one) or the client itself refused the call (a bug, not retryable).
        let broken = e.is_closed()
            || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
        return if broken {
            Failure::Broken(cause(e))
        } else {
            Failure::Fatal(StoreError::Database(cause(e)))
        };
    };
    let no_room = code == SqlState::CHECK_VIOLATION && finds_no_partition(&e);
    let msg = cause(e);
    match code.code() {
        _ if no_room => Failure::NoRoom(msg, 0),
        "SL001" => Failure::Fatal(StoreError::AppendOnly(msg)),
        "SL002" => Failure::Fatal(StoreError::Invariant(msg)),
        // A session of an older release sealing events it would read in the
        // wrong shape (schema 0020): never this release's.
        "SL004" => Failure::Fatal(StoreError::Invariant(msg)),
        _ if code == SqlState::T_R_DEADLOCK_DETECTED
            || code == SqlState::T_R_SERIALIZATION_FAILURE
            || code == SqlState::UNIQUE_VIOLATION =>
        {
            Failure::Retry(msg)
        }
        _ if code == SqlState::CHECK_VIOLATION => Failure::Fatal(StoreError::Invariant(msg)),
        _ if code == SqlState::QUERY_CANCELED => Failure::Fatal(StoreError::Timeout),
        _ if code == SqlState::LOCK_NOT_AVAILABLE => Failure::Fatal(StoreError::LockTimeout),
        // Connection exceptions (class 08), the server shutting down or killing
        // our backend (57P01..57P03), too many connections, and an abandoned
        // transaction timed out (25P03): the next attempt gets a new connection.
        c if c.starts_with("08")
            || c.starts_with("57P")
            || code == SqlState::TOO_MANY_CONNECTIONS
            || c == "25P03" =>
        {
            Failure::Broken(msg)
        }
        _ => Failure::Fatal(StoreError::Database(msg)),
    }
}

/// Whether creating a database failed only because it already exists.
pub fn is_duplicate_database(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::DUPLICATE_DATABASE)
}

/// A value in the database that the domain refuses: the store wrote it, so
/// the log or a table is corrupt.
pub(crate) fn corrupt(r: crate::domain::Rejection) -> StoreError {
    StoreError::Corrupt(Cause::with_source("a stored value breaks a domain rule", r))
}
