//! The second half of a command transaction: append the batch's events with
//! one statement and move the balances with at most two.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;

use crate::domain::{EventMetadata, Item, NewEvent, StockDelta};
use crate::store::error::Failure;
use crate::store::log_row::encode;
use crate::store::StoreError;

/// The batch's events in one statement. An event has any number of item
/// lines, and unnest cannot take an array of arrays of different lengths, so
/// the lines travel flat, each with the index of its event (1-based, as the
/// insert's ordinality counts), and are put back together per event.
const APPEND: &str = "
    INSERT INTO events (stream, seq, type, data, metadata, recorded_at,
                        order_id, skus, locations, quantities)
    SELECT u.s, u.q, u.t, u.d, u.m, $6, u.o,
           coalesce(l.skus, '{}'), coalesce(l.locations, '{}'), coalesce(l.quantities, '{}')
    FROM unnest($1::text[], $2::int4[], $3::text[], $4::jsonb[], $5::jsonb[], $7::text[])
         WITH ORDINALITY AS u(s, q, t, d, m, o, n)
    LEFT JOIN (
        SELECT n, array_agg(sku ORDER BY k) AS skus,
               array_agg(location ORDER BY k) AS locations,
               array_agg(quantity ORDER BY k) AS quantities
        FROM unnest($8::int4[], $9::text[], $10::text[], $11::int8[])
             WITH ORDINALITY AS x(n, sku, location, quantity, k)
        GROUP BY n
    ) AS l ON l.n = u.n
    ORDER BY u.n
    RETURNING position";

/// Appends every event of the batch in one INSERT and returns their
/// positions, in the order of `events`: the insert hands positions out in
/// that order (its ORDER BY), which is the order the commands were decided in.
pub(crate) async fn append(
    tx: &Transaction<'_>,
    events: &[(NewEvent, EventMetadata)],
    now: DateTime<Utc>,
) -> Result<Vec<i64>, Failure> {
    let mut streams = Vec::with_capacity(events.len());
    let mut seqs = Vec::with_capacity(events.len());
    let mut types = Vec::with_capacity(events.len());
    let mut data = Vec::with_capacity(events.len());
    let mut metadata = Vec::with_capacity(events.len());
    let mut orders = Vec::with_capacity(events.len());
    let mut line_of = Vec::new();
    let mut skus = Vec::new();
    let mut locations = Vec::new();
    let mut quantities = Vec::new();
    for (i, (e, m)) in events.iter().enumerate() {
        let row = encode(&e.event);
        streams.push(e.stream.to_string());
        seqs.push(e.seq as i32);
        types.push(e.event.type_name());
        orders.push(row.order_id);
        data.push(row.data);
        metadata.push(serde_json::to_value(m).expect("metadata serialises"));
        line_of.extend(std::iter::repeat_n(i as i32 + 1, row.skus.len()));
        skus.extend(row.skus);
        locations.extend(row.locations);
        quantities.extend(row.quantities);
    }
    let insert = tx.prepare_cached(APPEND).await?;
    let rows = tx
        .query(
            &insert,
            &[
                &streams,
                &seqs,
                &types,
                &data,
                &metadata,
                &now,
                &orders,
                &line_of,
                &skus,
                &locations,
                &quantities,
            ],
        )
        .await?;
    // RETURNING promises no order; the positions themselves do.
    let mut positions: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    positions.sort_unstable();
    if positions.len() != events.len() {
        return Err(Failure::Fatal(StoreError::Invariant(
            format!(
                "{} events appended as {} rows",
                events.len(),
                positions.len()
            )
            .into(),
        )));
    }
    Ok(positions)
}

/// Moves the balances by the net effect of the batch's events.
///
/// Rows that existed were locked by the load, in (location, sku) order, and
/// are updated in place. Items seen for the first time are inserted; only a
/// receipt or an adjustment creates a row, under its item's advisory lock
/// (`load.rs`), so no one else can be inserting the same row and the insert
/// never waits. The upsert is a backstop, not a path that runs. It cannot be one upsert
/// for all: PostgreSQL checks CHECK constraints on the proposed row before it
/// resolves a conflict, and a delta such as "reserved -2" is no valid row.
pub(crate) async fn move_balances(
    tx: &Transaction<'_>,
    events: &[(NewEvent, EventMetadata)],
    existing: &HashSet<Item>,
) -> Result<(), Failure> {
    let mut net: BTreeMap<Item, StockDelta> = BTreeMap::new();
    for (e, _) in events {
        for (item, d) in e.event.stock_effects() {
            let n = net.entry(item).or_default();
            n.on_hand += d.on_hand;
            n.reserved += d.reserved;
            n.confirmed += d.confirmed;
        }
    }
    net.retain(|_, d| *d != StockDelta::default());
    let (old, new): (Vec<_>, Vec<_>) = net.into_iter().partition(|(i, _)| existing.contains(i));
    if !old.is_empty() {
        let update = tx
            .prepare_cached(
                "UPDATE item_balances AS b
                 SET on_hand = b.on_hand + u.on_hand,
                     reserved = b.reserved + u.reserved,
                     confirmed = b.confirmed + u.confirmed
                 FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[])
                      AS u(sku, location, on_hand, reserved, confirmed)
                 WHERE b.sku = u.sku AND b.location = u.location",
            )
            .await?;
        let cols = columns(&old);
        tx.execute(&update, &[&cols.0, &cols.1, &cols.2, &cols.3, &cols.4])
            .await?;
    }
    if !new.is_empty() {
        let insert = tx
            .prepare_cached(
                "INSERT INTO item_balances AS b (sku, location, on_hand, reserved, confirmed)
                 SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[])
                      AS u(sku, location, on_hand, reserved, confirmed)
                 ORDER BY u.location, u.sku
                 ON CONFLICT (sku, location) DO UPDATE
                 SET on_hand = b.on_hand + EXCLUDED.on_hand,
                     reserved = b.reserved + EXCLUDED.reserved,
                     confirmed = b.confirmed + EXCLUDED.confirmed",
            )
            .await?;
        let cols = columns(&new);
        tx.execute(&insert, &[&cols.0, &cols.1, &cols.2, &cols.3, &cols.4])
            .await?;
    }
    Ok(())
}

type Columns<'a> = (Vec<&'a str>, Vec<&'a str>, Vec<i64>, Vec<i64>, Vec<i64>);

fn columns(rows: &[(Item, StockDelta)]) -> Columns<'_> {
    let mut c: Columns<'_> = Default::default();
    for (item, d) in rows {
        c.0.push(item.sku.as_str());
        c.1.push(item.location.as_str());
        c.2.push(d.on_hand);
        c.3.push(d.reserved);
        c.4.push(d.confirmed);
    }
    c
}
