//! Model-based property tests: random command sequences run against the pure
//! core and against the store (a real database), each compared with a plain
//! reference model written from the outcome table of `docs/domain.md`, not
//! from the core's code. proptest shrinks a failure to a minimal sequence.
//!
//! Also: arbitrary JSON and arbitrary bytes fed to the request decoders give
//! a typed error, never a panic.

mod common;

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, TimeZone, Utc};
use proptest::prelude::*;
use stockledger::domain::{
    apply, command, decide, AdjustRequest, Command, LedgerState, LimitRequest, LineRequest,
    Outcome, ReceiveRequest, ReserveRequest,
};

const SKUS: [&str; 2] = ["apple", "pear"];
/// Long enough that nothing expires in a store run, whose clock we do not set.
const STORE_TTL: i64 = 3600;

#[derive(Clone, Debug)]
enum Op {
    Receive {
        id: u8,
        sku: usize,
        qty: i64,
    },
    Adjust {
        id: u8,
        sku: usize,
        delta: i64,
    },
    /// A per-order limit (`None`: lifted).
    Limit {
        id: u8,
        sku: usize,
        max: Option<i64>,
    },
    Reserve {
        rid: u8,
        order: u8,
        lines: Vec<(usize, i64)>,
        ttl: i64,
    },
    Confirm {
        rid: u8,
    },
    Release {
        rid: u8,
    },
    Expire {
        rid: u8,
    },
    /// An expected receipt of `qty` units (its date does not matter here).
    Expect {
        id: u8,
        sku: usize,
        qty: i64,
    },
    /// A receipt delivered against expected receipt `po`.
    Deliver {
        id: u8,
        po: u8,
        sku: usize,
        qty: i64,
    },
    CancelExpected {
        po: u8,
    },
    /// Time passes (pure-core runs only).
    Tick {
        seconds: i64,
    },
}

fn op(with_time: bool) -> impl Strategy<Value = Op> {
    let ttl = if with_time {
        1..6i64
    } else {
        STORE_TTL..STORE_TTL + 1
    };
    let tick = if with_time { 1..4i64 } else { 0..1i64 };
    prop_oneof![
        (0..3u8, 0..2usize, 1..6i64).prop_map(|(id, sku, qty)| Op::Receive { id, sku, qty }),
        (0..3u8, 0..2usize, -4..4i64)
            .prop_filter("delta is not 0", |(_, _, d)| *d != 0)
            .prop_map(|(id, sku, delta)| Op::Adjust { id, sku, delta }),
        (0..3u8, 0..2usize, prop::option::of(0..4i64)).prop_map(|(id, sku, max)| Op::Limit {
            id,
            sku,
            max
        }),
        (
            0..4u8,
            0..4u8,
            prop::collection::vec((0..2usize, 1..4i64), 1..3),
            ttl
        )
            .prop_map(|(rid, order, lines, ttl)| Op::Reserve {
                rid,
                order,
                lines,
                ttl
            }),
        (0..4u8).prop_map(|rid| Op::Confirm { rid }),
        (0..4u8).prop_map(|rid| Op::Release { rid }),
        (0..4u8).prop_map(|rid| Op::Expire { rid }),
        (0..2u8, 0..2usize, 1..6i64).prop_map(|(id, sku, qty)| Op::Expect { id, sku, qty }),
        (0..3u8, 0..3u8, 0..2usize, 1..6i64).prop_map(|(id, po, sku, qty)| Op::Deliver {
            id,
            po,
            sku,
            qty
        }),
        (0..3u8).prop_map(|po| Op::CancelExpected { po }),
        tick.prop_map(|seconds| Op::Tick { seconds }),
    ]
}

