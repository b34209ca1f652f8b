//! Where PostgreSQL's time went during a run, from `pg_stat_statements`:
//! the command path's statements, the workers' (the projection runner, the
//! sealer, the expiry worker's look-up of what is due) and transaction
//! control (BEGIN, COMMIT, ROLLBACK), which both send and which cannot be told
//! apart. It needs the extension preloaded (the private cluster preloads it
//! when the server packages ship it); without it a run has no figures here.

use deadpool_postgres::Pool;
use stockledger::store::pool;

/// What marks a workers' statement: the tables and functions only they
/// touch, and reading the log by a range of commit order, which the command
/// path never does (it reads streams by name). The hot, flash and mixed runs
/// send no reads, so a page of the log (the sealer's read) is theirs too.
const WORKER_STATEMENTS: &str = "projection_checkpoints|pg_stat_activity|stock_levels|order_view\
|reservation_expiry|reservation_totals|event_chain|seals|search_path|advisory_unlock\
|pg_try_advisory_lock|\\(tx_id, position\\) >";

const TIMES: &str = "
    SELECT coalesce(sum(t) FILTER (WHERE kind = 'commands'), 0)::float8,
           coalesce(sum(t) FILTER (WHERE kind = 'workers'), 0)::float8,
           coalesce(sum(t) FILTER (WHERE kind = 'control'), 0)::float8
    FROM (SELECT total_exec_time + total_plan_time AS t,
                 CASE WHEN query ~* '^\\s*(BEGIN|COMMIT|ROLLBACK|START)' THEN 'control'
                      WHEN query ~ $1 THEN 'workers'
                      ELSE 'commands' END AS kind
          FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())) AS s";

/// Milliseconds of PostgreSQL time (planning and execution) by who spent it.
#[derive(Clone, Copy, Debug)]
pub struct PgTime {
    pub commands_ms: f64,
    pub workers_ms: f64,
    pub control_ms: f64,
}

impl PgTime {
    /// The workers' time over the command path's.
    pub fn workers_share(&self) -> f64 {
        self.workers_ms / self.commands_ms.max(f64::MIN_POSITIVE)
    }
}

/// Clears the statistics before a run; false when the extension is not
/// loaded (the run then reports no PostgreSQL time).
pub async fn reset(pool: &Pool) -> anyhow::Result<bool> {
    let client = pool::get(pool).await?;
    let ready = client
        .batch_execute(
            "CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
             SELECT pg_stat_statements_reset();",
        )
        .await;
    Ok(ready.is_ok())
}

/// The statistics since `reset`.
pub async fn read(pool: &Pool) -> anyhow::Result<PgTime> {
    let client = pool::get(pool).await?;
    let row = client.query_one(TIMES, &[&WORKER_STATEMENTS]).await?;
    Ok(PgTime {
        commands_ms: row.get(0),
        workers_ms: row.get(1),
        control_ms: row.get(2),
    })
}

/// The `n` statements that took the most time, with who they are counted
/// for: printed with the run, so the attribution can be checked.
pub async fn top(pool: &Pool, n: i64) -> anyhow::Result<Vec<String>> {
    let client = pool::get(pool).await?;
    let rows = client
        .query(
            "SELECT CASE WHEN query ~* '^\\s*(BEGIN|COMMIT|ROLLBACK|START)' THEN 'control'
                         WHEN query ~ $1 THEN 'workers' ELSE 'commands' END,
                    calls, (total_exec_time + total_plan_time)::float8,
                    left(regexp_replace(query, '\\s+', ' ', 'g'), 90)
             FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
             ORDER BY total_exec_time + total_plan_time DESC LIMIT $2",
            &[&WORKER_STATEMENTS, &n],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let (kind, calls, ms, text): (String, i64, f64, String) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            format!("{kind:<8} {calls:>8} calls {ms:>9.1} ms  {text}")
        })
        .collect())
}
