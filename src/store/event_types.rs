//! The `event_types` table (`schema/0014`): every event type and how its
//! rows move the read models, written from the Rust definitions
//! (`EventType::ALL`, `log_row::line_effect`, `EventType::reservation_move`)
//! whenever the schema is migrated. The SQL folds join it, so no SQL spells
//! an event type's name or its effects.

use tokio_postgres::GenericClient;

use crate::domain::{EventType, ReservationMove};
use crate::store::log_row::line_effect;
use crate::store::StoreError;

/// One row of `event_types`, as this binary defines it.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    name: String,
    on_hand: i16,
    reserved: i16,
    confirmed: i16,
    opens_reservation: bool,
    moves_to: Option<String>,
    settles: bool,
}

fn defined() -> Vec<Row> {
    EventType::ALL
        .iter()
        .map(|&t| {
            let effect = line_effect(t);
            let sign = |n: i64| i16::try_from(n.signum()).expect("a sign");
            let (opens_reservation, moves_to, settles) = match t.reservation_move() {
                ReservationMove::Opens => (true, None, false),
                ReservationMove::Moves { to, settles } => {
                    (false, Some(to.as_str().to_owned()), settles)
                }
                ReservationMove::Nothing => (false, None, false),
            };
            Row {
                name: t.as_str().to_owned(),
                on_hand: sign(effect.on_hand),
                reserved: sign(effect.reserved),
                confirmed: sign(effect.confirmed),
                opens_reservation,
                moves_to,
                settles,
            }
        })
        .collect()
}

const READ: &str = "SELECT name, on_hand, reserved, confirmed, opens_reservation, moves_to, settles
                    FROM event_types ORDER BY name";

/// Makes the table say what this binary defines. Written only when it
/// differs, so that a process that may not write it (the service) migrates
/// a current database without trying.
pub(crate) async fn sync(client: &impl GenericClient) -> Result<(), StoreError> {
    let mut want = defined();
    want.sort_by(|a, b| a.name.cmp(&b.name));
    let have: Vec<Row> = client
        .query(READ, &[])
        .await?
        .iter()
        .map(|r| Row {
            name: r.get(0),
            on_hand: r.get(1),
            reserved: r.get(2),
            confirmed: r.get(3),
            opens_reservation: r.get(4),
            moves_to: r.get(5),
            settles: r.get(6),
        })
        .collect();
    if have == want {
        return Ok(());
    }
    client.execute("DELETE FROM event_types", &[]).await?;
    for r in &want {
        client
            .execute(
                "INSERT INTO event_types
                     (name, on_hand, reserved, confirmed, opens_reservation, moves_to, settles)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &r.name,
                    &r.on_hand,
                    &r.reserved,
                    &r.confirmed,
                    &r.opens_reservation,
                    &r.moves_to,
                    &r.settles,
                ],
            )
            .await?;
    }
    Ok(())
}