fn to_command(op: &Op) -> Option<Command> {
    Some(match op {
        Op::Receive { id, sku, qty } => ReceiveRequest {
            receipt_id: format!("in-{id}"),
            sku: SKUS[*sku].into(),
            location: None,
            quantity: *qty,
            against: None,
        }
        .validate()
        .unwrap(),
        Op::Adjust { id, sku, delta } => AdjustRequest {
            adjustment_id: format!("adj-{id}"),
            sku: SKUS[*sku].into(),
            location: None,
            delta: *delta,
            reason: "count".into(),
        }
        .validate()
        .unwrap(),
        Op::Limit { id, sku, max } => LimitRequest {
            limit_id: format!("lim-{id}"),
            sku: SKUS[*sku].into(),
            location: None,
            max_per_order: *max,
        }
        .validate()
        .unwrap(),
        Op::Reserve {
            rid,
            order,
            lines,
            ttl,
        } => ReserveRequest {
            reservation_id: format!("r{rid}"),
            order_id: format!("o{order}"),
            lines: lines
                .iter()
                .map(|(sku, q)| LineRequest {
                    sku: SKUS[*sku].into(),
                    location: None,
                    quantity: *q,
                })
                .collect(),
            ttl_seconds: Some(*ttl),
            backorder: false,
            latest_arrival: None,
        }
        .validate()
        .unwrap(),
        Op::Confirm { rid } => command::confirm(&format!("r{rid}")).unwrap(),
        Op::Release { rid } => command::release(&format!("r{rid}"), None).unwrap(),
        Op::Expire { rid } => command::expire(&format!("r{rid}")).unwrap(),
        Op::Expect { id, sku, qty } => stockledger::domain::ExpectRequest {
            expected_id: format!("po-{id}"),
            sku: SKUS[*sku].into(),
            location: None,
            quantity: *qty,
            expected_on: "2027-01-10".into(),
        }
        .validate()
        .unwrap(),
        Op::Deliver { id, po, sku, qty } => ReceiveRequest {
            receipt_id: format!("dl-{id}"),
            sku: SKUS[*sku].into(),
            location: None,
            quantity: *qty,
            against: Some(format!("po-{po}")),
        }
        .validate()
        .unwrap(),
        Op::CancelExpected { po } => {
            stockledger::domain::CancelExpected::validate(&format!("po-{po}")).unwrap()
        }
        Op::Tick { .. } => return None,
    })
}

// ---- the reference model: the outcome table, plainly ---------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Reserved,
    Confirmed,
    Released,
    Expired,
}

#[derive(Clone, Debug)]
struct Res {
    /// `None` for a tombstone.
    request: Option<(u8, BTreeMap<usize, i64>)>,
    expires: i64,
    state: St,
}

#[derive(Default, Debug)]
struct Model {
    now: i64,
    /// (on_hand, reserved, confirmed) per sku.
    figures: [(i64, i64, i64); 2],
    receipts: HashMap<u8, (usize, i64)>,
    adjustments: HashMap<u8, (usize, i64)>,
    limits: HashMap<u8, (usize, Option<i64>)>,
    /// The per-order limit in force per sku.
    limit: [Option<i64>; 2],
    reservations: HashMap<u8, Res>,
    orders: HashMap<u8, u8>,
    /// Expected receipts: (sku, units expected, cancelled).
    expected: HashMap<u8, (usize, i64, bool)>,
    /// Receipts against expected receipts: (expected receipt, sku, units).
    deliveries: HashMap<u8, (u8, usize, i64)>,
}

fn state_name(s: St) -> &'static str {
    match s {
        St::Reserved => "RESERVED",
        St::Confirmed => "CONFIRMED",
        St::Released => "RELEASED",
        St::Expired => "EXPIRED",
    }
}

impl Model {
    fn merged(lines: &[(usize, i64)]) -> BTreeMap<usize, i64> {
        let mut m = BTreeMap::new();
        for (sku, q) in lines {
            *m.entry(*sku).or_insert(0) += q;
        }
        m
    }

