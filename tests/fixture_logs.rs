//! Logs written by earlier releases, kept as they served them
//! (`tests/fixtures/*.events.json`, `stockledger events --json`) with the
//! digest they were sealed under (`*.digest.json`). They never change: each
//! holds the shapes its release wrote (docs/events.md), and this release
//! must go on reading, folding and proving every one of them.
//!
//! For every event of every fixture: it decodes in the current shape (from
//! its JSON and from its row), shows again exactly as it was served, and
//! hashes to the leaf it was sealed with; each stream folds by the domain's
//! strict rules and no balance goes below zero; the chain of the leaves
//! ends at the digest's chain head; and the proof the release made of a
//! reservation (`*.proof.json`) holds against its digest.

use std::collections::{BTreeMap, HashMap};
use stockledger::domain::event::ReservationCreated;

use serde_json::Value;
use stockledger::domain::{Balance, Event, Expectation, RecordedEvent, Reservation, StreamId};
use stockledger::seal::{self, chain, sealer, Digest};
use stockledger::store::log_row;

/// Every fixture: its name and the shape versions it holds, by type, beyond 1.
const FIXTURES: &[(&str, &[(&str, i64)])] = &[
    // The release before event versions (schema 19): every type at version 1.
    ("release-c69c825", &[]),
    // The release that brought them: reservations at version 2.
    ("release-schema-20", &[("ReservationCreated", 2)]),
];

fn fixture(name: &str) -> (Vec<Value>, Digest) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let read = |file: String| std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
    let page: Value = serde_json::from_str(&read(format!("{name}.events.json"))).unwrap();
    let digest = Digest::parse(&read(format!("{name}.digest.json"))).unwrap();
    (page["events"].as_array().unwrap().clone(), digest)
}

/// The event `json` serves, read as this release reads it.
fn recorded(json: &Value) -> RecordedEvent {
    stockledger::store::read::event_from_json(json, 0).unwrap_or_else(|e| panic!("{json}: {e}"))
}

#[test]
fn every_fixture_decodes_shows_and_hashes_as_it_was_written() {
    for (name, versions) in FIXTURES {
        let (events, digest) = fixture(name);
        assert!(!events.is_empty(), "{name}");
        let mut chain_head = chain::ZERO;
        let mut seen: BTreeMap<(String, i64), usize> = BTreeMap::new();
        let mut holds = std::collections::BTreeSet::new();
        for json in &events {
            let e = recorded(json);
            if let Event::ReservationCreated(ReservationCreated { ttl_seconds, .. }) = e.event {
                holds.insert(ttl_seconds);
            }
            let version = i64::from(e.version);
            *seen
                .entry((e.event.type_name().into(), version))
                .or_default() += 1;
            // Shown again exactly as it was served: nothing added or lost.
            assert_eq!(e.written_data(), json["data"], "{name}: {json}");
            // The row this release would read it from decodes to the same.
            let row = log_row::encode_in(&e.event, e.version);
            assert_eq!(log_row::decode_row(&row, &e), Ok(e.event.clone()), "{json}");
            // Its leaf from the served form and from the decoded event agree.
            let served = chain::leaf(&chain::canonical_event(json).unwrap());
            assert_eq!(sealer::leaf_of(&e).unwrap(), served, "{name}: {json}");
            chain_head = chain::link(&chain_head, &served);
        }
        assert_eq!(chain::hex(&chain_head), digest.chain_head, "{name}");
        // The holds `write.sh` gave (the default, `--ttl 600`, `--ttl 1`),
        // said by version 2 and derived for version 1 alike.
        assert_eq!(
            holds.into_iter().collect::<Vec<_>>(),
            [1, 600, 900],
            "{name}"
        );
        assert_eq!(events.len() as i64, digest.last_seq, "{name}: all sealed");
        // Every type written, each in the versions the fixture says.
        for t in stockledger::domain::EventType::ALL {
            let want = versions
                .iter()
                .find(|(n, _)| *n == t.as_str())
                .map_or(1, |(_, v)| *v);
            let have: Vec<i64> = seen
                .keys()
                .filter(|(n, _)| n == t.as_str())
                .map(|(_, v)| *v)
                .collect();
            assert_eq!(have, [want], "{name}: {}", t.as_str());
        }
    }
}

#[test]
fn every_fixtures_proof_holds_against_its_digest() {
    for (name, _) in FIXTURES {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        let proof = std::fs::read_to_string(format!("{dir}/{name}.proof.json")).unwrap();
        let proof: seal::Proof = serde_json::from_str(&proof).unwrap();
        let (_, digest) = fixture(name);
        assert_eq!(proof.event["type"], "ReservationCreated", "{name}");
        seal::proof::check(&proof, &digest).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Its event reads as this release reads it.
        let e = recorded(&proof.event);
        assert!(matches!(
            e.event,
            Event::ReservationCreated(ReservationCreated {
                ttl_seconds: 900,
                ..
            })
        ));
    }
}

#[test]
fn every_fixture_folds_by_the_domains_rules() {
    for (name, _) in FIXTURES {
        let (events, _) = fixture(name);
        let mut reservations: HashMap<StreamId, Reservation> = HashMap::new();
        let mut expected: HashMap<StreamId, Expectation> = HashMap::new();
        let mut balances: BTreeMap<String, Balance> = BTreeMap::new();
        for e in events.iter().map(recorded) {
            let (cmd, at) = (e.metadata.command_id, e.recorded_at);
            match &e.stream {
                StreamId::Reservation(id) => {
                    let before = reservations.remove(&e.stream);
                    let r = Reservation::fold(before, id, e.seq, &e.event, cmd, at);
                    let r = r.unwrap_or_else(|v| panic!("{name}: {}: {v:?}", e.position));
                    reservations.insert(e.stream.clone(), r);
                }
                StreamId::Expected(id) => {
                    let before = expected.remove(&e.stream);
                    let fp = e.metadata.fingerprint.as_deref();
                    let x = Expectation::fold(before, id, e.seq, &e.event, cmd, fp);
                    let x = x.unwrap_or_else(|v| panic!("{name}: {}: {v:?}", e.position));
                    expected.insert(e.stream.clone(), x);
                }
                _ => {}
            }
            e.event.for_each_effect(|item, delta| {
                let b = balances.entry(item.to_string()).or_default();
                b.apply(delta);
                assert!(b.is_valid(), "{name}: {}: {item}: {b:?}", e.position);
            });
        }
        assert!(!reservations.is_empty() && !expected.is_empty(), "{name}");
    }
}
