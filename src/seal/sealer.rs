//! The sealer: a worker like the projections, one runner per database (a
//! session advisory lock on a connection of its own). Each pass reads the
//! events after the last sealed one in safe commit order, chains them, and
//! writes their chain rows and the block's seal in one statement, so a block
//! is sealed whole or not at all, and a second sealer that slipped in would
//! fail on the primary keys rather than fork the chain.

use std::time::Duration;

use deadpool_postgres::{ClientWrapper, Pool};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::domain::RecordedEvent;
use crate::limits::{SEAL_BLOCK_MAX_EVENTS, SEAL_INTERVAL_MS};
use crate::seal::chain::{self, Hash, SealFields, SealVersion, ZERO};
use crate::store::lag::Lag;
use crate::store::locks::{Lock, TRY_SESSION_LOCK};
use crate::store::read::{self, Cursor};
use crate::store::{pool, room, StoreError};

/// Where the chain stands: the last seal.
#[derive(Clone, Debug)]
struct Head {
    block: i64,
    last_seq: i64,
    seal: Hash,
    chain: Hash,
    cursor: Cursor,
}

impl Head {
    const EMPTY: Head = Head {
        block: 0,
        last_seq: 0,
        seal: ZERO,
        chain: ZERO,
        cursor: Cursor::START,
    };
}

async fn head(client: &ClientWrapper) -> Result<Head, StoreError> {
    let stmt = client
        .prepare_cached(
            "SELECT block, last_seq, hash, chain_head, last_tx_id, last_position
             FROM seals ORDER BY block DESC LIMIT 1",
        )
        .await?;
    let Some(row) = client.query_opt(&stmt, &[]).await? else {
        return Ok(Head::EMPTY);
    };
    let hash = |i: usize| {
        chain::from_bytes(row.get(i))
            .ok_or_else(|| StoreError::Corrupt("a seal's hash is not 32 bytes".into()))
    };
    Ok(Head {
        block: row.get(0),
        last_seq: row.get(1),
        seal: hash(2)?,
        chain: hash(3)?,
        cursor: Cursor {
            tx_id: row.get(4),
            position: row.get(5),
        },
    })
}

/// The leaf hash of an event as the log holds it: the canonical encoding of
/// the event as `GET /v1/events` serves it (`read::event_json`).
pub fn leaf_of(e: &RecordedEvent) -> Result<Hash, StoreError> {
    let stream = e.stream.to_string();
    let (data, metadata) = (e.written_data(), serde_json::to_value(&e.metadata));
    let metadata = metadata.map_err(|err| corrupt(e, err))?;
    let fields = chain::EventFields {
        position: e.position,
        stream: &stream,
        seq: e.seq,
        event_type: e.event.type_name(),
        version: e.version,
        data: &data,
        metadata: &metadata,
        recorded_at: e.recorded_at,
    };
    let mut bytes = Vec::with_capacity(512);
    chain::canonical_fields(&fields, &mut bytes).map_err(|err| corrupt(e, err))?;
    Ok(chain::leaf(&bytes))
}

fn corrupt(e: &RecordedEvent, err: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("event at position {}: {err}", e.position).into())
}

/// One pass: seals the next block of up to `max_events` events, if there
/// are any below the safe horizon; returns how many it sealed. Outside a
/// transaction (the horizon is read first, on its own).
pub async fn seal_once(client: &ClientWrapper, max_events: i64) -> Result<usize, StoreError> {
    // Every pass keeps the partitions ahead of the log and the chain, so
    // that appends, this one included, find room.
    let plain: &tokio_postgres::Client = client;
    room::make_room(plain, max_events).await?;
    let head = head(client).await?;
    let page = read::events(client, head.cursor, max_events, None).await?;
    let Some(last) = page.events.last() else {
        return Ok(0);
    };
    let n = page.events.len();
    let (mut seqs, mut positions, mut hashes, mut leaves) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut at = head.chain;
    for (i, e) in page.events.iter().enumerate() {
        let leaf = leaf_of(e)?;
        at = chain::link(&at, &leaf);
        seqs.push(head.last_seq + 1 + i as i64);
        positions.push(e.position);
        hashes.push(at.to_vec());
        leaves.push(leaf);
    }
    // The seal's own time is under its hash, so it is read before the hash
    // is made and written as read (PostgreSQL's microseconds both ways).
    let sealed_at = client
        .query_one("SELECT statement_timestamp()", &[])
        .await?
        .get(0);
    let fields = SealFields {
        version: SealVersion::CURRENT,
        block: head.block + 1,
        first_seq: head.last_seq + 1,
        last_seq: head.last_seq + n as i64,
        merkle_root: chain::merkle_root(&leaves),
        chain_head: at,
        last_tx_id: last.tx_id,
        last_position: last.position,
        sealed_at,
    };
    let rows = ChainRows {
        seqs,
        positions,
        hashes,
    };
    write_block(client, &rows, &fields, &head.seal).await?;
    Ok(n)
}

