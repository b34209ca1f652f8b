//! An item's settings: what callers set on an item, apart from its stock (a
//! per-order limit, a reorder point), and what its last low-stock alert
//! said. Each is set by an event of its own and the last one holds; the store keeps the current values on the item's
//! balance row, in the same transaction as the event, and the audit folds
//! them from the log.

use serde::Serialize;

/// One setting, as an event sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// The most of the item one order may reserve; `None`: no limit.
    MaxPerOrder(Option<u32>),
    /// Available stock below this is low; `None`: never low.
    ReorderPoint(Option<u32>),
    /// What the item's last low-stock alert said: low or not.
    /// Set by the alerts themselves, so that the next crossing is decided
    /// against the last one written, not against figures alone.
    AlertedLow(bool),
}

/// The settings of one item. The default is an item nobody set anything on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ItemSettings {
    pub max_per_order: Option<u32>,
    pub reorder_point: Option<u32>,
    /// Whether the item's last alert said low (false before any alert).
    pub alerted_low: bool,
}

impl ItemSettings {
    pub fn apply(&mut self, setting: Setting) {
        match setting {
            Setting::MaxPerOrder(max) => self.max_per_order = max,
            Setting::ReorderPoint(point) => self.reorder_point = point,
            Setting::AlertedLow(low) => self.alerted_low = low,
        }
    }

    /// Whether `available` units are below the reorder point: the item is
    /// low. An item without a point is never low.
    pub fn is_low(&self, available: i64) -> bool {
        self.reorder_point
            .is_some_and(|point| available < i64::from(point))
    }
}
