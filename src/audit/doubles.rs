//! What the unique indexes cannot hold once the log is partitioned: a unique
//! index of PostgreSQL holds within one partition only, so a step of a stream
//! appended twice, or an order reserved by two streams, in two partitions is
//! refused by nothing but the command path's locks (docs/archive.md,
//! decision 2). The audit looks for both, in its snapshot, by the database's
//! own grouping (its memory, not the audit's, grows with the log); with one
//! partition attached the indexes hold and nothing is read.

use tokio_postgres::Client;

use crate::domain::event::opens_reservation_sql;
use crate::limits::MAX_REPORTED_DIFFERENCES;
use crate::read_model::Diffs;
use crate::store::StoreError;

/// Steps and orders found twice or more, the first `MAX_REPORTED_DIFFERENCES`
/// of each, and how many there are in all.
#[derive(Default)]
pub(crate) struct Doubles {
    /// (stream, seq, events at it)
    steps: Vec<(String, i32, i64)>,
    /// (order, its reservation streams in name order)
    orders: Vec<(String, Vec<String>)>,
    total: u64,
}

/// Reads the doubles in the snapshot `client` is in.
pub(crate) async fn load(client: &Client) -> Result<Doubles, StoreError> {
    let partitions: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass",
            &[],
        )
        .await?
        .get(0);
    if partitions <= 1 {
        return Ok(Doubles::default());
    }
    let limit = MAX_REPORTED_DIFFERENCES as i64;
    // Each query's last column counts every double, before the LIMIT.
    let steps = client
        .query(
            "SELECT stream, seq, count(*), count(*) OVER () FROM events
             GROUP BY stream, seq HAVING count(*) > 1 ORDER BY stream, seq LIMIT $1",
            &[&limit],
        )
        .await?;
    let orders = client
        .query(
            concat!(
                "SELECT order_id, array_agg(stream ORDER BY stream), count(*) OVER () FROM events
                 WHERE ",
                opens_reservation_sql!(),
                " GROUP BY order_id HAVING count(*) > 1 ORDER BY order_id LIMIT $1",
            ),
            &[&limit],
        )
        .await?;
    let all = |rows: &[tokio_postgres::Row], column| {
        rows.first().map_or(0, |r| r.get::<_, i64>(column) as u64)
    };
    Ok(Doubles {
        total: all(&steps, 3) + all(&orders, 2),
        steps: steps
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect(),
        orders: orders.iter().map(|r| (r.get(0), r.get(1))).collect(),
    })
}

impl Doubles {
    /// Each double as a difference; all of them counted.
    pub(crate) fn report(self, diffs: &mut Diffs) {
        let kept = (self.steps.len() + self.orders.len()) as u64;
        for (stream, seq, n) in self.steps {
            diffs.push("events", format!("{stream} seq {seq}"), "events", 1, n);
        }
        for (order, streams) in self.orders {
            let key = format!("order {order}");
            diffs.push("events", key, "reservations", 1, streams.join(" and "));
        }
        diffs.count += self.total - kept;
    }
}
