//! The copies a read model may have: the live one readers see, a rebuild
//! copy being filled beside it, and, once part of the log left the database,
//! its snapshot at the cut (`projection::snapshot`). A copy's slot is the `slot` column
//! of its checkpoint row (`schema/0003`); SQL binds `Slot::as_str`, never
//! spells it.

/// Where a copy of a projection lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// What readers see, in the `public` schema.
    Live,
    /// A copy being built from the start, in `stockledger_rebuild`.
    Rebuild,
    /// The copy at the cut, in `stockledger_snapshot`: what a rebuild after
    /// `archive --detach` starts from. Moved only by the detach.
    Snapshot,
}

pub const LIVE_SCHEMA: &str = "public";
pub const REBUILD_SCHEMA: &str = "stockledger_rebuild";
pub const SNAPSHOT_SCHEMA: &str = "stockledger_snapshot";
/// Where the replaced live tables go for the moment of the swap.
pub const RETIRED_SCHEMA: &str = "stockledger_retired";

impl Slot {
    pub fn as_str(self) -> &'static str {
        match self {
            Slot::Live => "live",
            Slot::Rebuild => "rebuild",
            Slot::Snapshot => "snapshot",
        }
    }

    pub fn schema(self) -> &'static str {
        match self {
            Slot::Live => LIVE_SCHEMA,
            Slot::Rebuild => REBUILD_SCHEMA,
            Slot::Snapshot => SNAPSHOT_SCHEMA,
        }
    }
}
