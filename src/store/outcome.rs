//! Resolving an attempt whose outcome is unknown: its connection broke or
//! stalled after the transaction wrote, so the COMMIT may have happened, may
//! still be on its way, or the transaction may still be open on the server
//! (the connection is stalled, not closed) and holding its locks.
//!
//! While the server that ran it is still the same run (its start time has not
//! changed), the transaction id answers it: on a fresh connection,
//! `pg_xact_status` says committed, aborted or in progress. In progress means
//! the server still has it open; we end that backend if it still runs our
//! transaction (so a reused process id is never hit) and sits waiting for a
//! COMMIT that never came, or cannot send to us, which aborts it; a backend
//! busy with the COMMIT itself is left to finish. Then we ask again.
//!
//! If the server is another incarnation (it restarted, recovered from a
//! crash, or failed over to a standby: `schema/0006`), the old transaction
//! has certainly ended, but its id may have been handed out again: a crash
//! loses the id counter's unflushed progress. Then the log answers: the
//! transaction committed if and only if its events are there, found by their
//! streams and command ids.
//!
//! Nothing is guessed: without an answer in time the caller is told the
//! outcome is unknown.

use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::time::Instant;
use tracing::warn;

use crate::limits::{OUTCOME_POLL_MS, OUTCOME_RESOLUTION_DEADLINE_MS};
use crate::store::load::{Backend, TxIdentity};
use crate::store::{pool, StoreError};

/// What became of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TxOutcome {
    Committed,
    Aborted,
}

/// What the attempt wrote: the streams and command ids of its events.
pub(crate) struct Written {
    pub streams: Vec<String>,
    pub command_ids: Vec<String>,
}

/// What became of `tx`, asked until `deadline` (a failover may take a while
/// to give us a primary to ask).
pub(crate) async fn resolve(
    pool: &Pool,
    tx: TxIdentity,
    written: &Written,
    deadline: Instant,
) -> Result<TxOutcome, StoreError> {
    match tokio::time::timeout_at(deadline, poll(pool, tx, written)).await {
        Ok(result) => result,
        Err(_) => Err(StoreError::OutcomeUnknown(
            format!("transaction {} did not resolve in time", tx.xid).into(),
        )),
    }
}

async fn poll(pool: &Pool, tx: TxIdentity, written: &Written) -> Result<TxOutcome, StoreError> {
    // Said once a second at most: a failover can keep this asking for seconds.
    let every = Duration::from_millis(OUTCOME_RESOLUTION_DEADLINE_MS / 2);
    let mut said = Instant::now();
    loop {
        match ask(pool, tx, written).await {
            Ok(Some(outcome)) => return Ok(outcome),
            Ok(None) => {}
            // The database may be restarting or failing over: keep asking
            // until the deadline.
            Err(e) if said.elapsed() > every => {
                warn!(xid = tx.xid, error = %e, "still resolving a commit of unknown outcome");
                said = Instant::now();
            }
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(OUTCOME_POLL_MS)).await;
    }
}

/// A transaction's status, and whether its commit is as durable as a COMMIT
/// reply says (for an aborted or running one the second column means
/// nothing).
///
/// `pg_xact_status` reads the commit log, which PostgreSQL marks before a
/// committing backend waits for its synchronous standby: "committed" alone
/// may be on this node only. So a commit counts only once its backend has
/// left the running set (it is visible to a new snapshot) and, if this
/// server replicates synchronously, once every synchronous standby has
/// flushed everything this server has flushed. The second half matters when
/// the wait was cut short (the backend terminated, as a demoted primary's
/// are): PostgreSQL then makes the commit visible here although no standby
/// has it.
const COMMIT_STATUS_SQL: &str = "
    SELECT pg_xact_status(x),
           pg_visible_in_snapshot(x, pg_current_snapshot())
           AND (current_setting('synchronous_standby_names') = ''
                OR (SELECT coalesce(bool_and(flush_lsn >= pg_current_wal_flush_lsn()), false)
                    FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')))
    FROM (SELECT $1::text::xid8 AS x) AS t";

/// One look: the outcome if the transaction has ended; `None` if it is still
/// in progress (after asking its backend to end).
async fn ask(
    pool: &Pool,
    tx: TxIdentity,
    written: &Written,
) -> Result<Option<TxOutcome>, StoreError> {
    let client = pool::get(pool).await?;
    let incarnation: uuid::Uuid = client
        .query_one("SELECT stockledger_incarnation()", &[])
        .await?
        .get(0);
    if incarnation != tx.incarnation {
        let found: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM events
                                WHERE stream = ANY($1) AND metadata ->> 'command_id' = ANY($2))",
                &[&written.streams, &written.command_ids],
            )
            .await?
            .get(0);
        return Ok(Some(if found {
            TxOutcome::Committed
        } else {
            TxOutcome::Aborted
        }));
    }
    let row = client
        .query_one(COMMIT_STATUS_SQL, &[&tx.xid.to_string()])
        .await?;
    let status: Option<String> = row.get(0);
    let durable: bool = row.get(1);
    match status.as_deref() {
        Some("committed") if durable => Ok(Some(TxOutcome::Committed)),
        // Marked committed here, but not yet as durable as a COMMIT reply
        // would have said: its backend still waits for the synchronous
        // standby. Answering now could acknowledge what a failover loses.
        Some("committed") => Ok(None),
        Some("aborted") => Ok(Some(TxOutcome::Aborted)),
        Some("in progress") => {
            end_stalled(&client, tx.backend).await?;
            Ok(None)
        }
        other => Err(StoreError::OutcomeUnknown(
            format!("transaction {} has status {other:?}", tx.xid).into(),
        )),
    }
}

/// Ends `backend`'s transaction if it is still the one we abandoned (same
/// process and transaction start, so a reused process id is never hit) and it
/// waits on us: for a statement or a COMMIT that never came, or to send a
/// reply we will never read. A backend busy with a statement (the COMMIT
/// itself, say) is left to finish; the lock and statement timeouts bound that.
/// Returns whether it ended one.
pub(crate) async fn end_stalled(
    client: &deadpool_postgres::Object,
    backend: Backend,
) -> Result<bool, StoreError> {
    let ended: i64 = client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE pid = $1 AND xact_start = $2
               AND (state LIKE 'idle in transaction%' OR wait_event IN ('ClientRead', 'ClientWrite'))",
            &[&backend.pid, &backend.xact_start],
        )
        .await?
        .get(0);
    Ok(ended > 0)
}

/// After an attempt that cannot have committed (it wrote nothing, or never
/// sent its COMMIT) was abandoned on a stalled connection: end its
/// transaction if the server still holds it open, so its locks go now rather
/// than at the idle-in-transaction timeout. Best effort within the resolution
/// deadline; a failure only means the server's own timeouts end it.
pub(crate) async fn release_abandoned(pool: &Pool, backend: Backend) {
    let deadline = Duration::from_millis(OUTCOME_RESOLUTION_DEADLINE_MS);
    let attempt = async {
        let client = pool::get(pool).await?;
        end_stalled(&client, backend).await
    };
    match tokio::time::timeout(deadline, attempt).await {
        Ok(Ok(true)) => warn!(pid = backend.pid, "ended an abandoned transaction"),
        Ok(Ok(false)) => {}
        Ok(Err(e)) => warn!(error = %e, "could not end an abandoned transaction"),
        Err(_) => warn!("could not end an abandoned transaction in time"),
    }
}
