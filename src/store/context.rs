//! Fresh command contexts. The command id is drawn here, in the shell, from
//! the OS random source; the domain core takes it as given.

use crate::domain::CommandContext;

impl CommandContext {
    /// A context for a new logical command, with a fresh random command id
    /// (kept across the store's retries of that command).
    pub fn new(actor: impl Into<String>) -> Self {
        CommandContext::with_id(actor, uuid::Uuid::new_v4())
    }
}
