//! Request fingerprints: SHA-256 over a canonical encoding of what a command
//! asks for. Two requests with the same id and the same fingerprint are the same
//! request (a retry); the same id with another fingerprint is a conflict.
//!
//! Which fields make up a command's fingerprint is its own module's choice
//! (`command/*.rs`); the encoding is a kind tag followed by length-prefixed fields, so no choice
//! of field values can make two different requests encode alike. The time to
//! live is deliberately left out: a retry keeps the original expiry.

use sha2::{Digest, Sha256};

use crate::domain::ids::Item;

/// A canonical encoding being hashed; each command module feeds it its
/// request's fields (`command/*.rs`).
pub(crate) struct Canonical(Sha256);

impl Canonical {
    pub(crate) fn new(kind: &str) -> Self {
        let mut c = Canonical(Sha256::new());
        c.field(kind.as_bytes());
        c
    }

    pub(crate) fn field(&mut self, bytes: &[u8]) -> &mut Self {
        // Lengths are bounded by the id limits, far below u32::MAX.
        self.0.update((bytes.len() as u32).to_be_bytes());
        self.0.update(bytes);
        self
    }

    pub(crate) fn item(&mut self, item: &Item) -> &mut Self {
        self.field(item.location.as_str().as_bytes())
            .field(item.sku.as_str().as_bytes())
    }

    /// A number that may be absent: a marker byte, then the number if any.
    pub(crate) fn optional(&mut self, n: Option<u32>) -> &mut Self {
        match n {
            Some(n) => self.field(&[1]).field(&n.to_be_bytes()),
            None => self.field(&[0]),
        }
    }

    pub(crate) fn finish(self) -> String {
        hex_bytes(&self.0.finalize())
    }
}

/// Lower-case hex SHA-256 of `bytes`; also used for migration checksums and key hashes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex_bytes(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`.
pub fn hex_bytes(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 0xf) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::domain::command::{Line, Reserve};
    use crate::domain::ids::{Item, Location, OrderId, Sku};

    fn line(sku: &str, q: u32) -> Line {
        Line {
            item: Item {
                sku: Sku::parse("sku", sku).unwrap(),
                location: Location::parse("location", "default").unwrap(),
            },
            quantity: q,
        }
    }

    #[test]
    fn fingerprint_is_stable_and_sensitive() {
        let order = OrderId::parse("order_id", "o1").unwrap();
        let a = Reserve::fingerprint_of(&order, &[line("a", 1), line("b", 2)], None);
        assert_eq!(a.len(), 64);
        assert_eq!(
            a,
            Reserve::fingerprint_of(&order, &[line("a", 1), line("b", 2)], None)
        );
        assert_ne!(
            a,
            Reserve::fingerprint_of(&order, &[line("a", 1), line("b", 3)], None)
        );
        assert_ne!(a, Reserve::fingerprint_of(&order, &[line("a", 1)], None));
        let other = OrderId::parse("order_id", "o2").unwrap();
        assert_ne!(
            a,
            Reserve::fingerprint_of(&other, &[line("a", 1), line("b", 2)], None)
        );
        // Field boundaries matter: "ab"+"c" is not "a"+"bc".
        assert_ne!(
            Reserve::fingerprint_of(&order, &[line("ab", 1)], None),
            Reserve::fingerprint_of(&order, &[line("a", 1)], None)
        );
    }
}
