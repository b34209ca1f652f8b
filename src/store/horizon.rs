//! The safe horizon: the transaction id below which every transaction that
//! could write to this database's log has ended.
//!
//! PostgreSQL's own snapshot horizon (`pg_snapshot_xmin`) is server-wide: a
//! transaction left open in *another* database of the same server holds it
//! back, and with it every reader and projection here. Only writers of this
//! database can add events to this log, so the horizon is the oldest
//! transaction id still in flight *in this database* (sessions and prepared
//! transactions), or the next id to be handed out when there is none.
//!
//! Why it is safe, and why it must be its own statement, run before the
//! statement that reads with it: this statement's snapshot is taken first, and
//! the list of running transactions is read after it. A transaction id below
//! the horizon was handed out before this statement began; when the list was
//! read it had either ended, or it was running in another database (and cannot
//! write here). A later statement's snapshot, taken after this one finished,
//! therefore sees everything below the horizon that will ever exist. Inside an
//! open transaction the list of running transactions is cached, so this is
//! only ever asked outside one.
//!
//! On a hot standby, `pg_stat_activity` shows only the standby's own
//! sessions, never the primary's writers, so the list above would be empty
//! and the horizon too far ahead. There the horizon is the standby's snapshot
//! `xmin`, which the primary's running-transaction records keep at the
//! oldest transaction still open on the primary as far as the standby has
//! replayed (server-wide: any database's writer holds it back). The same
//! argument holds: a later statement on the same standby has replayed at
//! least as far. docs/scaling.md has the check that showed it.

use deadpool_postgres::ClientWrapper as Client;

use crate::store::StoreError;

/// Transaction ids in `pg_stat_activity` are 32 bits; the log's are 64
/// (`xid8`). The snapshot's `xmax` (one past the latest *completed* id) is a
/// 64-bit reference within 2^31 of every running id, either side of it (a
/// running id may be above it), so a running id's full value is the reference
/// plus the signed 32-bit distance to it.
const HORIZON_SQL: &str = "
    SELECT CASE WHEN pg_is_in_recovery()
                THEN pg_snapshot_xmin(pg_current_snapshot())::text::bigint
                ELSE per_database.h END
    FROM (SELECT least(s.next, min(
        s.next + ((((w.xid - s.next) & 4294967295) + 2147483648) & 4294967295) - 2147483648))
    FROM (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next) AS s
    LEFT JOIN (
        SELECT backend_xid::text::bigint AS xid FROM pg_stat_activity
        WHERE datid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND backend_xid IS NOT NULL
        UNION ALL
        SELECT transaction::text::bigint FROM pg_prepared_xacts
        WHERE database = current_database()
    ) AS w ON true
    GROUP BY s.next) AS per_database(h)";

/// The safe horizon of this database, as a 64-bit transaction id. Must be
/// called on a connection that is not inside a transaction.
pub async fn safe_horizon(client: &Client) -> Result<i64, StoreError> {
    let stmt = client.prepare_cached(HORIZON_SQL).await?;
    Ok(client.query_one(&stmt, &[]).await?.get(0))
}

/// The moment before which the log can no longer change: the start of the
/// oldest transaction open in this database (any transaction, with a
/// transaction id or not yet, since every event's `recorded_at` is read inside
/// its transaction, after it began), or this statement's start when none is
/// open. Every event recorded before it has committed or never will. Like the
/// horizon, asked outside a transaction, before the statement that reads with
/// it. Sessions of other roles show no `xact_start` to a role without
/// `pg_read_all_stats`; they are counted (`hidden`) so that the read can be
/// refused rather than answered with a moment that may still change.
const STABLE_TIME_SQL: &str = "
    SELECT least(statement_timestamp(), min(xact_start)),
           count(*) FILTER (WHERE query = '<insufficient privilege>')
    FROM pg_stat_activity
    WHERE datid = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND pid <> pg_backend_pid()";

/// Where a read of the past may stop without its answer changing later.
#[derive(Clone, Copy, Debug)]
pub struct Stable {
    /// The safe horizon (see `safe_horizon`).
    pub horizon: i64,
    /// Events recorded before this have all committed (or never will).
    pub before: chrono::DateTime<chrono::Utc>,
}

pub async fn stable(client: &Client) -> Result<Stable, StoreError> {
    let time = client.prepare_cached(STABLE_TIME_SQL).await?;
    let row = client.query_one(&time, &[]).await?;
    let hidden: i64 = row.get(1);
    if hidden > 0 {
        return Err(StoreError::Database(
            format!(
                "{hidden} session(s) of this database are hidden from this role, so the moment \
             before which the log is stable cannot be known; grant it pg_read_all_stats"
            )
            .into(),
        ));
    }
    let before = row.get(0);
    Ok(Stable {
        horizon: safe_horizon(client).await?,
        before,
    })
}
