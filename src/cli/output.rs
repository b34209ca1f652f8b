//! Printing: one JSON document on stdout with `--json`, readable text
//! otherwise. Notes and errors for people go to stderr, so stdout stays
//! machine-readable.

use serde_json::{json, Value};
use stockledger::domain::{Balance, Item, Outcome, Rejection, ReservationView};
use stockledger::store::{read::event_json, EventPage, ReservationDetails};

pub struct Printer {
    pub json: bool,
}

/// One row per line: the units reserved and, once any have left, what became of them.
fn lines_text(view: &ReservationView) -> String {
    view.lines
        .iter()
        .map(|l| {
            let mut row = format!("  {:>7} × {} @ {}", l.quantity, l.sku, l.location);
            if l.open != l.quantity {
                row.push_str(&format!(
                    " (open {}, confirmed {}, released {}, expired {}",
                    l.open, l.confirmed, l.released, l.expired
                ));
                // Only for a line that waited for stock, as the API leaves
                // them out.
                if l.waiting + l.dropped > 0 {
                    row.push_str(&format!(", waiting {}, dropped {}", l.waiting, l.dropped));
                }
                row.push(')');
            }
            row
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn reservation_text(view: &ReservationView, replayed: bool) -> String {
    let order = view.order_id.as_ref().map_or(
        "no order (released before it was reserved)".to_owned(),
        |o| format!("order {o}"),
    );
    let mut s = format!(
        "reservation {} for {order}: {}",
        view.reservation_id,
        view.state.as_str()
    );
    if replayed {
        s.push_str(" (replayed: an earlier identical request did this)");
    }
    if let Some(e) = view.expires_at {
        s.push_str(&format!("\n  expires at {}", e.to_rfc3339()));
    }
    if !view.lines.is_empty() {
        s.push('\n');
        s.push_str(&lines_text(view));
    }
    s
}

pub fn stock_json(item: &Item, b: Balance) -> Value {
    json!({"sku": item.sku, "location": item.location, "on_hand": b.on_hand,
           "reserved": b.reserved, "available": b.available(), "confirmed": b.confirmed})
}

pub fn stock_text(item: &Item, b: Balance) -> String {
    // What waits for stock is shown only when something does, as the API
    // leaves it out.
    let waiting = match b.backordered {
        0 => String::new(),
        n => format!(", backordered {n}"),
    };
    format!(
        "{} @ {}: on_hand {}, reserved {}{waiting}, available {}, confirmed {}",
        item.sku,
        item.location,
        b.on_hand,
        b.reserved,
        b.available(),
        b.confirmed
    )
}

impl Printer {
    /// A remark for people, on stderr (never mixed into JSON output).
    pub fn note(&self, text: &str) {
        eprintln!("stockledger: {text}");
    }

    /// Prints `value` as JSON, or `text`.
    pub fn value(&self, value: &impl serde::Serialize, text: &str) {
        if self.json {
            println!("{}", serde_json::to_string_pretty(value).expect("json"));
        } else {
            println!("{text}");
        }
    }

    pub fn outcome(&self, outcome: &Outcome) {
        let text = match outcome {
            Outcome::Received {
                receipt_id,
                item,
                quantity,
                against,
                replayed,
            } => format!(
                "receipt {receipt_id}: {quantity} × {item}{}{}",
                against
                    .as_ref()
                    .map_or(String::new(), |a| format!(" against {a}")),
                if *replayed { " (replayed)" } else { "" }
            ),
            Outcome::Adjusted {
                adjustment_id,
                item,
                delta,
                reason,
                replayed,
            } => format!(
                "adjustment {adjustment_id}: {delta:+} × {item} ({reason}){}",
                if *replayed { " (replayed)" } else { "" }
            ),
            Outcome::Counted {
                count_id,
                item,
                counted,
                books,
                replayed,
            } => format!(
                "count {count_id}: {counted} × {item} where the books said {books}{}",
                if *replayed { " (replayed)" } else { "" }
            ),
            Outcome::Transferred {
                transfer_id,
                from,
                to,
                quantity,
                replayed,
            } => format!(
                "transfer {transfer_id}: {quantity} × {} from {} to {}{}",
                from.sku,
                from.location,
                to.location,
                if *replayed { " (replayed)" } else { "" }
            ),
            Outcome::LimitSet { .. } | Outcome::ReorderPointSet { .. } => setting_text(outcome),
            Outcome::Reservation { view, replayed } => reservation_text(view, *replayed),
            Outcome::Expected { view, replayed } => format!(
                "{}{}",
                expected_text(view),
                if *replayed { " (replayed)" } else { "" }
            ),
            Outcome::NotDue { reservation_id, .. } => {
                format!("reservation {reservation_id}: not due")
            }
        };
        self.value(&json!(stockledger::api::answer(outcome)), &text);
    }

    pub fn rejection(&self, r: &Rejection) {
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&stockledger::api::rejection_document(r))
                    .expect("json")
            );
            return;
        }
        eprintln!("{}: {r}", r.code());
        if let Rejection::InsufficientStock { shortfalls } = r {
            for s in shortfalls {
                eprintln!(
                    "  {} @ {}: requested {}, available {}",
                    s.sku, s.location, s.requested, s.available
                );
            }
        }
        if let Rejection::ExceedsReserved { lines, .. } = r {
            for l in lines {
                eprintln!(
                    "  {} @ {}: requested {}, still reserved {}",
                    l.sku, l.location, l.requested, l.reserved
                );
            }
        }
        if let Rejection::OrderLimitExceeded { lines } = r {
            for l in lines {
                eprintln!(
                    "  {} @ {}: requested {}, at most {} per order",
                    l.sku, l.location, l.requested, l.max_per_order
                );
            }
        }
    }

    pub fn error(&self, e: &anyhow::Error) {
        let store = store_error(e);
        let retryable = store.is_some_and(|s| s.is_retryable());
        let code = store.map_or(stockledger::store::error::INTERNAL, |s| s.code());
        if self.json {
            let doc = json!({"code": code, "message": format!("{e:#}"), "details": {}});
            println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
        } else {
            eprintln!("error: {e:#}");
            if retryable {
                eprintln!("(retry the same command with the same ids: it is safe)");
            }
        }
    }

    pub fn reservation_details(&self, d: &ReservationDetails) {
        let mut text = reservation_text(&d.view, false);
        text.push_str("\n  timeline:");
        for e in &d.events {
            text.push_str(&format!(
                "\n    #{} {} {}: {}",
                e.seq,
                e.recorded_at.format("%Y-%m-%d %H:%M:%S%.3f"),
                e.event.type_name(),
                e.event
            ));
        }
        self.value(&json!(stockledger::api::reservation(d, None, true)), &text);
    }

    pub fn events(&self, page: &EventPage) {
        let doc = json!({
            "events": page.events.iter().map(event_json).collect::<Vec<_>>(),
            "next": page.next.to_string(),
        });
        let mut text = String::new();
        for e in &page.events {
            text.push_str(&format!(
                "{:>8}  {}  {} #{}  {}\n",
                e.position,
                e.recorded_at.format("%H:%M:%S%.3f"),
                e.stream,
                e.seq,
                e.event
            ));
        }
        text.push_str(&format!("next: {}", page.next));
        self.value(&doc, &text);
    }
}

