//! Whether a primary can finish a commit now.
//!
//! With synchronous replication a COMMIT waits until a synchronous standby
//! has the commit. Right after a failover the new primary takes connections
//! before its remaining standby has re-attached to it, so for a moment every
//! COMMIT waits, holding its item locks, and every other transaction on those
//! items runs out its lock wait and is answered `UNAVAILABLE`. A batch that
//! just lost its connection (or could not get one) therefore waits for this
//! to say yes before it takes any lock; a batch on a healthy connection never
//! asks.

use deadpool_postgres::Object;

use crate::store::StoreError;

/// True on a primary with no synchronous replication configured, or with a
/// synchronous standby streaming. Standbys hidden from this role (it lacks
/// `pg_read_all_stats`) cannot be judged, so they count as ready: the COMMIT
/// then simply waits as it would have.
const CAN_COMMIT_SQL: &str = "
    SELECT NOT pg_is_in_recovery()
       AND (current_setting('synchronous_standby_names') = ''
            OR EXISTS (SELECT 1 FROM pg_stat_replication
                       WHERE sync_state IN ('sync', 'quorum') OR sync_state IS NULL))";

pub(crate) async fn can_commit(client: &Object) -> Result<bool, StoreError> {
    Ok(client.query_one(CAN_COMMIT_SQL, &[]).await?.get(0))
}
