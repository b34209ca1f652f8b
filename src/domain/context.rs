//! Who sends a command and how it relates to others: recorded as event metadata.

use uuid::Uuid;

use crate::domain::event::EventMetadata;
use crate::domain::Rejection;
use crate::limits::MAX_METADATA_ID_LEN;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandContext {
    /// Made once per logical command and kept across the store's retries.
    pub command_id: Uuid,
    pub correlation_id: Option<String>,
    pub causation_id: Option<String>,
    /// The caller's identity: an API key's name, or `cli:<user>`.
    pub actor: String,
}

impl CommandContext {
    /// A context with a command id chosen by the caller. The shells draw a
    /// fresh one with `CommandContext::new` (in `store/context.rs`): the
    /// domain reads no randomness.
    pub fn with_id(actor: impl Into<String>, command_id: Uuid) -> Self {
        CommandContext {
            command_id,
            correlation_id: None,
            causation_id: None,
            actor: actor.into(),
        }
    }

    /// Checks the caller-supplied parts against the metadata limits.
    pub fn validate(&self) -> Result<(), Rejection> {
        for (field, value) in [
            ("correlation_id", self.correlation_id.as_deref()),
            ("causation_id", self.causation_id.as_deref()),
            ("actor", Some(self.actor.as_str())),
        ] {
            if let Some(v) = value {
                if v.is_empty() || v.len() > MAX_METADATA_ID_LEN || v.chars().any(char::is_control)
                {
                    return Err(Rejection::invalid(
                        field,
                        format!("must be 1 to {MAX_METADATA_ID_LEN} printable characters"),
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn metadata(&self, fingerprint: Option<String>) -> EventMetadata {
        EventMetadata {
            command_id: self.command_id,
            correlation_id: self.correlation_id.clone(),
            causation_id: self.causation_id.clone(),
            actor: self.actor.clone(),
            fingerprint,
        }
    }
}
