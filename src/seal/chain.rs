//! The hashes of the tamper-evidence chain, as docs/auditing.md specifies
//! them, so that anyone can re-implement the check. Pure functions: no I/O,
//! no clock.
//!
//! - leaf = SHA-256(0x00 ‖ canonical JSON of the event as it was written:
//!   the seven `LEAF_FIELDS`, and `version` when it is not 1)
//! - chain: c₀ = 32 zero bytes, cᵢ = SHA-256(0x02 ‖ cᵢ₋₁ ‖ leafᵢ)
//! - Merkle root of a block's leaves: RFC 6962's Merkle Tree Hash (interior
//!   nodes SHA-256(0x01 ‖ left ‖ right), the split at the largest power of
//!   two below the count)
//! - seal, version 2 (every seal since schema 12): s₀ = 32 zero bytes,
//!   s_b = SHA-256(0x04 ‖ s_b₋₁ ‖ be64(b) ‖ be64(first) ‖ be64(last) ‖
//!   root_b ‖ c_last ‖ be64(last_tx_id) ‖ be64(last_position) ‖
//!   be64(sealed_at in microseconds since 1970))
//! - seal, version 1 (the seals made before schema 12, which do not cover
//!   the sealer's cursor and time): s_b = SHA-256(0x03 ‖ s_b₋₁ ‖ be64(b) ‖
//!   be64(first) ‖ be64(last) ‖ root_b ‖ c_last)
//!
//! The one-byte prefixes keep the kinds of hash apart: no leaf can pass for
//! a node, a chain link or a seal, and no seal of one version for one of the
//! other.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// Where the chain and the seal chain start.
pub const ZERO: Hash = [0; 32];

const LEAF: u8 = 0x00;
const NODE: u8 = 0x01;
const LINK: u8 = 0x02;
const SEAL_V1: u8 = 0x03;
const SEAL_V2: u8 = 0x04;

/// The fields of an event that its leaf covers, as `GET /v1/events` serves
/// them. An event also has `version`, the version of its type's shape it
/// was written in (`domain::shape`): the leaf covers it too when it is not
/// 1, so every event written before versions existed hashes as it did.
pub const LEAF_FIELDS: [&str; 7] = [
    "data",
    "metadata",
    "position",
    "recorded_at",
    "seq",
    "stream",
    "type",
];

/// Why an event (from a proof file, say) cannot be encoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EncodeError {
    #[error("the event has no field `{0}`")]
    Missing(&'static str),
    #[error("`recorded_at` is not an RFC 3339 time")]
    BadTime,
    #[error("a number in the event is not a whole number")]
    NotWhole,
    #[error("`version` is not a whole number from 1")]
    BadVersion,
}

/// The field that says an event's shape version, and the version a leaf
/// leaves unsaid.
const VERSION: &str = "version";
const FIRST_VERSION: u16 = 1;

/// The canonical encoding of `event` (an object with at least
/// `LEAF_FIELDS`): those fields alone, `recorded_at` rewritten as UTC with
/// six fractional digits, as canonical JSON (`write_canonical`).
pub fn canonical_event(event: &Value) -> Result<Vec<u8>, EncodeError> {
    let mut kept = Map::new();
    for field in LEAF_FIELDS {
        let v = event.get(field).ok_or(EncodeError::Missing(field))?;
        kept.insert(field.to_owned(), v.clone());
    }
    if let Some(v) = event.get(VERSION) {
        let version = v
            .as_u64()
            .filter(|v| *v >= 1)
            .ok_or(EncodeError::BadVersion)?;
        if version != u64::from(FIRST_VERSION) {
            kept.insert(VERSION.to_owned(), v.clone());
        }
    }
    let time = kept["recorded_at"].as_str().ok_or(EncodeError::BadTime)?;
    let time = DateTime::parse_from_rfc3339(time).map_err(|_| EncodeError::BadTime)?;
    kept["recorded_at"] = Value::String(micros_utc(time.with_timezone(&Utc)));
    let mut out = Vec::with_capacity(256);
    write_canonical(&Value::Object(kept), &mut out)?;
    Ok(out)
}