    /// The answer as a short code: a state (with `+replay`), or a rejection code.
    fn run(&mut self, op: &Op) -> Option<String> {
        let answer = match op {
            Op::Tick { seconds } => {
                self.now += seconds;
                return None;
            }
            Op::Receive { id, sku, qty } => match self.receipts.get(id) {
                Some(r) if *r == (*sku, *qty) => "RECEIVED+replay".into(),
                Some(_) => "IDEMPOTENCY_CONFLICT".into(),
                None => {
                    self.receipts.insert(*id, (*sku, *qty));
                    self.figures[*sku].0 += qty;
                    "RECEIVED".into()
                }
            },
            Op::Adjust { id, sku, delta } => match self.adjustments.get(id) {
                Some(a) if *a == (*sku, *delta) => "ADJUSTED+replay".into(),
                Some(_) => "IDEMPOTENCY_CONFLICT".into(),
                None => {
                    let (on_hand, reserved, _) = self.figures[*sku];
                    if on_hand + delta < reserved {
                        "INSUFFICIENT_STOCK".into()
                    } else {
                        self.adjustments.insert(*id, (*sku, *delta));
                        self.figures[*sku].0 += delta;
                        "ADJUSTED".into()
                    }
                }
            },
            Op::Limit { id, sku, max } => match self.limits.get(id) {
                Some(l) if *l == (*sku, *max) => "LIMIT_SET+replay".into(),
                Some(_) => "IDEMPOTENCY_CONFLICT".into(),
                None => {
                    self.limits.insert(*id, (*sku, *max));
                    self.limit[*sku] = *max;
                    "LIMIT_SET".into()
                }
            },
            Op::Reserve {
                rid,
                order,
                lines,
                ttl,
            } => {
                let lines = Self::merged(lines);
                let over = lines
                    .iter()
                    .any(|(sku, q)| self.limit[*sku].is_some_and(|m| *q > m));
                match self.reservations.get(rid) {
                    Some(r) if r.request.is_none() => "RESERVATION_RELEASED".into(),
                    Some(r) if r.request != Some((*order, lines.clone())) => {
                        "IDEMPOTENCY_CONFLICT".into()
                    }
                    Some(r) if r.state == St::Released => "RESERVATION_RELEASED".into(),
                    Some(r) => format!("{}+replay", state_name(r.state)),
                    None if self.orders.contains_key(order) => "ORDER_ALREADY_RESERVED".into(),
                    None if over => "ORDER_LIMIT_EXCEEDED".into(),
                    None => {
                        let short = lines
                            .iter()
                            .any(|(sku, q)| self.figures[*sku].0 - self.figures[*sku].1 < *q);
                        if short {
                            "INSUFFICIENT_STOCK".into()
                        } else {
                            for (sku, q) in &lines {
                                self.figures[*sku].1 += q;
                            }
                            self.orders.insert(*order, *rid);
                            self.reservations.insert(
                                *rid,
                                Res {
                                    request: Some((*order, lines)),
                                    expires: self.now + ttl,
                                    state: St::Reserved,
                                },
                            );
                            "RESERVED".into()
                        }
                    }
                }
            }
            Op::Expect { id, sku, qty } => match self.expected.get(id) {
                Some((s, q, cancelled)) if (*s, *q) == (*sku, *qty) => {
                    let state = if *cancelled { "cancelled" } else { "open" };
                    format!("{state}+replay")
                }
                Some(_) => "IDEMPOTENCY_CONFLICT".into(),
                None => {
                    self.expected.insert(*id, (*sku, *qty, false));
                    "open".into()
                }
            },
            Op::Deliver { id, po, sku, qty } => match self.deliveries.get(id) {
                Some(d) if *d == (*po, *sku, *qty) => "RECEIVED+replay".into(),
                Some(_) => "IDEMPOTENCY_CONFLICT".into(),
                None => match self.expected.get(po) {
                    None => "NOT_FOUND".into(),
                    Some((s, _, _)) if s != sku => "EXPECTED_ITEM_MISMATCH".into(),
                    Some((_, _, true)) => "EXPECTED_RECEIPT_CANCELLED".into(),
                    Some(_) => {
                        self.deliveries.insert(*id, (*po, *sku, *qty));
                        self.figures[*sku].0 += qty;
                        "RECEIVED".into()
                    }
                },
            },
            Op::CancelExpected { po } => match self.expected.get_mut(po) {
                None => "NOT_FOUND".into(),
                Some((_, _, true)) => "cancelled+replay".into(),
                Some(e) => {
                    e.2 = true;
                    "cancelled".into()
                }
            },
            Op::Confirm { rid } => {
                let now = self.now;
                match self.reservations.get_mut(rid) {
                    None => "RESERVATION_NOT_FOUND".into(),
                    Some(r) => match r.state {
                        St::Released => "RESERVATION_RELEASED".into(),
                        St::Confirmed => "CONFIRMED+replay".into(),
                        St::Expired => "RESERVATION_EXPIRED".into(),
                        St::Reserved if now >= r.expires => "RESERVATION_EXPIRED".into(),
                        St::Reserved => {
                            r.state = St::Confirmed;
                            let lines = r.request.clone().unwrap().1;
                            for (sku, q) in lines {
                                let f = &mut self.figures[sku];
                                f.0 -= q;
                                f.1 -= q;
                                f.2 += q;
                            }
                            "CONFIRMED".into()
                        }
                    },
                }
            }
            Op::Release { rid } => match self.reservations.get_mut(rid) {
                None => {
                    self.reservations.insert(
                        *rid,
                        Res {
                            request: None,
                            expires: 0,
                            state: St::Released,
                        },
                    );
                    "RELEASED".into()
                }
                Some(r) => match r.state {
                    St::Released | St::Expired => format!("{}+replay", state_name(r.state)),
                    St::Confirmed => "ALREADY_CONFIRMED".into(),
                    St::Reserved => {
                        r.state = St::Released;
                        for (sku, q) in r.request.clone().unwrap().1 {
                            self.figures[sku].1 -= q;
                        }
                        "RELEASED".into()
                    }
                },
            },
            Op::Expire { rid } => {
                let now = self.now;
                match self.reservations.get_mut(rid) {
                    Some(r) if r.state == St::Reserved && now >= r.expires => {
                        r.state = St::Expired;
                        for (sku, q) in r.request.clone().unwrap().1 {
                            self.figures[sku].1 -= q;
                        }
                        "EXPIRED".into()
                    }
                    _ => "NOT_DUE".into(),
                }
            }
        };
        for (on_hand, reserved, confirmed) in self.figures {
            assert!(
                0 <= reserved && reserved <= on_hand && confirmed >= 0,
                "model broke"
            );
        }
        Some(answer)
    }
}

