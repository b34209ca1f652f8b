//! The two copies a read model may have: the live one readers see, and a
//! rebuild copy being filled beside it. A copy's slot is the `slot` column
//! of its checkpoint row (`schema/0003`); SQL binds `Slot::as_str`, never
//! spells it.

/// Where a copy of a projection lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// What readers see, in the `public` schema.
    Live,
    /// A copy being built from the start, in `stockledger_rebuild`.
    Rebuild,
}

pub const LIVE_SCHEMA: &str = "public";
pub const REBUILD_SCHEMA: &str = "stockledger_rebuild";
/// Where the replaced live tables go for the moment of the swap.
pub const RETIRED_SCHEMA: &str = "stockledger_retired";

impl Slot {
    pub fn as_str(self) -> &'static str {
        match self {
            Slot::Live => "live",
            Slot::Rebuild => "rebuild",
        }
    }

    pub fn schema(self) -> &'static str {
        match self {
            Slot::Live => LIVE_SCHEMA,
            Slot::Rebuild => REBUILD_SCHEMA,
        }
    }
}
