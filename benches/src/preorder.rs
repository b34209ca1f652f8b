//! The pre-order episodes the log generator writes among its other work, so
//! every benchmark log holds backorders: an item that is only expected,
//! two pre-orders of it, a delivery that fills the first and part of the
//! second (written by the backorder worker's pass, as the server writes
//! it), the supplier's cancellation of the rest, which leaves the second's
//! last units unfillable, then the first confirmed and the second released.

use stockledger::app::backorders::BACKORDER_ACTOR;
use stockledger::domain::{
    command, CancelExpected, Command, CommandContext, ExpectRequest, LineRequest, ReceiveRequest,
    ReserveRequest,
};
use stockledger::store::{Store, StoreError};

/// One pre-order episode per this many events of the log.
pub const EVENTS_PER_EPISODE: u64 = 2_000;
/// Units expected, units each pre-order asks for, units delivered.
const EXPECTED: i64 = 6;
const ORDERED: i64 = 3;
const DELIVERED: i64 = 4;
/// The date the pre-ordered stock is due.
const DUE: &str = "2027-02-01";
/// A pre-order's hold: long enough to outlast the episode.
const TTL_SECONDS: i64 = 3600;

/// Writes episode `n` of the fill with id prefix `prefix`.
pub async fn episode(store: &Store, prefix: &str, n: u64) -> Result<(), StoreError> {
    let id = |what: &str| format!("{prefix}-pre{n}-{what}");
    let sku = id("item");
    run(store, expect(&id("po"), &sku)).await?;
    for who in ["a", "b"] {
        run(store, pre_order(&id(who), &id(&format!("o{who}")), &sku)).await?;
    }
    run(store, delivery(&id("in"), &sku, &id("po"))).await?;
    store.fill_due(BACKORDER_ACTOR).await?;
    run(store, CancelExpected::validate(&id("po")).expect("valid")).await?;
    store.fill_due(BACKORDER_ACTOR).await?;
    run(store, command::confirm(&id("a")).expect("valid")).await?;
    run(store, command::release(&id("b"), None).expect("valid")).await
}

/// Runs one command of the episode; any refusal means the episode is wrong.
async fn run(store: &Store, cmd: Command) -> Result<(), StoreError> {
    match store.execute(cmd, CommandContext::new("bench")).await? {
        Ok(_) => Ok(()),
        Err(r) => Err(StoreError::Database(
            format!("a pre-order episode was refused: {r}").into(),
        )),
    }
}

fn expect(id: &str, sku: &str) -> Command {
    ExpectRequest {
        expected_id: id.to_owned(),
        sku: sku.to_owned(),
        location: None,
        quantity: EXPECTED,
        expected_on: DUE.to_owned(),
    }
    .validate()
    .expect("valid expected receipt")
}

fn pre_order(id: &str, order: &str, sku: &str) -> Command {
    ReserveRequest {
        reservation_id: id.to_owned(),
        order_id: order.to_owned(),
        lines: vec![LineRequest {
            sku: sku.to_owned(),
            location: None,
            quantity: ORDERED,
        }],
        ttl_seconds: Some(TTL_SECONDS),
        backorder: true,
        latest_arrival: Some(DUE.to_owned()),
    }
    .validate()
    .expect("valid pre-order")
}

fn delivery(id: &str, sku: &str, against: &str) -> Command {
    ReceiveRequest {
        receipt_id: id.to_owned(),
        sku: sku.to_owned(),
        location: None,
        quantity: DELIVERED,
        against: Some(against.to_owned()),
    }
    .validate()
    .expect("valid delivery")
}
