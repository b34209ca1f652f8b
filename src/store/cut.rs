//! Where the log stops being whole: once `stockledger archive --detach` took
//! partitions out (`seal/detach.rs`), `log_cut` (schema 0022) holds the
//! cursor at or before which every event that left stands. A reader that
//! would answer from part of the log refuses to start before it
//! (`StoreError::Archived`, `HISTORY_ARCHIVED` over HTTP), instead of
//! answering as if the log began later than it did.

use tokio_postgres::GenericClient;

use crate::store::{Cursor, StoreError};

const CUT: &str = "SELECT tx_id::text::bigint, position, floor FROM log_cut";

/// The cut, if any partition was ever detached.
pub async fn cut(client: &impl GenericClient) -> Result<Option<Cursor>, StoreError> {
    Ok(cut_and_floor(client).await?.map(|(cut, _)| cut))
}

/// The cut and the floor: every position below the floor left the database.
pub async fn cut_and_floor(
    client: &impl GenericClient,
) -> Result<Option<(Cursor, i64)>, StoreError> {
    Ok(client.query_opt(CUT, &[]).await?.map(|row| {
        let cut = Cursor {
            tx_id: row.get(0),
            position: row.get(1),
        };
        (cut, row.get(2))
    }))
}

/// Whether the schema has `log_cut` (schema 0022). `verify` and `prove`
/// also run on a database at an older schema, where no partition can have
/// left; the server and the workers run only on the latest, so they skip
/// this question (one query less per command, page and batch).
pub async fn schema_has_cut(client: &impl GenericClient) -> Result<bool, StoreError> {
    Ok(client
        .query_one("SELECT to_regclass('log_cut') IS NOT NULL", &[])
        .await?
        .get(0))
}

/// `cut_and_floor` on a database at any schema (`schema_has_cut`).
pub async fn cut_and_floor_any_schema(
    client: &impl GenericClient,
) -> Result<Option<(Cursor, i64)>, StoreError> {
    match schema_has_cut(client).await? {
        true => cut_and_floor(client).await,
        false => Ok(None),
    }
}

/// Refuses a read of the log from `after` on when events at or before the
/// cut would belong in it. `what` names the read in the refusal.
pub async fn refuse_before(
    client: &impl GenericClient,
    after: Cursor,
    what: impl FnOnce() -> String,
) -> Result<(), StoreError> {
    match cut(client).await? {
        Some(cut) if after < cut => Err(archived(what(), cut)),
        _ => Ok(()),
    }
}

/// Refuses a read that needs the whole log (an as-of figure folded from the
/// first event, a plain audit, a rebuild) once any of it left.
pub async fn refuse_if_cut(
    client: &impl GenericClient,
    what: impl FnOnce() -> String,
) -> Result<(), StoreError> {
    match cut(client).await? {
        Some(cut) => Err(archived(what(), cut)),
        None => Ok(()),
    }
}

/// The refusal: `what` left the database; the log is whole after `cut`.
pub fn archived(what: String, cut: Cursor) -> StoreError {
    StoreError::Archived {
        what,
        whole_after: cut.to_string(),
    }
}
