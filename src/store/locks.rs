//! Every advisory lock the ledger takes, named in one place.
//!
//! PostgreSQL has one space of advisory lock keys per database, shared by
//! every process on it. Each lock here is a text name in a namespace of its
//! own (a prefix no other namespace and no stream name starts with), hashed
//! by the database (`hashtextextended(name, 0)`), so that one kind of lock can
//! never stand in another's way. The names are part of the deployed system:
//! processes of two releases running side by side during an upgrade must
//! take the same lock for the same thing, so a name is never changed.

use crate::domain::{Item, OrderId, StreamId};

/// The migration lock: a fixed key, not a hashed name, since the first
/// release took it that way ("stockledger" in ASCII, truncated).
pub const MIGRATION_LOCK_KEY: i64 = 0x73746f636b6c6564;

/// An advisory lock, by what it guards.
#[derive(Clone, Copy, Debug)]
pub enum Lock<'a> {
    /// One command transaction at a time per stream (the unique
    /// `(stream, seq)` key stays the backstop). Its name is the stream's:
    /// stream names carry the prefixes of `domain::stream`, which no
    /// namespace below uses.
    Stream(&'a StreamId),
    /// One command transaction at a time per order (a reservation's order
    /// may be named by one reservation only).
    Order(&'a OrderId),
    /// Held while an item's first balance row may be created.
    Item(&'a Item),
    /// The one projection runner of a read model (session lock).
    ProjectionRunner(&'a str),
    /// The one rebuild of a read model at a time (session lock).
    Rebuild(&'a str),
    /// The one relay of a broker stream (session lock).
    Relay(&'a str),
    /// The one sealer of the database (session lock).
    Sealer,
    /// The one `archive --detach` of the database (session lock).
    Detach,
}

impl Lock<'_> {
    /// The lock's name, hashed by the database into its key.
    pub fn name(&self) -> String {
        match self {
            Lock::Stream(stream) => stream.to_string(),
            Lock::Order(order) => format!("order-lock:{order}"),
            Lock::Item(item) => format!("item-lock:{item}"),
            Lock::ProjectionRunner(model) => format!("projection:{model}"),
            Lock::Rebuild(model) => format!("rebuild:{model}"),
            Lock::Relay(stream) => format!("relay:{stream}"),
            Lock::Sealer => "stockledger:sealer".to_owned(),
            Lock::Detach => "stockledger:detach".to_owned(),
        }
    }
}

/// Tries the session lock named `$1`; true if this session holds it now.
pub const TRY_SESSION_LOCK: &str = "SELECT pg_try_advisory_lock(hashtextextended($1, 0))";

/// Tries every session lock named in `$1`; true only if all were taken (the
/// caller gives back the ones it got when not).
pub const TRY_SESSION_LOCKS: &str =
    "SELECT bool_and(pg_try_advisory_lock(hashtextextended(k, 0))) FROM unnest($1::text[]) AS k";

/// Takes the transaction locks named in `$1`, waiting, in the order of
/// their keys: every command transaction takes its locks in this one order,
/// so two of them cannot deadlock on these locks.
pub const TRANSACTION_LOCKS_IN_ORDER: &str = "SELECT pg_advisory_xact_lock(h) FROM (
     SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest($1::text[]) AS k ORDER BY 1
 ) AS sorted";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Location, ReceiptId, Sku, StreamKind};

    /// No two kinds of lock share a namespace, and no namespace is a stream
    /// prefix: one kind of lock can never take another's.
    #[test]
    fn namespaces_do_not_overlap() {
        let order = OrderId::parse("order_id", "o1").expect("valid");
        let item = Item {
            sku: Sku::parse("sku", "s1").expect("valid"),
            location: Location::parse_or_default("location", None).expect("valid"),
        };
        let namespaced = [
            Lock::Order(&order).name(),
            Lock::Item(&item).name(),
            Lock::ProjectionRunner("m").name(),
            Lock::Rebuild("m").name(),
            Lock::Relay("m").name(),
            Lock::Sealer.name(),
        ];
        let namespace = |n: &str| format!("{}:", n.split(':').next().unwrap_or_default());
        let namespaces: std::collections::BTreeSet<String> =
            namespaced.iter().map(|n| namespace(n)).collect();
        assert_eq!(namespaces.len(), namespaced.len(), "{namespaced:?}");
        for kind in StreamKind::ALL {
            assert!(!namespaces.contains(kind.prefix()), "{}", kind.prefix());
        }
        let stream = StreamId::Receipt(ReceiptId::parse("receipt_id", "r1").expect("valid"));
        assert!(!namespaces.contains(&namespace(&Lock::Stream(&stream).name())));
    }
}
