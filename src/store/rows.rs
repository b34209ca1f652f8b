//! Decoding rows of the `events` table.

use tokio_postgres::Row;

use crate::domain::{RecordedEvent, StreamId};
use crate::store::error::Cause;
use crate::store::log_row::{self, typed_columns_sql};
use crate::store::StoreError;

/// The columns every event query selects, in the order `recorded_event` reads them.
/// `xid8` has no Rust mapping in tokio-postgres, so the transaction id travels as text.
pub(crate) const EVENT_COLUMNS: &str = concat!(
    "position, stream, seq, type, data, metadata, recorded_at, tx_id::text::bigint, ",
    typed_columns_sql!(),
    ", version"
);
/// Where `EVENT_COLUMNS`' typed columns start, and the column after them.
const TYPED_COLUMNS_AT: usize = 8;
const VERSION: usize = TYPED_COLUMNS_AT + 4;

pub(crate) fn recorded_event(row: &Row) -> Result<RecordedEvent, StoreError> {
    let position: i64 = row.get(0);
    let type_name: &str = row.get(3);
    let corrupt = |what: &str, e: serde_json::Error| {
        StoreError::Corrupt(Cause::with_source(
            format!("event at position {position}: {what}"),
            e,
        ))
    };
    let columns = log_row::columns_at(row, TYPED_COLUMNS_AT);
    let version: i16 = row.get(VERSION);
    let written = log_row::Written {
        version: i64::from(version),
        recorded_at: row.get(6),
    };
    let event = log_row::rest_from_value(row.get(4))
        .and_then(|rest| log_row::decode(type_name, written, columns, rest))
        .map_err(|e| StoreError::Corrupt(format!("event at position {position}: {e}").into()))?;
    // `decode` checked it: 1 up to the type's current version.
    let version = version as u16;
    let metadata = log_row::metadata_from_row(&event, version, row.get(5))
        .map_err(|e| corrupt("metadata", e))?;
    let seq: i32 = row.get(2);
    let stream = StreamId::parse("stream", row.get(1)).map_err(crate::store::error::corrupt)?;
    Ok(RecordedEvent {
        position,
        stream,
        seq: seq as u32,
        event,
        version,
        metadata,
        recorded_at: row.get(6),
        tx_id: row.get(7),
    })
}
