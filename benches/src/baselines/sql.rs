//! The SQL baselines: `naive-sql` and `naive-sql-event`, on tables of their
//! own in the benchmark's database.

use deadpool_postgres::Pool;

use stockledger::domain::StreamKind;
use stockledger::store::{pool, StoreError};

use crate::load::Sent;

/// Tables of the SQL baselines, in the benchmark's own database.
const SETUP: &str = "
    DROP TABLE IF EXISTS naive_stock, naive_events;
    CREATE TABLE naive_stock (sku text PRIMARY KEY, stock bigint NOT NULL, locked bigint NOT NULL DEFAULT 0);
    -- A realistic event row: text stream id + sequence unique, two jsonb columns.
    CREATE TABLE naive_events (
        position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        stream text NOT NULL, seq int NOT NULL, type text NOT NULL,
        data jsonb NOT NULL, metadata jsonb NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (stream, seq));";

/// Creates the baselines' tables afresh, with `stock` units of each of `skus`.
pub async fn setup_sql(pool: &Pool, skus: &[String], stock: i64) -> Result<(), StoreError> {
    let client = pool::get(pool).await?;
    client.batch_execute(SETUP).await?;
    client
        .execute(
            "INSERT INTO naive_stock (sku, stock) SELECT unnest($1::text[]), $2",
            &[&skus, &stock],
        )
        .await?;
    Ok(())
}

/// One conditional UPDATE: take a unit if one is left.
pub async fn naive_sql(pool: &Pool, sku: &str) -> Sent {
    let Ok(client) = pool::get(pool).await else {
        return Sent::Failed;
    };
    let Ok(stmt) = client
        .prepare_cached(
            "UPDATE naive_stock SET locked = locked + 1 WHERE sku = $1 AND stock - locked >= 1",
        )
        .await
    else {
        return Sent::Failed;
    };
    match client.execute(&stmt, &[&sku]).await {
        Ok(1) => Sent::Ok,
        Ok(_) => Sent::Refused,
        Err(_) => Sent::Failed,
    }
}

/// The UPDATE of `naive_sql` and a realistic event row, in one transaction.
pub async fn naive_sql_event(pool: &Pool, sku: &str, id: &str) -> Sent {
    let Ok(mut client) = pool::get(pool).await else {
        return Sent::Failed;
    };
    let Ok(tx) = client.transaction().await else {
        return Sent::Failed;
    };
    let Ok(update) = tx
        .prepare_cached(
            "UPDATE naive_stock SET locked = locked + 1 WHERE sku = $1 AND stock - locked >= 1",
        )
        .await
    else {
        return Sent::Failed;
    };
    match tx.execute(&update, &[&sku]).await {
        Ok(1) => {}
        Ok(_) => return Sent::Refused,
        Err(_) => return Sent::Failed,
    }
    let data = serde_json::json!({"order_id": id, "lines": [{"sku": sku, "location": "default", "quantity": 1}],
                                  "expires_at": "2026-12-01T00:00:00Z", "request_hash": "0".repeat(64)});
    let meta = serde_json::json!({"command_id": uuid::Uuid::new_v4(), "actor": "bench", "fingerprint": "0".repeat(64)});
    let Ok(insert) = tx
        .prepare_cached("INSERT INTO naive_events (stream, seq, type, data, metadata) VALUES ($1, 1, 'ReservationCreated', $2, $3)")
        .await
    else {
        return Sent::Failed;
    };
    if tx
        .execute(
            &insert,
            &[
                &format!("{}{id}", StreamKind::Reservation.prefix()),
                &data,
                &meta,
            ],
        )
        .await
        .is_err()
    {
        return Sent::Failed;
    }
    match tx.commit().await {
        Ok(()) => Sent::Ok,
        Err(_) => Sent::Failed,
    }
}
