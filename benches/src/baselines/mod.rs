//! The usual designs, measured on the same PostgreSQL (and Redis) in the same
//! run, so that ratios are fair:
//!
//! - `naive-sql`: one conditional UPDATE per request, as most shops do;
//! - `naive-sql-event`: that UPDATE and an event insert, one transaction each;
//! - `redis-lua`: check, decrement and remember the id in one Lua script;
//!   fast, but neither durable nor auditable.

mod redis_lua;
mod sql;

pub use redis_lua::RedisLua;
pub use sql::{naive_sql, naive_sql_event, setup_sql};