/// The store's error behind `e`, wherever it sits in the chain (opening the
/// database wraps it in `DbError`): its code is the one callers script
/// against, so a lock wait that ran out is `UNAVAILABLE`, not `INTERNAL`.
fn store_error(e: &anyhow::Error) -> Option<&stockledger::store::StoreError> {
    e.chain().find_map(|cause| {
        cause
            .downcast_ref::<stockledger::store::StoreError>()
            .or_else(|| {
                cause
                    .downcast_ref::<stockledger::db::DbError>()
                    .and_then(|d| d.store())
            })
    })
}

/// An expected receipt in one line: what, when, how much is still to come.
pub fn expected_text(v: &stockledger::domain::ExpectationView) -> String {
    format!(
        "expected receipt {}: {} × {}@{} on {}, {} delivered, {} still to come ({})",
        v.expected_id,
        v.quantity,
        v.sku,
        v.location,
        v.expected_on,
        v.delivered,
        v.outstanding,
        v.state.as_str()
    )
}

/// A command that set something on an item: what, on which, now.
fn setting_text(outcome: &Outcome) -> String {
    let (what, now, replayed) = match outcome {
        Outcome::LimitSet {
            limit_id,
            item,
            max_per_order: m,
            replayed,
        } => (
            format!("limit {limit_id}: {item}"),
            m.map_or("without a per-order limit".into(), |m| {
                format!("at most {m} per order")
            }),
            replayed,
        ),
        Outcome::ReorderPointSet {
            reorder_point_id,
            item,
            reorder_point: p,
            replayed,
        } => (
            format!("reorder point {reorder_point_id}: {item}"),
            p.map_or("without a reorder point".into(), |p| {
                format!("is low below {p} available")
            }),
            replayed,
        ),
        Outcome::Received { .. }
        | Outcome::Adjusted { .. }
        | Outcome::Counted { .. }
        | Outcome::Transferred { .. }
        | Outcome::Reservation { .. }
        | Outcome::Expected { .. }
        | Outcome::NotDue { .. } => unreachable!("no setting"),
    };
    format!("{what} {now}{}", if *replayed { " (replayed)" } else { "" })
}

#[cfg(test)]
mod tests {
    use stockledger::db::DbError;
    use stockledger::store::StoreError;

    /// A lock wait that ran out while opening the database keeps its code.
    #[test]
    fn a_store_error_inside_opening_keeps_its_code() {
        let e = anyhow::Error::from(DbError::Store(StoreError::LockTimeout));
        assert_eq!(
            super::store_error(&e).map(|s| s.code()),
            Some("UNAVAILABLE")
        );
        let plain = anyhow::anyhow!("something else");
        assert!(super::store_error(&plain).is_none());
    }
}
