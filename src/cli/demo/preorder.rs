//! The demo's eleventh chapter, a pre-order sale: lanterns that arrive next
//! week are sold before they are here, first come, first served, and the
//! one order the supplier cannot cover is told so.

use serde_json::json;
use stockledger::app::backorders::BACKORDER_ACTOR;
use stockledger::domain::{
    command, CancelExpected, Command, ExpectRequest, LineRequest, ReceiveRequest, ReserveRequest,
};
use stockledger::limits::MAX_TTL_SECONDS;

use super::{short, Story};
use crate::cli::Failure;

/// Lanterns the supplier promises for next week, and what arrives of them.
const EXPECTED: i64 = 10;
const DELIVERED: i64 = 8;

impl Story<'_> {
    /// A pre-order of `qty` lanterns: all of it waits for the delivery.
    fn pre_order(&self, who: &str, qty: i64) -> Command {
        ReserveRequest {
            reservation_id: self.id(who),
            order_id: self.id(&format!("order-{who}")),
            lines: vec![LineRequest {
                sku: self.id("lantern"),
                location: None,
                quantity: qty,
            }],
            ttl_seconds: Some(i64::from(MAX_TTL_SECONDS)),
            backorder: true,
            latest_arrival: None,
        }
        .validate()
        .expect("demo commands are valid")
    }

    /// What one order holds and still waits for, as "held/waiting".
    async fn held_waiting(&self, who: &str) -> Result<String, Failure> {
        let id = stockledger::domain::ReservationId::parse("id", &self.id(who)).expect("valid");
        let d = self
            .store
            .reservation(&id)
            .await?
            .expect("the order exists");
        let l = &d.view.lines[0];
        Ok(format!(
            "{} held, {} waiting, {} dropped",
            l.open, l.waiting, l.dropped
        ))
    }

    /// The backorder worker's pass, as the server runs it.
    async fn fill(&self) -> Result<usize, Failure> {
        Ok(self.store.fill_due(BACKORDER_ACTOR).await?)
    }

    /// 11. Lanterns arrive next week; Grace and Henry pre-order them.
    pub(super) async fn pre_order_sale(&mut self) -> Result<(), Failure> {
        let po = self.id("po-lanterns");
        let due = (chrono::Utc::now() + chrono::Duration::days(7)).date_naive();
        let expect = ExpectRequest {
            expected_id: po.clone(),
            sku: self.id("lantern"),
            location: None,
            quantity: EXPECTED,
            expected_on: due.to_string(),
        };
        self.exec(expect.validate().expect("valid")).await??;
        let grace = self.exec(self.pre_order("grace", 3)).await?;
        let greedy = self.exec(self.pre_order("henry", EXPECTED)).await?;
        let henry = self.exec(self.pre_order("henry", EXPECTED - 3)).await?;
        let early = self
            .exec(command::confirm(&self.id("grace")).expect("valid"))
            .await?;
        let waiting = (
            self.held_waiting("grace").await?,
            self.held_waiting("henry").await?,
        );
        let delivery = ReceiveRequest {
            receipt_id: self.id("lanterns-in"),
            sku: self.id("lantern"),
            location: None,
            quantity: DELIVERED,
            against: Some(po.clone()),
        };
        self.exec(delivery.validate().expect("valid")).await??;
        let filled = self.fill().await?;
        let after_delivery = (
            self.held_waiting("grace").await?,
            self.held_waiting("henry").await?,
        );
        self.exec(CancelExpected::validate(&po).expect("valid"))
            .await??;
        let dropped = self.fill().await?;
        let henry_now = self.held_waiting("henry").await?;
        let shipped = self
            .exec(command::confirm(&self.id("grace")).expect("valid"))
            .await?;
        self.say(&format!(
            "11. {EXPECTED} lanterns are due {due}, none on hand. Grace pre-orders 3 ({}); Henry asks for {EXPECTED} ({}), then {} ({}).\n   Grace cannot be shipped yet ({}): Grace {}, Henry {}.\n   {DELIVERED} arrive; the backorder worker fills in placing order ({filled} orders): Grace {}, Henry {}.\n   The supplier cancels the rest; Henry's last units are named unfillable ({dropped} order): Henry {}. Grace ships: {}.",
            short(&grace),
            short(&greedy),
            EXPECTED - 3,
            short(&henry),
            short(&early),
            waiting.0,
            waiting.1,
            after_delivery.0,
            after_delivery.1,
            henry_now,
            short(&shipped),
        ));
        self.chapter(
            "pre-order",
            json!({"grace": short(&grace), "too_many": short(&greedy), "henry": short(&henry),
                   "early_confirm": short(&early), "filled": filled, "dropped": dropped,
                   "henry_after_delivery": after_delivery.1, "henry_at_the_end": henry_now,
                   "grace_ships": short(&shipped)}),
        );
        Ok(())
    }
}
