//! `stockledger demo`: a flash sale told end to end, on fresh ids so that it
//! can run any number of times against any database without touching other
//! data. Every step goes through the same command path callers use.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use stockledger::domain::{
    command, CancelExpected, Command, CommandContext, ConfirmLinesRequest, ExpectRequest,
    ExtendRequest, Item, LineRequest, Location, Outcome, ReceiveRequest, Rejection,
    ReleaseLinesRequest, ReservationId, ReserveRequest, Sku, TransferRequest,
};
use stockledger::limits::{DEMO_CATCH_UP_SECONDS, DEMO_EXPIRY_WAIT_MS, DEMO_SHORT_TTL_SECONDS};
use stockledger::store::Store;

use super::output::{stock_json, stock_text, Printer};
use super::Failure;

mod preorder;

/// How many buyers chase the limited item at once, and how many units exist.
const BUYERS: usize = 250;
const UNITS: i64 = 100;

struct Story<'a> {
    store: &'a Store,
    printer: &'a Printer,
    run: String,
    chapters: Vec<Value>,
}

impl Story<'_> {
    fn id(&self, name: &str) -> String {
        format!("{}-{name}", self.run)
    }

    fn say(&self, text: &str) {
        if !self.printer.json {
            println!("{text}");
        }
    }

    fn chapter(&mut self, title: &str, facts: Value) {
        self.chapters
            .push(json!({"chapter": title, "facts": facts}));
    }

    async fn exec(&self, cmd: Command) -> Result<Result<Outcome, Rejection>, Failure> {
        Ok(self.store.execute(cmd, CommandContext::new("demo")).await?)
    }

    fn reserve(&self, id: &str, order: &str, sku: &str, qty: i64, ttl: Option<i64>) -> Command {
        ReserveRequest {
            reservation_id: self.id(id),
            order_id: self.id(order),
            lines: vec![LineRequest {
                sku: self.id(sku),
                location: None,
                quantity: qty,
            }],
            ttl_seconds: ttl,
            backorder: false,
            latest_arrival: None,
        }
        .validate()
        .expect("demo commands are valid")
    }

    fn item(&self, sku: &str) -> Item {
        Item {
            sku: Sku::parse("sku", &self.id(sku)).expect("valid"),
            location: Location::parse_or_default("location", None).expect("valid"),
        }
    }

    async fn figures(&self, sku: &str) -> Result<(String, Value), Failure> {
        let item = self.item(sku);
        let b = self.store.balance(&item).await?.unwrap_or_default();
        Ok((stock_text(&item, b), stock_json(&item, b)))
    }

    async fn events_in(&self, reservation: &str) -> Result<usize, Failure> {
        let id = ReservationId::parse("id", &self.id(reservation)).expect("valid");
        Ok(self
            .store
            .reservation(&id)
            .await?
            .map_or(0, |d| d.events.len()))
    }
}

fn short(answer: &Result<Outcome, Rejection>) -> String {
    match answer {
        Ok(Outcome::Reservation { view, replayed }) => {
            format!(
                "{}{}",
                view.state.as_str(),
                if *replayed { " (replayed)" } else { "" }
            )
        }
        Ok(Outcome::Transferred { quantity, .. }) => format!("moved {quantity}"),
        Ok(other) => json!(stockledger::api::answer(other)).to_string(),
        Err(r) => r.code().as_str().to_owned(),
    }
}

pub async fn run(store: &Store, printer: &Printer) -> Result<(), Failure> {
    let run = format!("demo-{}", &uuid::Uuid::new_v4().simple().to_string()[..6]);
    let mut s = Story {
        store,
        printer,
        run,
        chapters: Vec::new(),
    };
    s.say(&format!(
        "A flash sale at a small shop. Every id in this run starts with {}-.\n",
        s.run
    ));
    s.stock_arrives().await?;
    s.flash_sale().await?;
    s.retry_after_timeout().await?;
    s.duplicated_message().await?;
    s.cancel_before_reserve().await?;
    s.confirm_and_cancel_race().await?;
    s.expiry().await?;
    s.transfer().await?;
    s.partial_shipment().await?;
    s.coming_next_week().await?;
    s.pre_order_sale().await?;
    s.finale().await?;
    if printer.json {
        printer.value(&json!({"run": s.run, "chapters": s.chapters}), "");
    } else {
        let me = how_to_run_me();
        println!(
            "\nTry: {me} show {}   |   {me} events --limit 20",
            s.id("alice")
        );
    }
    Ok(())
}

