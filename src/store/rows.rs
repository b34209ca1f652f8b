//! Decoding rows of the `events` table.

use tokio_postgres::Row;

use crate::domain::{Event, EventMetadata, RecordedEvent, StreamId};
use crate::store::error::Cause;
use crate::store::StoreError;

/// The columns every event query selects, in the order `recorded_event` reads them.
/// `xid8` has no Rust mapping in tokio-postgres, so the transaction id travels as text.
pub(crate) const EVENT_COLUMNS: &str =
    "position, stream, seq, type, data, metadata, recorded_at, tx_id::text::bigint";

pub(crate) fn recorded_event(row: &Row) -> Result<RecordedEvent, StoreError> {
    let position: i64 = row.get(0);
    let type_name: String = row.get(3);
    let corrupt = |what: &str, e: serde_json::Error| {
        StoreError::Corrupt(Cause::with_source(
            format!("event at position {position}: {what}"),
            e,
        ))
    };
    let event = Event::from_parts(&type_name, row.get(4)).map_err(|e| corrupt("data", e))?;
    let metadata: EventMetadata =
        serde_json::from_value(row.get(5)).map_err(|e| corrupt("metadata", e))?;
    let seq: i32 = row.get(2);
    let stream = StreamId::parse("stream", row.get(1)).map_err(crate::store::error::corrupt)?;
    Ok(RecordedEvent {
        position,
        stream,
        seq: seq as u32,
        event,
        metadata,
        recorded_at: row.get(6),
        tx_id: row.get(7),
    })
}
