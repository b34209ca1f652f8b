//! An item's settings: what callers set on an item, apart from its stock (a
//! per-order limit, a reorder point). Each is set by an event of its own and
//! the last one holds; the store keeps the current values on the item's
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
}

/// The settings of one item. The default is an item nobody set anything on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ItemSettings {
    pub max_per_order: Option<u32>,
    pub reorder_point: Option<u32>,
}

impl ItemSettings {
    pub fn apply(&mut self, setting: Setting) {
        match setting {
            Setting::MaxPerOrder(max) => self.max_per_order = max,
            Setting::ReorderPoint(point) => self.reorder_point = point,
        }
    }

    /// Whether `available` units are below the reorder point: the item is
    /// low. An item without a point is never low.
    pub fn is_low(&self, available: i64) -> bool {
        self.reorder_point
            .is_some_and(|point| available < i64::from(point))
    }
}