/// The fields of an event that its leaf covers, as the log gives them.
pub struct EventFields<'a> {
    pub position: i64,
    pub stream: &'a str,
    pub seq: u32,
    pub event_type: &'a str,
    pub version: u16,
    pub data: &'a Value,
    pub metadata: &'a Value,
    pub recorded_at: DateTime<Utc>,
}

/// `canonical_event` of the event `fields` describe, written straight from
/// them (no object to build and sort: the keys are written in their sorted
/// order). The same bytes, which a test holds it to.
pub fn canonical_fields(f: &EventFields<'_>, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    out.extend_from_slice(b"{\"data\":");
    write_canonical(f.data, out)?;
    out.extend_from_slice(b",\"metadata\":");
    write_canonical(f.metadata, out)?;
    out.extend_from_slice(b",\"position\":");
    write_integer(i128::from(f.position), out);
    out.extend_from_slice(b",\"recorded_at\":");
    write_string(&micros_utc(f.recorded_at), out);
    out.extend_from_slice(b",\"seq\":");
    write_integer(i128::from(f.seq), out);
    out.extend_from_slice(b",\"stream\":");
    write_string(f.stream, out);
    out.extend_from_slice(b",\"type\":");
    write_string(f.event_type, out);
    if f.version != FIRST_VERSION {
        out.extend_from_slice(b",\"version\":");
        write_integer(i128::from(f.version), out);
    }
    out.push(b'}');
    Ok(())
}

/// A time as the canonical encoding writes it: `2026-12-01T19:44:21.875780Z`.
pub fn micros_utc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Canonical JSON (RFC 8785 for the values an event holds): no white space,
/// object keys sorted by their UTF-16 code units, strings escaped as
/// RFC 8785 says (`"`, `\`, and control characters; `\b \t \n \f \r` short,
/// the rest `\u00xx`), whole numbers in decimal. Fractions are refused: no
/// event holds one.
pub fn write_canonical(v: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                write_integer(i128::from(i), out);
            } else if let Some(u) = n.as_u64() {
                write_integer(i128::from(u), out);
            } else {
                return Err(EncodeError::NotWhole);
            }
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            // serde_json's map is usually ordered by bytes already, which is
            // the canonical order for the keys an event has: then no sort.
            let in_order = map
                .keys()
                .zip(map.keys().skip(1))
                .all(|(a, b)| key_order(a, b).is_lt());
            let mut sorted: Vec<(&String, &Value)>;
            let entries: &mut dyn Iterator<Item = (&String, &Value)> = if in_order {
                &mut map.iter()
            } else {
                sorted = map.iter().collect();
                sorted.sort_by(|a, b| key_order(a.0, b.0));
                &mut sorted.into_iter()
            };
            for (i, (k, v)) in entries.enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(k, out);
                out.push(b':');
                write_canonical(v, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// RFC 8785's order of keys: by UTF-16 code units (for ASCII, by bytes).
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.as_bytes().cmp(b.as_bytes())
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

/// A whole number in decimal, without allocating.
fn write_integer(n: i128, out: &mut Vec<u8>) {
    let mut digits = [0u8; 40];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut plain = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0..=0x1f => &[],
            _ => continue,
        };
        // Everything before this byte goes out as it is (UTF-8 included:
        // the bytes that need escaping are all ASCII).
        out.extend_from_slice(&bytes[plain..i]);
        if escape.is_empty() {
            out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
        } else {
            out.extend_from_slice(escape);
        }
        plain = i + 1;
    }
    out.extend_from_slice(&bytes[plain..]);
    out.push(b'"');
}

/// The leaf hash of an event's canonical encoding.
pub fn leaf(canonical: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([LEAF]);
    h.update(canonical);
    h.finalize().into()
}

/// The chain hash after `previous`, for an event with leaf hash `leaf`.
pub fn link(previous: &Hash, leaf: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([LINK]);
    h.update(previous);
    h.update(leaf);
    h.finalize().into()
}

