//! Who sends a command and how it relates to others: recorded as event metadata.

use uuid::Uuid;

use crate::domain::event::EventMetadata;
use crate::domain::Rejection;
use crate::limits::MAX_METADATA_ID_LEN;

/// Whether `v` is a valid correlation or causation id: 1 to
/// `MAX_METADATA_ID_LEN` printable ASCII characters, neither first nor last a
/// space.
pub fn is_metadata_id(v: &str) -> bool {
    let printable = v.bytes().all(|b| (b' '..=b'~').contains(&b));
    !v.is_empty()
        && v.len() <= MAX_METADATA_ID_LEN
        && printable
        && !v.starts_with(' ')
        && !v.ends_with(' ')
}

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
    ///
    /// Correlation and causation ids arrive as HTTP headers, so they are held
    /// to what a header carries unchanged: printable ASCII, with no space at
    /// either end (HTTP strips those). The published pattern
    /// (`api::contract::metadata_id_pattern`) says the same and is tested against
    /// this function.
    pub fn validate(&self) -> Result<(), Rejection> {
        for (field, value) in [
            ("correlation_id", self.correlation_id.as_deref()),
            ("causation_id", self.causation_id.as_deref()),
        ] {
            if let Some(v) = value {
                if !is_metadata_id(v) {
                    return Err(Rejection::invalid(
                        field,
                        format!(
                            "must be 1 to {MAX_METADATA_ID_LEN} printable ASCII characters, \
                             neither first nor last a space"
                        ),
                    ));
                }
            }
        }
        let actor = self.actor.as_str();
        if actor.is_empty()
            || actor.chars().count() > MAX_METADATA_ID_LEN
            || actor.chars().any(char::is_control)
        {
            return Err(Rejection::invalid(
                "actor",
                format!("must be 1 to {MAX_METADATA_ID_LEN} printable characters"),
            ));
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
