//! The items' backlogs as the log says they are: the queue of reservations
//! waiting for each item, in placing order, and what each open expected
//! receipt of it still brings, compared with the backlog its balance row
//! holds (the one the command path decides by).
//!
//! A queue's order is the log's order, and the audit reads the log unsorted
//! and in partitions, so the events that move backlogs are kept with their
//! positions (only those: backorders and expected receipts, a small part of
//! any log) and folded in position order at the end, through the domain's
//! own fold (`backorder::apply`).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use tokio_postgres::Client;

use crate::domain::backorder::{self, Backlog};
use crate::domain::{Event, Item, StreamId};
use crate::read_model::Diffs;
use crate::store::StoreError;

/// The table the backlogs are kept in, as the report names it.
const TABLE: &str = "item_balances";

/// The backlogs the table holds, by (sku, location): only those that hold
/// something.
pub(crate) type ActualBacklogs = HashMap<(String, String), Backlog>;

#[derive(Default)]
pub(crate) struct Backlogs {
    /// The events that move backlogs, with their positions and streams.
    events: Vec<(i64, StreamId, Event)>,
}

impl Backlogs {
    /// Takes in one event of the log, at `position`.
    pub fn fold(&mut self, stream: &StreamId, event: &Event, position: i64) {
        if event.event_type().moves_backlog() {
            self.events.push((position, stream.clone(), event.clone()));
        }
    }

    /// Adds what another partition of the same log folded.
    pub fn merge(&mut self, other: Backlogs) {
        self.events.extend(other.events);
    }

    /// Names every item whose backlog differs from the log's (also one the
    /// table holds that no event explains).
    pub fn compare(mut self, mut actual: ActualBacklogs, diffs: &mut Diffs) {
        self.events
            .sort_unstable_by_key(|(position, _, _)| *position);
        let mut want: BTreeMap<Item, Backlog> = BTreeMap::new();
        for (_, stream, event) in &self.events {
            backorder::apply(&mut want, stream, event);
        }
        for (item, backlog) in want {
            let key = (item.sku.to_string(), item.location.to_string());
            let got = actual.remove(&key).unwrap_or_default();
            compare_one(&item.to_string(), &backlog, &got, diffs);
        }
        for ((sku, location), got) in actual {
            compare_one(
                &format!("{sku}@{location}"),
                &Backlog::default(),
                &got,
                diffs,
            );
        }
    }
}

fn compare_one(item: &str, want: &Backlog, got: &Backlog, diffs: &mut Diffs) {
    if want.queue != got.queue {
        diffs.push(
            TABLE,
            item,
            "backlog.queue",
            show(&want.queue),
            show(&got.queue),
        );
    }
    if want.incoming != got.incoming {
        let (w, g) = (show(&want.incoming), show(&got.incoming));
        diffs.push(TABLE, item, "backlog.incoming", w, g);
    }
}

/// A part of a backlog as its JSON, for the report.
fn show<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The backlogs the write side holds, in the snapshot the audit compares in.
pub(crate) async fn load(client: &Client) -> Result<ActualBacklogs, StoreError> {
    let rows = client
        .query(
            "SELECT sku, location, backlog FROM public.item_balances WHERE backlog <> '{}'",
            &[],
        )
        .await?;
    let mut out = ActualBacklogs::default();
    for r in rows {
        let (sku, location): (String, String) = (r.get(0), r.get(1));
        let backlog: Backlog = serde_json::from_value(r.get(2)).map_err(|e| {
            StoreError::Corrupt(format!("{sku}@{location} has backlog: {e}").into())
        })?;
        if !backlog.is_empty() {
            out.insert((sku, location), backlog);
        }
    }
    Ok(out)
}
