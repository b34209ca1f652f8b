//! What the flash-sale benchmark sends: the stock each scenario starts with,
//! and command `n` of every caller in a run. A command depends only on the
//! run, the caller and `n` (its random choices are seeded from them), so a
//! run sends the same commands every time.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rand_distr::Zipf;
use stockledger::domain::{command, Command, LineRequest, ReserveRequest};
use stockledger_bench::fill::receipt;

use super::{Scenario, Via};

/// Items in the `uniform`, `zipf` and `mixed` scenarios.
pub const ITEMS: u64 = 10_000;
/// The flash sale: units on sale, and buyers (each tries once).
pub const FLASH_UNITS: i64 = 10_000;
pub const FLASH_BUYERS: u64 = 100_000;
/// Units every item starts with, and each top-up of the hot item: more than
/// any run can reserve.
const PLENTY: i64 = 1_000_000;
/// Top-ups of the hot item before each run.
const HOT_TOP_UPS: u64 = 5;
/// Exponent of the `zipf` scenario's law: item k is chosen in proportion to 1/k.
const ZIPF_EXPONENT: f64 = 1.0;
/// Mixed into the seed of each command's item choice.
const ITEM_SEED_SALT: u64 = 0x9e37_79b9;
/// The caller's share of the seed of a `mixed` item choice.
const MIXED_CALLER_SHIFT: u32 = 20;
/// The `mixed` scenario's pattern repeats every this many commands.
const MIXED_PERIOD: u64 = 10;

/// The receipts a scenario starts with, sent once before its runs.
pub fn initial_stock(scenario: Scenario) -> Vec<Command> {
    let stock = |prefix: &str, items: u64| {
        (0..items)
            .map(|i| receipt(format!("{prefix}-in-{i}"), format!("{prefix}-{i}"), PLENTY))
            .collect()
    };
    match scenario {
        Scenario::Hot => stock("hot", 1),
        Scenario::Uniform | Scenario::Zipf => stock(scenario.name(), ITEMS),
        Scenario::Mixed => stock("mixed-i", ITEMS),
        Scenario::Flash => Vec::new(),
    }
}

/// One run's commands: a scenario through one way in, at one number of callers.
pub struct Workload {
    scenario: Scenario,
    /// Prefix of the run's ids: `scenario-via-callers`.
    tag: String,
    /// The item on sale in a `flash` run (each run has its own).
    flash_item: String,
    zipf: Zipf<f64>,
}

impl Workload {
    pub fn new(scenario: Scenario, via: Via, callers: usize) -> Workload {
        Workload::tagged(
            scenario,
            format!("{}-{}-{callers}", scenario.name(), via.name()),
        )
    }

    /// A run whose ids start with `tag`: runs that must not replay each
    /// other's commands take different tags.
    pub fn tagged(scenario: Scenario, tag: String) -> Workload {
        Workload {
            scenario,
            flash_item: format!("flash-{tag}"),
            tag,
            zipf: Zipf::new(ITEMS as f64, ZIPF_EXPONENT).expect("a valid Zipf law"),
        }
    }

    pub fn scenario(&self) -> Scenario {
        self.scenario
    }

    pub fn flash_item(&self) -> &str {
        &self.flash_item
    }

    /// Receipts sent before the run: more hot units, so that no run can
    /// exhaust them; the flash sale's units.
    pub fn run_stock(&self) -> Vec<Command> {
        match self.scenario {
            Scenario::Hot => (0..HOT_TOP_UPS)
                .map(|k| receipt(format!("hot-more-{}-{k}", self.tag), "hot-0".into(), PLENTY))
                .collect(),
            Scenario::Flash => {
                let item = self.flash_item.clone();
                vec![receipt(format!("in-{item}"), item, FLASH_UNITS)]
            }
            _ => Vec::new(),
        }
    }

    /// Command `n` of `caller`.
    pub fn command(&self, caller: usize, n: u64) -> Command {
        let id = format!("{}-{caller}-{n}", self.tag);
        match self.scenario {
            Scenario::Hot => reserve(&id, "hot-0"),
            Scenario::Flash => reserve(&id, &self.flash_item),
            Scenario::Mixed => mixed(&self.tag, caller, n),
            Scenario::Uniform | Scenario::Zipf => reserve(&id, &self.item(caller, n)),
        }
    }

