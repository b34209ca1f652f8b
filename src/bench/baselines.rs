//! The usual designs, measured on the same PostgreSQL (and Redis) in the same
//! run, so that ratios are fair:
//!
//! - `naive-sql`: one conditional UPDATE per request, as most shops do;
//! - `naive-sql-event`: that UPDATE and an event insert, one transaction each;
//! - `redis-lua`: check, decrement and remember the id in one Lua script;
//!   fast, but neither durable nor auditable.

use deadpool_postgres::Pool;

use crate::bench::load::Sent;
use crate::store::{pool, StoreError};

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
        .execute(&insert, &[&format!("reservation:{id}"), &data, &meta])
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

/// Check the id, check and decrement the stock, remember the id.
const LUA: &str = r#"
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 2 end
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
if stock < tonumber(ARGV[2]) then return 0 end
redis.call('DECRBY', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1"#;

pub struct RedisLua {
    conn: redis::aio::MultiplexedConnection,
    script: redis::Script,
}

impl RedisLua {
    /// Connects and sets the stock; `None` when Redis does not answer.
    pub async fn connect(url: &str, skus: &[String], stock: i64) -> Option<RedisLua> {
        let client = redis::Client::open(url).ok()?;
        let mut conn = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            client.get_multiplexed_async_connection(),
        )
        .await
        .ok()?
        .ok()?;
        for sku in skus {
            let _: () = redis::cmd("SET")
                .arg(format!("bench:stock:{sku}"))
                .arg(stock)
                .query_async(&mut conn)
                .await
                .ok()?;
        }
        let _: () = redis::cmd("DEL")
            .arg("bench:ids")
            .query_async(&mut conn)
            .await
            .ok()?;
        Some(RedisLua {
            conn,
            script: redis::Script::new(LUA),
        })
    }

    pub async fn reserve(&self, sku: &str, id: &str) -> Sent {
        let mut conn = self.conn.clone();
        let r: Result<i64, _> = self
            .script
            .key(format!("bench:stock:{sku}"))
            .key("bench:ids")
            .arg(id)
            .arg(1)
            .invoke_async(&mut conn)
            .await;
        match r {
            Ok(1) | Ok(2) => Sent::Ok,
            Ok(_) => Sent::Refused,
            Err(_) => Sent::Failed,
        }
    }
}