fn node(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([NODE]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The largest power of two below `n` (n ≥ 2).
fn split(n: usize) -> usize {
    debug_assert!(n >= 2);
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// RFC 6962's Merkle Tree Hash of `leaves` (already leaf hashes). A block
/// is never empty; the empty tree's hash is SHA-256 of nothing, as there.
pub fn merkle_root(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node(&merkle_root(&leaves[..k]), &merkle_root(&leaves[k..]))
        }
    }
}

/// RFC 6962's audit path of leaf `m` among `leaves`: the siblings from the
/// leaf up to the root.
pub fn merkle_path(m: usize, leaves: &[Hash]) -> Vec<Hash> {
    let n = leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let k = split(n);
    let (mut path, sibling) = if m < k {
        (merkle_path(m, &leaves[..k]), merkle_root(&leaves[k..]))
    } else {
        (merkle_path(m - k, &leaves[k..]), merkle_root(&leaves[..k]))
    };
    path.push(sibling);
    path
}

/// The root that audit path `path` leads to from `leaf`, leaf `m` of `n`;
/// `None` when the path's length does not fit the tree.
pub fn root_from_path(m: usize, n: usize, leaf: &Hash, path: &[Hash]) -> Option<Hash> {
    if m >= n {
        return None;
    }
    if n == 1 {
        return path.is_empty().then_some(*leaf);
    }
    let k = split(n);
    let (sibling, rest) = path.split_last()?;
    Some(if m < k {
        node(&root_from_path(m, k, leaf, rest)?, sibling)
    } else {
        node(sibling, &root_from_path(m - k, n - k, leaf, rest)?)
    })
}

/// How a seal's hash is computed (docs/auditing.md, "The hashes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "i16", into = "i16")]
pub enum SealVersion {
    /// The seals made before schema 12: the sealer's cursor and time are
    /// stored beside the seal but not under its hash.
    V1,
    /// Every field of the seal row under its hash.
    V2,
}

impl SealVersion {
    /// What the sealer writes now.
    pub const CURRENT: SealVersion = SealVersion::V2;
}

impl TryFrom<i16> for SealVersion {
    type Error = String;
    fn try_from(v: i16) -> Result<Self, String> {
        match v {
            1 => Ok(SealVersion::V1),
            2 => Ok(SealVersion::V2),
            _ => Err(format!("no seal version {v}")),
        }
    }
}

impl From<SealVersion> for i16 {
    fn from(v: SealVersion) -> i16 {
        match v {
            SealVersion::V1 => 1,
            SealVersion::V2 => 2,
        }
    }
}

/// What a seal covers, and the seal hash before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealFields {
    pub version: SealVersion,
    pub block: i64,
    pub first_seq: i64,
    pub last_seq: i64,
    pub merkle_root: Hash,
    pub chain_head: Hash,
    /// The block's last event in safe commit order: where the next block
    /// starts reading.
    pub last_tx_id: i64,
    pub last_position: i64,
    /// When the block was sealed (PostgreSQL's microseconds).
    pub sealed_at: DateTime<Utc>,
}

/// The seal hash of block `fields` after seal hash `previous`, as its
/// version computes it.
pub fn seal(previous: &Hash, fields: &SealFields) -> Hash {
    let mut h = Sha256::new();
    h.update([match fields.version {
        SealVersion::V1 => SEAL_V1,
        SealVersion::V2 => SEAL_V2,
    }]);
    h.update(previous);
    h.update(fields.block.to_be_bytes());
    h.update(fields.first_seq.to_be_bytes());
    h.update(fields.last_seq.to_be_bytes());
    h.update(fields.merkle_root);
    h.update(fields.chain_head);
    if fields.version == SealVersion::V2 {
        h.update(fields.last_tx_id.to_be_bytes());
        h.update(fields.last_position.to_be_bytes());
        h.update(fields.sealed_at.timestamp_micros().to_be_bytes());
    }
    h.finalize().into()
}

/// Lower-case hex.
pub fn hex(h: &Hash) -> String {
    crate::domain::fingerprint::hex_bytes(h)
}

