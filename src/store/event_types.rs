//! The `event_types` table (`schema/0014`): every event type and how its
//! rows move the read models, written from the Rust definitions
//! (`EventType::ALL`, `EventType::line_effect`, `EventType::reservation_move`)
//! whenever the schema is migrated. The SQL folds join it, so no SQL spells
//! an event type's name or its effects.

use std::collections::BTreeMap;

use tokio_postgres::GenericClient;

use crate::domain::{EventType, ReservationMove};
use crate::store::StoreError;

/// One row of `event_types`, as this binary defines it.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    name: String,
    on_hand: i16,
    reserved: i16,
    confirmed: i16,
    backordered: i16,
    opens_reservation: bool,
    adds_units: bool,
    moves_to: Option<String>,
    settles: bool,
    /// 1: the item is low from this event on; -1: no longer low; 0: says nothing.
    low_stock: i16,
    /// States what an expected receipt still brings.
    incoming: bool,
}

fn defined() -> Vec<Row> {
    EventType::ALL
        .iter()
        .map(|&t| {
            let effect = t.line_effect();
            let sign = |n: i64| i16::try_from(n.signum()).expect("a sign");
            let adds_units = t.reservation_move() == ReservationMove::Adds;
            let (opens_reservation, moves_to, settles) = match t.reservation_move() {
                ReservationMove::Opens => (true, None, false),
                ReservationMove::Moves { to, settles } => {
                    (false, Some(to.as_str().to_owned()), settles)
                }
                ReservationMove::Adds | ReservationMove::Nothing => (false, None, false),
            };
            Row {
                name: t.as_str().to_owned(),
                on_hand: sign(effect.on_hand),
                reserved: sign(effect.reserved),
                confirmed: sign(effect.confirmed),
                backordered: sign(effect.backordered),
                opens_reservation,
                adds_units,
                moves_to,
                settles,
                low_stock: match t.low_stock() {
                    Some(true) => 1,
                    Some(false) => -1,
                    None => 0,
                },
                incoming: t.incoming(),
            }
        })
        .collect()
}

const READ: &str =
    "SELECT name, on_hand, reserved, confirmed, opens_reservation, moves_to, settles,
                           low_stock, incoming, backordered, adds_units
                    FROM event_types";

/// A text that changes whenever this binary's definitions do: part of the
/// checksum of every read model whose SQL joins `event_types`, so that a
/// change of what an event type does shows those read models as stale.
pub fn signature() -> String {
    defined()
        .iter()
        .map(|r| format!("{r:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Makes the table hold this binary's definitions. Rows of event types this
/// binary does not know (a newer release's, during an upgrade) are kept:
/// deleting them would make the newer release's folds refuse its own
/// events. A definition never changes for a type that exists (a change of
/// meaning is a new event type), so a row this binary knows is either
/// missing or already right. Written only when something is missing or
/// differs, and only when `may_write` (the caller acts as the owner);
/// otherwise that is an error naming the fix, not a permission failure.
pub(crate) async fn sync(client: &impl GenericClient, may_write: bool) -> Result<(), StoreError> {
    let have: BTreeMap<String, Row> = client
        .query(READ, &[])
        .await?
        .iter()
        .map(|r| {
            let row = Row {
                name: r.get(0),
                on_hand: r.get(1),
                reserved: r.get(2),
                confirmed: r.get(3),
                opens_reservation: r.get(4),
                moves_to: r.get(5),
                settles: r.get(6),
                low_stock: r.get(7),
                incoming: r.get(8),
                backordered: r.get(9),
                adds_units: r.get(10),
            };
            (row.name.clone(), row)
        })
        .collect();
    let missing: Vec<Row> = defined()
        .into_iter()
        .filter(|r| have.get(&r.name) != Some(r))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !may_write {
        return Err(StoreError::Migration(
            format!(
                "event_types lacks or differs on {} of this release's event types; run \
                 `stockledger migrate` as a member of the owner role",
                missing.len()
            )
            .into(),
        ));
    }
    for r in &missing {
        write(client, r).await?;
    }
    Ok(())
}

/// Writes one row as this binary defines it, over whatever is there.
async fn write(client: &impl GenericClient, r: &Row) -> Result<(), StoreError> {
    client
        .execute(
            "INSERT INTO event_types
                 (name, on_hand, reserved, confirmed, opens_reservation, moves_to, settles,
                  low_stock, incoming, backordered, adds_units)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
             ON CONFLICT (name) DO UPDATE
             SET on_hand = EXCLUDED.on_hand, reserved = EXCLUDED.reserved,
                 confirmed = EXCLUDED.confirmed,
                 opens_reservation = EXCLUDED.opens_reservation,
                 moves_to = EXCLUDED.moves_to, settles = EXCLUDED.settles,
                 low_stock = EXCLUDED.low_stock, incoming = EXCLUDED.incoming,
                 backordered = EXCLUDED.backordered, adds_units = EXCLUDED.adds_units",
            &[
                &r.name,
                &r.on_hand,
                &r.reserved,
                &r.confirmed,
                &r.opens_reservation,
                &r.moves_to,
                &r.settles,
                &r.low_stock,
                &r.incoming,
                &r.backordered,
                &r.adds_units,
            ],
        )
        .await?;
    Ok(())
}
