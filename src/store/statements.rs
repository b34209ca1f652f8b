//! Every statement of a command transaction, prepared before the transaction
//! begins (and cached per connection after the first time). That is what
//! makes pipelining safe: a statement that still had to be prepared would
//! cost a round trip of its own in the middle of a pipeline, and the requests
//! after it (a COMMIT among them) would reach the server first.

use deadpool_postgres::ClientWrapper as Client;
use tokio_postgres::Statement;

use crate::domain::event::opens_reservation_sql;
use crate::store::error::Failure;
use crate::store::locks::TRANSACTION_LOCKS_IN_ORDER;
use crate::store::rows::EVENT_COLUMNS;
use crate::store::write_sql::{
    APPEND, INSERT_BALANCES, SET_BACKLOGS, SET_SETTINGS, UPDATE_BALANCES,
};

pub(crate) struct Statements {
    /// This backend and its transaction's start: who to end if we lose it.
    pub who: Statement,
    /// Transaction-scoped advisory locks on a sorted set of keys.
    pub lock: Statement,
    /// The events of a set of streams.
    pub read: Statement,
    /// The reservations that hold a set of orders.
    pub owners: Statement,
    /// Which of a set of streams are archived (`archived_streams`).
    pub archived: Statement,
    /// The balance rows of a set of items, locked in (location, sku) order.
    pub rows: Statement,
    /// The decision's clock, the transaction id and the server incarnation.
    pub clock: Statement,
    pub append: Statement,
    pub update_balances: Statement,
    pub insert_balances: Statement,
    pub set_settings: Statement,
    pub set_backlogs: Statement,
}

impl Statements {
    /// Prepared side by side: one round trip the first time on a connection,
    /// none after.
    pub(crate) async fn prepare(client: &Client) -> Result<Statements, Failure> {
        // One index probe per name, whatever the planner's statistics say:
        // as `stream = ANY($1)`, a batch of a hundred new streams on a young
        // table (no statistics yet) was planned as a sequential scan of the
        // whole log, one per batch (docs/benchmarks.md, issue 10). `OFFSET 0`
        // keeps the planner from flattening the lateral lookup into a join.
        //
        // A stream open when older partitions left the database has its
        // early events in `carried_events` (schema 0022); while a detach is
        // under way they are in both, and `load.rs` keeps one of each step.
        let read = format!(
            "SELECT e.* FROM unnest($1::text[]) AS s(name)
             CROSS JOIN LATERAL (
                 SELECT {EVENT_COLUMNS} FROM events WHERE stream = s.name OFFSET 0
             ) AS e
             UNION ALL
             SELECT {EVENT_COLUMNS} FROM carried_events WHERE stream = ANY($1::text[])
             ORDER BY stream, seq"
        );
        let (who, lock, read, owners, archived, rows, clock) = tokio::try_join!(
            client.prepare_cached("SELECT pg_backend_pid(), now()"),
            client.prepare_cached(TRANSACTION_LOCKS_IN_ORDER),
            client.prepare_cached(&read),
            // An order stays held by a reservation whose events left the
            // database: carried, or archived in the directory.
            client.prepare_cached(concat!(
                "SELECT e.order_id, e.stream FROM unnest($1::text[]) AS o(id)
                 CROSS JOIN LATERAL (SELECT order_id, stream FROM events
                                     WHERE ",
                opens_reservation_sql!(),
                " AND order_id = o.id
                                     OFFSET 0) AS e
                 UNION ALL
                 SELECT order_id, stream FROM carried_events
                  WHERE ",
                opens_reservation_sql!(),
                " AND order_id = ANY($1::text[])
                 UNION ALL
                 SELECT order_id, stream FROM archived_streams WHERE order_id = ANY($1::text[])",
            )),
            client.prepare_cached(
                "SELECT stream, last_seq, last_position FROM archived_streams
                  WHERE stream = ANY($1::text[])",
            ),
            client.prepare_cached(
                "SELECT b.sku, b.location, b.on_hand, b.reserved, b.confirmed, b.max_per_order, b.reorder_point, b.alerted_low,
                        b.backordered, b.backlog
                 FROM item_balances AS b
                 JOIN unnest($1::text[], $2::text[]) AS u(sku, location) USING (sku, location)
                 ORDER BY b.location, b.sku
                 FOR UPDATE OF b",
            ),
            client.prepare_cached(
                "SELECT clock_timestamp(), pg_current_xact_id()::text::bigint, stockledger_incarnation()",
            ),
        )?;
        let (append, update_balances, insert_balances, set_settings, set_backlogs) = tokio::try_join!(
            client.prepare_cached(APPEND),
            client.prepare_cached(UPDATE_BALANCES),
            client.prepare_cached(INSERT_BALANCES),
            client.prepare_cached(SET_SETTINGS),
            client.prepare_cached(SET_BACKLOGS),
        )?;
        Ok(Statements {
            who,
            lock,
            read,
            owners,
            archived,
            rows,
            clock,
            append,
            update_balances,
            insert_balances,
            set_settings,
            set_backlogs,
        })
    }
}