/// How the reader runs this program again from where they are, so that the
/// demo's last hint can be typed as printed: its name when that is what
/// `PATH` finds, `cargo run [--release] --` when cargo started it (a
/// newcomer's first command), else its full path.
fn how_to_run_me() -> String {
    let Ok(me) = std::env::current_exe() else {
        return "stockledger".to_owned();
    };
    let name = me.file_name().map(|n| n.to_string_lossy().into_owned());
    let found = name.as_deref().and_then(|n| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(n))
            .find(|p| p.is_file())
    });
    if let (Some(name), Some(found)) = (&name, found) {
        if found.canonicalize().ok() == me.canonicalize().ok() {
            return name.clone();
        }
    }
    if std::env::var_os("CARGO").is_some() && std::env::var_os("CARGO_MANIFEST_DIR").is_some() {
        let release = me.components().any(|c| c.as_os_str() == "release");
        return if release {
            "cargo run --release --"
        } else {
            "cargo run --"
        }
        .to_owned();
    }
    me.display().to_string()
}

/// The chapters of the story, in order.
impl Story<'_> {
    /// 1. Stock arrives.
    async fn stock_arrives(&mut self) -> Result<(), Failure> {
        for (sku, qty) in [("sneaker", UNITS), ("tshirt", 50)] {
            let cmd = ReceiveRequest {
                receipt_id: self.id(&format!("delivery-{sku}")),
                sku: self.id(sku),
                location: None,
                quantity: qty,
                against: None,
            }
            .validate()
            .expect("valid");
            self.exec(cmd).await??;
        }
        let (sneakers, _) = self.figures("sneaker").await?;
        self.say(&format!(
            "1. Stock arrives: {UNITS} limited sneakers and 50 t-shirts.\n   {sneakers}"
        ));
        self.chapter("stock arrives", json!({"sneaker": UNITS, "tshirt": 50}));
        Ok(())
    }

    /// 2. The drop: many buyers at once, exactly the stock is sold.
    async fn flash_sale(&mut self) -> Result<(), Failure> {
        let shared = Arc::new(self.store.clone());
        let tasks: Vec<_> = (0..BUYERS)
            .map(|i| {
                let store = shared.clone();
                let cmd = self.reserve(
                    &format!("buyer-{i}"),
                    &format!("order-{i}"),
                    "sneaker",
                    1,
                    None,
                );
                tokio::spawn(async move { store.execute(cmd, CommandContext::new("demo")).await })
            })
            .collect();
        let mut winners = Vec::new();
        let mut sold_out = 0;
        for (i, t) in tasks.into_iter().enumerate() {
            match t.await.map_err(anyhow::Error::from)?? {
                Ok(_) => winners.push(i),
                Err(Rejection::InsufficientStock { .. }) => sold_out += 1,
                Err(other) => return Err(other.into()),
            }
        }
        for i in &winners {
            self.exec(command::confirm(&self.id(&format!("buyer-{i}"))).expect("valid"))
                .await??;
        }
        let (sneakers, sneaker_json) = self.figures("sneaker").await?;
        self.say(&format!(
            "2. The drop: {BUYERS} buyers reserve one pair each, all at once.\n   {} got a pair and paid, {sold_out} were told INSUFFICIENT_STOCK. Not one oversold.\n   {sneakers}",
            winners.len()
        ));
        self.chapter("flash sale", json!({"buyers": BUYERS, "reserved": winners.len(), "refused": sold_out, "stock": sneaker_json}));
        Ok(())
    }

    /// 3. A retry after a timeout gets the original answer.
    async fn retry_after_timeout(&mut self) -> Result<(), Failure> {
        let first = self
            .exec(self.reserve("alice", "order-alice", "tshirt", 2, Some(600)))
            .await?;
        let retry = self
            .exec(self.reserve("alice", "order-alice", "tshirt", 2, Some(600)))
            .await?;
        let same_expiry = match (&first, &retry) {
            (
                Ok(Outcome::Reservation { view: a, .. }),
                Ok(Outcome::Reservation { view: b, .. }),
            ) => a.expires_at == b.expires_at,
            _ => false,
        };
        self.say(&format!(
            "3. Alice's order service times out and sends her reservation again.\n   first: {}, retry: {} with the same expiry: {same_expiry}. Events in her stream: {}",
            short(&first),
            short(&retry),
            self.events_in("alice").await?
        ));
        self.chapter(
            "retry after a timeout",
            json!({"first": short(&first), "retry": short(&retry), "same_expiry": same_expiry}),
        );
        Ok(())
    }

    /// 4. A duplicated message appends nothing.
    async fn duplicated_message(&mut self) -> Result<(), Failure> {
        let cmd = command::confirm(&self.id("alice")).expect("valid");
        let shared = Arc::new(self.store.clone());
        let deliveries: Vec<_> = (0..5)
            .map(|_| {
                let (store, cmd) = (shared.clone(), cmd.clone());
                tokio::spawn(async move { store.execute(cmd, CommandContext::new("demo")).await })
            })
            .collect();
        let mut answers = Vec::new();
        for d in deliveries {
            answers.push(short(&d.await.map_err(anyhow::Error::from)??));
        }
        self.say(&format!(
            "4. The payment message reaches us five times at once: {}.\n   Events in her stream: {} (created, confirmed). One confirm, however often it is said.",
            answers.join(", "),
            self.events_in("alice").await?
        ));
        self.chapter("duplicated message", json!({"answers": answers}));
        Ok(())
    }

    /// 5. A cancel arrives before its reserve.
    async fn cancel_before_reserve(&mut self) -> Result<(), Failure> {
        let cancel = self
            .exec(command::release(&self.id("bob"), Some("customer cancelled")).expect("valid"))
            .await?;
        let late = self
            .exec(self.reserve("bob", "order-bob", "tshirt", 1, None))
            .await?;
        self.say(&format!(
            "5. Bob cancels, and the cancel overtakes his reservation.\n   cancel: {} (a tombstone), the late reservation: {}. No stock is held for a dead order.",
            short(&cancel),
            short(&late)
        ));
        self.chapter(
            "cancel before reserve",
            json!({"cancel": short(&cancel), "late_reserve": short(&late)}),
        );
        Ok(())
    }

    /// 6. Confirm and cancel race.
    async fn confirm_and_cancel_race(&mut self) -> Result<(), Failure> {
        self.exec(self.reserve("carol", "order-carol", "tshirt", 3, None))
            .await??;
        let (c, r) = tokio::join!(
            self.exec(command::confirm(&self.id("carol")).expect("valid")),
            self.exec(
                command::release(&self.id("carol"), Some("customer cancelled")).expect("valid")
            )
        );
        let (c, r) = (c?, r?);
        self.say(&format!(
            "6. Carol pays and cancels at the same instant.\n   confirm: {}, cancel: {}. Exactly one of them happened; events in her stream: {}",
            short(&c),
            short(&r),
            self.events_in("carol").await?
        ));
        self.chapter(
            "confirm and cancel race",
            json!({"confirm": short(&c), "cancel": short(&r)}),
        );
        Ok(())
    }

    /// 7. A reservation expires.
    async fn expiry(&mut self) -> Result<(), Failure> {
        self.exec(self.reserve(
            "dave",
            "order-dave",
            "tshirt",
            4,
            Some(DEMO_SHORT_TTL_SECONDS),
        ))
        .await??;
        tokio::time::sleep(Duration::from_millis(DEMO_EXPIRY_WAIT_MS)).await;
        // The expiry pass finds due reservations in the expiry projection; bring
        // the projections up to date first, as the running workers would.
        stockledger::projection::worker::catch_up_fully(
            self.store.pool(),
            Duration::from_secs(DEMO_CATCH_UP_SECONDS),
        )
        .await?;
        let expired = self
            .store
            .expire_due("demo", stockledger::limits::MAX_EXPIRIES_PER_PASS)
            .await?;
        let late_pay = self
            .exec(command::confirm(&self.id("dave")).expect("valid"))
            .await?;
        self.say(&format!(
            "7. Dave reserves four t-shirts for one second and never pays.\n   the expiry pass expired {expired} reservation(s); his late payment: {}.",
            short(&late_pay)
        ));
        self.chapter(
            "expiry",
            json!({"expired": expired, "late_confirm": short(&late_pay)}),
        );
        Ok(())
    }

    /// 8. Stock moves to the shop floor: a transfer, and one it cannot make.
    async fn transfer(&mut self) -> Result<(), Failure> {
        let move_ = |id: &str, qty: i64| {
            TransferRequest {
                transfer_id: self.id(id),
                sku: self.id("tshirt"),
                from_location: "default".into(),
                to_location: "shop".into(),
                quantity: qty,
            }
            .validate()
            .expect("valid")
        };
        let moved = self.exec(move_("restock-shop", 10)).await?;
        let too_many = self.exec(move_("restock-shop-again", 1_000)).await?;
        let shop = Item {
            location: Location::parse("location", "shop").expect("valid"),
            ..self.item("tshirt")
        };
        let at_shop = self.store.balance(&shop).await?.unwrap_or_default();
        self.say(&format!(
            "8. Ten t-shirts move from the warehouse to the shop floor, all at once: {}.\n   {}\n   moving a thousand more: {}.",
            short(&moved),
            stock_text(&shop, at_shop),
            short(&too_many)
        ));
        self.chapter(
            "transfer",
            json!({"moved": short(&moved), "shop": stock_json(&shop, at_shop), "too_many": short(&too_many)}),
        );
        Ok(())
    }

    /// 9. An order ships in parts: a longer hold, a line taken off, two shipments.
    async fn partial_shipment(&mut self) -> Result<(), Failure> {
        let erin = self.id("erin");
        let tshirts = |n| {
            vec![LineRequest {
                sku: self.id("tshirt"),
                location: None,
                quantity: n,
            }]
        };
        self.exec(self.reserve("erin", "order-erin", "tshirt", 3, None))
            .await??;
        let extend = ExtendRequest {
            extension_id: "checkout-needs-time".into(),
            ttl_seconds: 3_600,
        };
        let extended = self.exec(extend.validate(&erin).expect("valid")).await?;
        let drop_one = ReleaseLinesRequest {
            release_id: "size-unavailable".into(),
            lines: tshirts(1),
            reason: Some("customer removed one".into()),
        };
        let dropped = self.exec(drop_one.validate(&erin).expect("valid")).await?;
        let ship = ConfirmLinesRequest {
            confirmation_id: "parcel-1".into(),
            lines: tshirts(1),
        };
        let first = self.exec(ship.validate(&erin).expect("valid")).await?;
        let over = ConfirmLinesRequest {
            confirmation_id: "parcel-2".into(),
            lines: tshirts(2),
        };
        let too_many = self.exec(over.validate(&erin).expect("valid")).await?;
        let rest = self.exec(command::confirm(&erin).expect("valid")).await??;
        let Outcome::Reservation { view, .. } = &rest else {
            return Err(anyhow::anyhow!("a confirm answered {rest:?}").into());
        };
        let line = &view.lines[0];
        self.say(&format!(
            "9. Erin orders three t-shirts; her checkout asks for another hour: {}.\n   She takes one off ({}), the first parcel ships one ({}), a second parcel of two is refused ({}),\n   and the last one ships: {}, {} confirmed, {} released, {} open. Events in her stream: {}",
            short(&extended),
            short(&dropped),
            short(&first),
            short(&too_many),
            view.state.as_str(),
            line.confirmed,
            line.released,
            line.open,
            self.events_in("erin").await?
        ));
        self.chapter(
            "partial shipment",
            json!({"extended": short(&extended), "removed": short(&dropped),
                   "first_parcel": short(&first), "too_many": short(&too_many),
                   "rest": view}),
        );
        Ok(())
    }

    /// What can be promised of `sku` now and by each date, once the read
    /// models have caught up (as the server's workers keep them).
    async fn promise(&self, sku: &str) -> Result<Value, Failure> {
        stockledger::projection::worker::catch_up_fully(
            self.store.pool(),
            Duration::from_secs(DEMO_CATCH_UP_SECONDS),
        )
        .await?;
        let item = self.item(sku);
        let p = self
            .store
            .promise(&item)
            .await?
            .ok_or_else(|| Rejection::never_received(&item))?;
        Ok(json!(stockledger::api::answers::promise(
            &item, &p.figures, &p.promise, p.position
        )))
    }

    /// 10. Jackets come next week: ordered, promised, delivered short, the rest cancelled.
    async fn coming_next_week(&mut self) -> Result<(), Failure> {
        let po = self.id("po-jackets");
        let due = (chrono::Utc::now() + chrono::Duration::days(7))
            .date_naive()
            .to_string();
        let expect = ExpectRequest {
            expected_id: po.clone(),
            sku: self.id("jacket"),
            location: None,
            quantity: 20,
            expected_on: due.clone(),
        };
        self.exec(expect.validate().expect("valid")).await??;
        let before = self.promise("jacket").await?;
        let delivery = ReceiveRequest {
            receipt_id: self.id("jackets-in"),
            sku: self.id("jacket"),
            location: None,
            quantity: 15,
            against: Some(po.clone()),
        };
        let delivered = self.exec(delivery.validate().expect("valid")).await?;
        let order = self
            .exec(self.reserve("frank", "order-frank", "jacket", 2, None))
            .await?;
        let cancelled = self
            .exec(CancelExpected::validate(&po).expect("valid"))
            .await??;
        let Outcome::Expected { view, .. } = &cancelled else {
            return Err(anyhow::anyhow!("a cancellation answered {cancelled:?}").into());
        };
        let after = self.promise("jacket").await?;
        self.say(&format!(
            "10. Twenty jackets are ordered from the supplier, due {due}. Nothing is on hand, yet {} can be promised by then.\n   Fifteen arrive against the order ({}); Frank reserves two ({}).\n   The supplier cancels the rest: {} withdrawn. Now {} can be promised, and nothing is coming.",
            before["dates"][0]["available"],
            short(&delivered),
            short(&order),
            view.quantity.saturating_sub(view.delivered),
            after["available_now"],
        ));
        self.chapter(
            "coming next week",
            json!({"before": before, "delivered": short(&delivered), "order": short(&order),
                   "expected": stockledger::api::answers::expected_receipt(view, None),
                   "after": after}),
        );
        Ok(())
    }

    /// 12. The final figures and one order's timeline.
    async fn finale(&mut self) -> Result<(), Failure> {
        let (sneakers, sneaker_json) = self.figures("sneaker").await?;
        let (tshirts, tshirt_json) = self.figures("tshirt").await?;
        self.say(&format!("12. Final figures:\n   {sneakers}\n   {tshirts}"));
        let alice = ReservationId::parse("id", &self.id("alice")).expect("valid");
        let details = self.store.reservation(&alice).await?.expect("alice exists");
        self.say("   Alice's order, as the log tells it:");
        for e in &details.events {
            self.say(&format!(
                "     #{} {} {}",
                e.seq,
                e.recorded_at.format("%H:%M:%S%.3f"),
                e.event
            ));
        }
        self.chapter(
            "final",
            json!({"sneaker": sneaker_json, "tshirt": tshirt_json,
                   "alice": stockledger::api::reservation(&details, None, true)}),
        );
        Ok(())
    }
}
