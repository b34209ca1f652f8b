//! The `redis-lua` baseline: check, decrement and remember the id in one Lua
//! script; fast, but neither durable nor auditable.

use std::time::Duration;

use crate::load::Sent;

/// How long `RedisLua::connect` waits for Redis before skipping the baseline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Check the id, check and decrement the stock, remember the id.
const LUA: &str = r#"
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 2 end
local stock = tonumber(redis.call('GET', KEYS[1]) or '0')
if stock < tonumber(ARGV[2]) then return 0 end
redis.call('DECRBY', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1"#;

/// A connection to Redis with the script loaded.
pub struct RedisLua {
    conn: redis::aio::MultiplexedConnection,
    script: redis::Script,
}

impl RedisLua {
    /// Connects and sets the stock; `None` when Redis does not answer.
    pub async fn connect(url: &str, skus: &[String], stock: i64) -> Option<RedisLua> {
        let client = redis::Client::open(url).ok()?;
        let mut conn =
            tokio::time::timeout(CONNECT_TIMEOUT, client.get_multiplexed_async_connection())
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

    /// Takes one unit of `sku` for `id`; a repeated id is answered as done.
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