/// A hash from 64 hex digits.
pub fn from_hex(s: &str) -> Option<Hash> {
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A hash from a database column (`bytea` of 32 bytes, by the schema's CHECK).
pub fn from_bytes(b: &[u8]) -> Option<Hash> {
    b.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(quantity: i64) -> Value {
        json!({
            "position": 7, "stream": "receipt:IN-1", "seq": 1, "type": "StockReceived",
            "data": {"sku": "apple", "location": "default", "quantity": quantity},
            "metadata": {"command_id": "00000000-0000-0000-0000-000000000000", "actor": "t"},
            "recorded_at": "2026-12-01T19:44:21.8757Z",
            "cursor": "1:7",
        })
    }

    #[test]
    fn the_canonical_encoding_sorts_keys_drops_extra_fields_and_fixes_the_time() {
        let bytes = canonical_event(&event(5)).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"data":{"location":"default","quantity":5,"sku":"apple"},"metadata":{"actor":"t","command_id":"00000000-0000-0000-0000-000000000000"},"position":7,"recorded_at":"2026-12-01T19:44:21.875700Z","seq":1,"stream":"receipt:IN-1","type":"StockReceived"}"#
        );
        // The same moment written in another zone encodes alike.
        let mut other = event(5);
        other["recorded_at"] = json!("2026-12-01T20:44:21.875700+01:00");
        assert_eq!(canonical_event(&other), canonical_event(&event(5)));
        let mut missing = event(5);
        missing.as_object_mut().unwrap().remove("seq");
        assert_eq!(canonical_event(&missing), Err(EncodeError::Missing("seq")));
    }

    #[test]
    fn the_fields_encode_as_the_served_event_does() {
        let served = event(5);
        let fields = EventFields {
            position: 7,
            stream: "receipt:IN-1",
            seq: 1,
            event_type: "StockReceived",
            version: 1,
            data: &served["data"],
            metadata: &served["metadata"],
            recorded_at: DateTime::parse_from_rfc3339("2026-12-01T19:44:21.8757Z")
                .unwrap()
                .with_timezone(&Utc),
        };
        let mut direct = Vec::new();
        canonical_fields(&fields, &mut direct).unwrap();
        assert_eq!(direct, canonical_event(&served).unwrap());
        // Version 1 is left unsaid, so an event served with it hashes as it
        // did before versions; any other version is covered, both ways.
        let mut v1 = served.clone();
        v1["version"] = json!(1);
        assert_eq!(canonical_event(&v1).unwrap(), direct);
        let mut v2 = served.clone();
        v2["version"] = json!(2);
        let (mut direct_v2, f2) = (
            Vec::new(),
            EventFields {
                version: 2,
                ..fields
            },
        );
        canonical_fields(&f2, &mut direct_v2).unwrap();
        assert_eq!(canonical_event(&v2).unwrap(), direct_v2);
        assert_ne!(direct_v2, direct);
        assert!(String::from_utf8(direct_v2)
            .unwrap()
            .ends_with(r#""version":2}"#));
        for bad in [json!(0), json!(-1), json!("2"), json!(1.5)] {
            v2["version"] = bad;
            assert_eq!(canonical_event(&v2), Err(EncodeError::BadVersion));
        }
    }

    #[test]
    fn strings_are_escaped_as_rfc_8785_says() {
        let mut out = Vec::new();
        write_canonical(&json!("a\"b\\c\n\u{01}é/\u{7f}\u{1f}x"), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"b\\\\c\\n\\u0001é/\u{7f}\\u001fx\""
        );
        let mut numbers = Vec::new();
        write_canonical(
            &json!([0, -12, 9007199254740993_u64, i64::MIN]),
            &mut numbers,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(numbers).unwrap(),
            "[0,-12,9007199254740993,-9223372036854775808]"
        );
        // Keys out of order are sorted (serde_json keeps them sorted, but a
        // map that preserves insertion order would not).
        let mut keys = Vec::new();
        write_canonical(&json!({"b": 1, "a": {"d": 2, "c": 3}}), &mut keys).unwrap();
        assert_eq!(
            String::from_utf8(keys).unwrap(),
            r#"{"a":{"c":3,"d":2},"b":1}"#
        );
        assert_eq!(
            write_canonical(&json!(1.5), &mut Vec::new()),
            Err(EncodeError::NotWhole)
        );
    }

    #[test]
    fn a_changed_quantity_changes_the_leaf_and_every_link_after_it() {
        let a = leaf(&canonical_event(&event(5)).unwrap());
        let b = leaf(&canonical_event(&event(6)).unwrap());
        assert_ne!(a, b);
        assert_ne!(link(&ZERO, &a), link(&ZERO, &b));
        assert_ne!(link(&ZERO, &a), a, "a link is not its leaf");
    }

    /// RFC 6962's own example tree has seven leaves; every audit path of
    /// every tree up to 40 leaves leads back to its root, and no other.
    #[test]
    fn every_audit_path_leads_to_the_root() {
        let leaves: Vec<Hash> = (0..40u8).map(|i| leaf(&[i])).collect();
        for n in 1..=leaves.len() {
            let tree = &leaves[..n];
            let root = merkle_root(tree);
            for m in 0..n {
                let path = merkle_path(m, tree);
                assert!(path.len() <= 6);
                assert_eq!(
                    root_from_path(m, n, &tree[m], &path),
                    Some(root),
                    "{m} of {n}"
                );
                let wrong = leaf(b"not in the tree");
                assert_ne!(root_from_path(m, n, &wrong, &path), Some(root));
                if n > 1 {
                    assert_ne!(root_from_path((m + 1) % n, n, &tree[m], &path), Some(root));
                }
            }
        }
        assert_eq!(merkle_root(&leaves[..1]), leaves[0]);
        assert_eq!(
            root_from_path(0, 2, &leaves[0], &[]),
            None,
            "too short a path"
        );
    }

    fn sealed_fields() -> SealFields {
        SealFields {
            version: SealVersion::V2,
            block: 1,
            first_seq: 1,
            last_seq: 4,
            merkle_root: leaf(b"r"),
            chain_head: leaf(b"c"),
            last_tx_id: 900,
            last_position: 12,
            sealed_at: DateTime::from_timestamp_micros(1_796_000_000_123_456).unwrap(),
        }
    }

    #[test]
    fn a_seal_covers_its_previous_seal_and_every_field() {
        let f = sealed_fields();
        let s = seal(&ZERO, &f);
        assert_ne!(seal(&leaf(b"x"), &f), s);
        let changes: [fn(&mut SealFields); 9] = [
            |f| f.last_seq += 1,
            |f| f.block += 1,
            |f| f.first_seq += 1,
            |f| f.merkle_root = leaf(b"q"),
            |f| f.chain_head = leaf(b"d"),
            |f| f.last_tx_id += 1,
            |f| f.last_position += 1,
            |f| f.sealed_at += chrono::Duration::microseconds(1),
            |f| f.version = SealVersion::V1,
        ];
        for change in changes {
            let mut other = f.clone();
            change(&mut other);
            assert_ne!(seal(&ZERO, &other), s, "{other:?}");
        }
        assert_eq!(from_hex(&hex(&s)), Some(s));
        assert_eq!(from_hex("zz"), None);
    }

    /// A version 1 seal, as made before schema 12, does not cover the
    /// sealer's cursor and time (that is what version 2 is for), and is
    /// computed as it always was.
    #[test]
    fn a_version_1_seal_is_computed_as_before() {
        let v1 = SealFields {
            version: SealVersion::V1,
            ..sealed_fields()
        };
        let mut moved = v1.clone();
        moved.last_tx_id += 1;
        moved.last_position += 1;
        moved.sealed_at += chrono::Duration::seconds(1);
        assert_eq!(seal(&ZERO, &moved), seal(&ZERO, &v1));
        let mut h = Sha256::new();
        h.update([0x03]);
        h.update(ZERO);
        for n in [1i64, 1, 4] {
            h.update(n.to_be_bytes());
        }
        h.update(leaf(b"r"));
        h.update(leaf(b"c"));
        assert_eq!(seal(&ZERO, &v1), <[u8; 32]>::from(h.finalize()));
    }
}