fn code(answer: &Result<Outcome, stockledger::domain::Rejection>) -> String {
    match answer {
        Err(r) => r.code().as_str().to_owned(),
        Ok(o) => {
            let base = match o {
                Outcome::Received { .. } => "RECEIVED",
                Outcome::Adjusted { .. } => "ADJUSTED",
                Outcome::Transferred { .. } => "TRANSFERRED",
                Outcome::Counted { .. } => "COUNTED",
                Outcome::LimitSet { .. } => "LIMIT_SET",
                Outcome::ReorderPointSet { .. } => "REORDER_POINT_SET",
                Outcome::Reservation { view, .. } => view.state.as_str(),
                Outcome::Expected { view, .. } => view.state.as_str(),
                Outcome::NotDue { .. } => "NOT_DUE",
            };
            if o.replayed() {
                format!("{base}+replay")
            } else {
                base.to_owned()
            }
        }
    }
}

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + seconds, 0).unwrap()
}

fn core_figures(state: &LedgerState) -> [(i64, i64, i64); 2] {
    let mut out = [(0, 0, 0); 2];
    for (item, b) in &state.balances {
        let i = SKUS.iter().position(|s| *s == item.sku.as_str()).unwrap();
        out[i] = (b.on_hand, b.reserved, b.confirmed);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The pure core and the model agree on every answer and every figure.
    #[test]
    fn the_core_agrees_with_the_model(ops in prop::collection::vec(op(true), 1..40)) {
        let mut model = Model::default();
        let mut state = LedgerState::default();
        for (i, o) in ops.iter().enumerate() {
            let expected = model.run(o);
            let Some(cmd) = to_command(o) else { continue };
            let now = at(model.now);
            let id = uuid::Uuid::new_v4();
            let answer = decide(&state, &cmd, id, now).map(|d| {
                apply(&mut state, &d, id, now);
                d.outcome
            });
            prop_assert_eq!(Some(code(&answer)), expected, "step {}: {:?}", i, o);
            prop_assert_eq!(core_figures(&state), model.figures, "after step {}", i);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The store over a real database agrees with the model too (no time
    /// passes: the database's clock is not ours to set, so nothing expires).
    #[test]
    fn the_store_agrees_with_the_model(ops in prop::collection::vec(op(false), 1..30)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let db = common::TestDb::with_pool_size(2).await;
            let mut model = Model::default();
            for (i, o) in ops.iter().enumerate() {
                let expected = model.run(o);
                let Some(cmd) = to_command(o) else { continue };
                let answer = db.run(cmd).await;
                prop_assert_eq!(Some(code(&answer)), expected, "step {}: {:?}", i, o);
            }
            for (i, sku) in SKUS.iter().enumerate() {
                prop_assert_eq!(db.figures(sku).await, model.figures[i], "{}", sku);
            }
            Ok(())
        })?;
    }

    /// Arbitrary JSON in any request shape: a typed error or a command, never
    /// a panic.
    #[test]
    fn arbitrary_json_gets_a_typed_answer(value in arbitrary_json()) {
        if let Ok(r) = serde_json::from_value::<ReserveRequest>(value.clone()) {
            check(r.validate());
        }
        if let Ok(r) = serde_json::from_value::<ReceiveRequest>(value.clone()) {
            check(r.validate());
        }
        if let Ok(r) = serde_json::from_value::<AdjustRequest>(value) {
            check(r.validate());
        }
    }
}

fn check(r: Result<Command, stockledger::domain::Rejection>) {
    if let Err(e) = r {
        assert_eq!(e.code().as_str(), "INVALID_ARGUMENT", "{e}");
    }
}

fn arbitrary_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,80}".prop_map(Value::from),
        prop_oneof![Just("apple"), Just("r1"), Just("o-1"), Just("")].prop_map(Value::from),
    ];
    let fields = prop_oneof![
        Just("reservation_id"),
        Just("order_id"),
        Just("lines"),
        Just("ttl_seconds"),
        Just("receipt_id"),
        Just("sku"),
        Just("location"),
        Just("quantity"),
        Just("adjustment_id"),
        Just("delta"),
        Just("reason"),
        Just("other"),
    ];
    leaf.prop_recursive(3, 32, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec((fields.clone(), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}