/// A block's chain rows, column by column.
struct ChainRows {
    seqs: Vec<i64>,
    positions: Vec<i64>,
    hashes: Vec<Vec<u8>>,
}

/// Writes a block's chain rows and its seal, hashed over `fields` after
/// `previous`, in one statement.
async fn write_block(
    client: &ClientWrapper,
    rows: &ChainRows,
    fields: &SealFields,
    previous: &Hash,
) -> Result<(), StoreError> {
    let seal = chain::seal(previous, fields);
    let stmt = client
        .prepare_cached(
            // The schema this release reads, said in the statement itself
            // as well as at connection (`pool::hardened`): the database
            // refuses chain rows of later shape versions from a session
            // that does not say it (schema 0020), and a pooler in front of
            // the database may drop startup options.
            "WITH reads AS (SELECT set_config('stockledger.schema', $15::text, true)),
             rows AS (
                 INSERT INTO event_chain (seq, position, hash)
                 SELECT r.* FROM unnest($1::bigint[], $2::bigint[], $3::bytea[]) AS r, reads)
             INSERT INTO seals (block, first_seq, last_seq, merkle_root, chain_head, previous,
                                hash, last_tx_id, last_position, sealed_at, version)
             VALUES ($4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .await?;
    client
        .execute(
            &stmt,
            &[
                &rows.seqs,
                &rows.positions,
                &rows.hashes,
                &fields.block,
                &fields.first_seq,
                &fields.last_seq,
                &fields.merkle_root.as_slice(),
                &fields.chain_head.as_slice(),
                &previous.as_slice(),
                &seal.as_slice(),
                &fields.last_tx_id,
                &fields.last_position,
                &fields.sealed_at,
                &i16::from(fields.version),
                &crate::store::migrate::latest().to_string(),
            ],
        )
        .await?;
    Ok(())
}

/// Takes the runner lock on a pooled connection; only a connection that got
/// it leaves the pool (the lock dies with it).
async fn become_sealer(pool: &Pool) -> Result<Option<ClientWrapper>, StoreError> {
    let client = pool::get(pool).await?;
    let got: bool = client
        .query_one(TRY_SESSION_LOCK, &[&Lock::Sealer.name()])
        .await?
        .get(0);
    Ok(got.then(|| deadpool_postgres::Object::take(client)))
}

/// Seals everything below the safe horizon if no sealer runs elsewhere;
/// returns the events sealed, or `None` when another sealer has the lock
/// (it will seal them).
pub async fn catch_up(pool: &Pool) -> Result<Option<u64>, StoreError> {
    let Some(client) = become_sealer(pool).await? else {
        return Ok(None);
    };
    let mut total = 0;
    loop {
        let n = seal_once(&client, SEAL_BLOCK_MAX_EVENTS).await?;
        if n == 0 {
            return Ok(Some(total));
        }
        total += n as u64;
    }
}

/// How far the seals are behind the log: the committed events no seal
/// covers yet, and the age of the oldest. A sealer that stalls (its worker
/// down, its lock held elsewhere by one that hangs) shows here as a lag that
/// only grows: the alert `StockledgerSealerStalled` reads it.
pub async fn lag(client: &ClientWrapper) -> Result<Lag, StoreError> {
    let head = head(client).await?;
    crate::store::lag::after(&**client, head.cursor).await
}

/// Runs the sealer until `cancel` fires; a block under way is finished.
/// Waits `interval` between passes that found less than a full block.
pub async fn run(pool: Pool, interval: Duration, cancel: CancellationToken) {
    let pause = || async {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = cancel.cancelled() => {}
        }
    };
    while !cancel.is_cancelled() {
        let client = match become_sealer(&pool).await {
            Ok(Some(c)) => c,
            Ok(None) => {
                pause().await;
                continue;
            }
            Err(e) => {
                warn!(error = %e, "sealer cannot reach the database; will retry");
                pause().await;
                continue;
            }
        };
        info!("sealer running");
        while !cancel.is_cancelled() {
            match seal_once(&client, SEAL_BLOCK_MAX_EVENTS).await {
                Ok(n) if n as i64 == SEAL_BLOCK_MAX_EVENTS => {}
                Ok(_) => pause().await,
                Err(e) => {
                    // Dropping the connection releases the lock, so a
                    // healthy process can take over while we reconnect.
                    warn!(error = %e, "sealing failed; reconnecting");
                    break;
                }
            }
        }
    }
    info!("sealer stopped");
}

/// The sealer's default pause between passes.
pub fn default_interval() -> Duration {
    Duration::from_millis(SEAL_INTERVAL_MS)
}