    /// The item command `n` of `caller` reserves in `uniform` and `zipf`.
    fn item(&self, caller: usize, n: u64) -> String {
        let seed = (caller as u64) << 32 ^ n ^ ITEM_SEED_SALT;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let i = match self.scenario {
            // Ranks 1..=ITEMS; item 0 is the most popular.
            Scenario::Zipf => (rng.sample(self.zipf) as u64).clamp(1, ITEMS) - 1,
            _ => rng.random_range(0..ITEMS),
        };
        format!("{}-{i}", self.scenario.name())
    }
}

/// The mixed workload: a ten-step pattern per caller covering reserve,
/// confirm, release, a duplicate and a release that overtakes its reserve.
fn mixed(prefix: &str, caller: usize, n: u64) -> Command {
    let id = |k: u64| format!("{prefix}-{caller}-{k}");
    let item = |k: u64| {
        let seed = k ^ (caller as u64) << MIXED_CALLER_SHIFT;
        let i = Xoshiro256PlusPlus::seed_from_u64(seed).random_range(0..ITEMS);
        // The items the scenario stocked (`stock("mixed-i", ...)`), whatever
        // the run's tag: until 2026-11-30 this named `{tag}-i-N`, which was
        // never stocked, so every reserve of the mixed runs was refused.
        format!("mixed-i-{i}")
    };
    let base = n - n % MIXED_PERIOD;
    match n % MIXED_PERIOD {
        0 | 2 | 4 | 8 => reserve(&id(n), &item(n)),
        1 | 9 => command::confirm(&id(n - 1)).expect("valid"),
        3 => command::release(&id(n - 1), None).expect("valid"),
        5 => reserve(&id(base + 4), &item(base + 4)),
        6 => command::release(&id(n), None).expect("valid"),
        _ => reserve(&id(base + 6), &item(base + 6)),
    }
}

/// A reservation of one unit of `sku`, without expiry.
fn reserve(id: &str, sku: &str) -> Command {
    ReserveRequest {
        reservation_id: id.to_owned(),
        order_id: format!("o-{id}"),
        lines: vec![LineRequest {
            sku: sku.to_owned(),
            location: None,
            quantity: 1,
        }],
        ttl_seconds: None,
        backorder: false,
        latest_arrival: None,
    }
    .validate()
    .expect("valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sku_of(cmd: &Command) -> String {
        match cmd {
            Command::Reserve(r) => r.lines[0].item.sku.to_string(),
            other => panic!("not a reservation: {}", other.kind()),
        }
    }

    #[test]
    fn a_command_depends_only_on_the_run_the_caller_and_n() {
        let a = Workload::new(Scenario::Uniform, Via::Library, 64);
        let b = Workload::new(Scenario::Uniform, Via::Library, 64);
        assert_eq!(sku_of(&a.command(3, 17)), sku_of(&b.command(3, 17)));
        let skus: std::collections::HashSet<String> =
            (0..50).map(|n| sku_of(&a.command(0, n))).collect();
        assert!(skus.len() > 40, "uniform spreads: {skus:?}");
    }

    #[test]
    fn zipf_picks_every_item_in_range_the_first_most_often() {
        let w = Workload::new(Scenario::Zipf, Via::Http, 16);
        let mut counts = vec![0u32; ITEMS as usize];
        for n in 0..20_000 {
            let sku = sku_of(&w.command(1, n));
            let i: usize = sku.strip_prefix("zipf-").unwrap().parse().unwrap();
            counts[i] += 1;
        }
        let most = counts.iter().max().unwrap();
        assert_eq!(counts[0], *most, "item 0 is the most popular");
        // With s = 1 over 10,000 items, item 0 takes about 1/H(10000) ≈ 10.2%.
        assert!((1600..2500).contains(&counts[0]), "{}", counts[0]);
    }
}
