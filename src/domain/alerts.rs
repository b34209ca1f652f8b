//! Low-stock alerts: when a command's events make an item's available stock
//! fall below its reorder point, or come back from below it (or move the
//! point itself across it), the ledger writes the crossing into the log in
//! the same transaction: a `StockLow` or a `StockRecovered`, each in a
//! stream of its own named after the command. The relay publishes them on
//! their own subjects and the event stream carries them, like any event.
//!
//! An alert is decided from what the item's last alert said (kept on its
//! row, `ItemSettings::alerted_low`) and its figures and point after the
//! command, which the batch holds exactly (the items' rows are locked), so
//! each crossing is written once and only by the command that made it; a
//! command re-run after a lost commit appends nothing, so neither does its
//! alert.

use crate::domain::event::{StockLow, StockRecovered};
use std::collections::BTreeMap;

use uuid::Uuid;

use crate::domain::decision::{LedgerState, NewEvent};
use crate::domain::event::{Balance, Event};
use crate::domain::ids::{AlertId, Item};
use crate::domain::settings::ItemSettings;
use crate::domain::stream::StreamId;

/// The alerts `events` cause, against `state` as it was before them.
pub(crate) fn alerts(state: &LedgerState, events: &[NewEvent], command_id: Uuid) -> Vec<NewEvent> {
    let mut after: BTreeMap<Item, (Balance, ItemSettings)> = BTreeMap::new();
    fn touch<'m>(
        after: &'m mut BTreeMap<Item, (Balance, ItemSettings)>,
        state: &LedgerState,
        item: &Item,
    ) -> &'m mut (Balance, ItemSettings) {
        after
            .entry(item.clone())
            .or_insert_with(|| (state.balance(item), state.settings(item)))
    }
    for e in events {
        e.event
            .for_each_effect(|item, d| touch(&mut after, state, item).0.apply(d));
        if let Some((item, setting)) = e.event.setting() {
            touch(&mut after, state, &item).1.apply(setting);
        }
    }
    let mut out = Vec::new();
    for (item, (balance, settings)) in after {
        // Against the last alert written, so a crossing that was somehow
        // not written (a writer of an older release) is written now.
        let was_low = state.settings(&item).alerted_low;
        let available = balance.available();
        let event = match (was_low, settings.is_low(available)) {
            (false, true) => Event::StockLow(StockLow {
                sku: item.sku,
                location: item.location,
                available,
                reorder_point: settings.reorder_point.expect("low needs a point"),
            }),
            (true, false) => Event::StockRecovered(StockRecovered {
                sku: item.sku,
                location: item.location,
                available,
                reorder_point: settings.reorder_point,
            }),
            (false, false) | (true, true) => continue,
        };
        let id = format!("{command_id}-{}", out.len() + 1);
        out.push(NewEvent {
            stream: StreamId::Alert(AlertId::parse("alert", &id).expect("a uuid and a number")),
            seq: 1,
            event,
            fingerprint: None,
        });
    }
    out
}

pub use crate::domain::event::Alert;

/// What an alert event says about its item. `None` for every other event.
pub fn said(event: &Event) -> Option<Alert> {
    event.alert()
}
