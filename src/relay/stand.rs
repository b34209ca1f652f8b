//! Where the broker stream stands: the last message it holds, read from the
//! broker itself, checked against what the relay last saw acknowledged.

use async_nats::jetstream::{self, context::GetStreamErrorKind, stream, ErrorCode};

use crate::relay::{broker, checkpoint, message, RelayConfig, RelayError};
use crate::store::{Cursor, Store};

/// What was published last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stand {
    /// The cursor of the last event published; the next batch starts after it.
    pub cursor: Cursor,
    /// Its message id; `None` when the stream holds no message.
    pub last_msg_id: Option<String>,
    /// The stream's last sequence (the first message of an empty stream
    /// expects it).
    pub sequence: u64,
}

/// Reads where the stream stands, creating it when it never existed. A
/// stream that is missing or empty although the checkpoint says events were
/// published to it is `StreamLost`, unless `config.republish` (then it is
/// created afresh and the checkpoint starts again).
pub async fn find(
    store: &Store,
    js: &jetstream::Context,
    config: &RelayConfig,
) -> Result<Stand, RelayError> {
    let published = checkpoint::published(store, &config.stream).await?;
    let lost = || RelayError::StreamLost {
        stream: config.stream.clone(),
        published,
    };
    let existing = match js.get_stream(&config.stream).await {
        Ok(s) => Some(s),
        Err(e) => match e.kind() {
            GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND => {
                None
            }
            _ => return Err(broker(e)),
        },
    };
    let Some(mut s) = existing else {
        if published > 0 && !config.republish {
            return Err(lost());
        }
        create(js, config).await?;
        checkpoint::reset(store, &config.stream).await?;
        return Ok(Stand {
            cursor: Cursor::START,
            last_msg_id: None,
            sequence: 0,
        });
    };
    let state = s.info().await.map_err(broker)?.state.clone();
    if state.messages == 0 {
        if published > 0 && !config.republish {
            return Err(lost());
        }
        if published > 0 {
            checkpoint::reset(store, &config.stream).await?;
        }
        return Ok(Stand {
            cursor: Cursor::START,
            last_msg_id: None,
            sequence: state.last_sequence,
        });
    }
    let last = s
        .get_raw_message(state.last_sequence)
        .await
        .map_err(broker)?;
    let cursor = message::cursor_of(&last.payload)
        .ok_or_else(|| RelayError::ForeignMessage(config.stream.clone()))?;
    let id = last
        .headers
        .get(async_nats::header::NATS_MESSAGE_ID)
        .map(|v| v.as_str().to_owned())
        .ok_or_else(|| RelayError::ForeignMessage(config.stream.clone()))?;
    Ok(Stand {
        cursor,
        last_msg_id: Some(id),
        sequence: state.last_sequence,
    })
}

async fn create(js: &jetstream::Context, config: &RelayConfig) -> Result<(), RelayError> {
    js.create_stream(stream::Config {
        name: config.stream.clone(),
        subjects: vec![format!("{}.>", config.subject_prefix)],
        storage: stream::StorageType::File,
        num_replicas: config.replicas,
        ..Default::default()
    })
    .await
    .map_err(broker)?;
    Ok(())
}
