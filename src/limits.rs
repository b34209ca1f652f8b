//! Every limit of the system, named and explained in one place.
//!
//! A limit that is not written down is a limit nobody can reason about; the
//! values that come from the product rules (`shared/design/domain.md`) are
//! marked as such, the rest are operational choices.

/// Longest id (`sku`, `location`, `order_id`, any command id), in characters. Domain rule.
pub const MAX_ID_LEN: usize = 64;

/// Largest quantity on one reservation line or receipt. Domain rule.
pub const MAX_QUANTITY: u32 = 1_000_000;

/// Largest absolute adjustment `delta`. Domain rule.
pub const MAX_ADJUST_DELTA: i32 = 1_000_000;

/// Most lines on one reservation, counted after lines for the same item are merged. Domain rule.
pub const MAX_LINES_PER_RESERVATION: usize = 100;

/// Shortest and longest time to live of a reservation, in seconds, and the default. Domain rule.
pub const MIN_TTL_SECONDS: u32 = 1;
pub const MAX_TTL_SECONDS: u32 = 7 * 24 * 3600;
pub const DEFAULT_TTL_SECONDS: u32 = 15 * 60;

/// Longest adjustment or release reason, in characters. Domain rule.
pub const MAX_REASON_LEN: usize = 200;

/// Longest correlation or causation id and caller identity kept in event metadata.
/// They come from callers' headers, so they are bounded like everything else.
pub const MAX_METADATA_ID_LEN: usize = 128;

/// Most commands decided in one transaction. Bounds lock hold time and the size
/// of the single INSERT that writes the batch's events.
pub const MAX_COMMANDS_PER_BATCH: usize = 1024;

/// How many times a transaction that hit a deadlock, a serialization failure,
/// a concurrent duplicate or a lost connection is tried again before the caller
/// gets a retryable error.
pub const MAX_TRANSACTION_ATTEMPTS: u32 = 6;

/// First back-off between attempts; doubled each time.
pub const RETRY_BACKOFF_START_MS: u64 = 5;

/// Most events returned by one read of the log.
pub const MAX_EVENTS_PER_READ: i64 = 1000;

/// Connections in one process's pool unless configured otherwise.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// How long a caller waits for a pooled connection before `UNAVAILABLE`.
pub const POOL_WAIT_TIMEOUT_MS: u64 = 5_000;

/// Server-side limits set on every connection, so a stuck statement or an
/// abandoned transaction cannot hold item locks for long.
pub const STATEMENT_TIMEOUT_MS: u64 = 30_000;
pub const IDLE_IN_TRANSACTION_TIMEOUT_MS: u64 = 60_000;

/// How long the private PostgreSQL cluster may take to start before we give up.
pub const PRIVATE_CLUSTER_START_TIMEOUT_SECONDS: u64 = 60;

/// Most due reservations one expiry pass handles.
pub const MAX_EXPIRIES_PER_PASS: i64 = 500;

/// Most events a projection worker applies in one transaction. Bounds memory
/// and lock time; large enough that set-based SQL amortises per-batch costs.
pub const PROJECTION_BATCH_EVENTS: i64 = 10_000;

/// Batch size used by rebuilds, which read the log from the start.
pub const REBUILD_BATCH_EVENTS: i64 = 50_000;

/// How often an idle worker looks at the log even without a notification.
pub const PROJECTION_POLL_INTERVAL_MS: u64 = 1_000;

/// Lag in events is counted up to this many; beyond it, status says "at least".
pub const LAG_COUNT_CAP: i64 = 1_000_000;

/// Most differences an audit or a rebuild verification keeps in its report;
/// it still counts them all.
pub const MAX_REPORTED_DIFFERENCES: usize = 1_000;

/// How many connections (and threads) read the log side by side during an
/// audit or a rebuild verification, each folding the streams of one hash
/// partition. Matches the machine's two cores.
pub const AUDIT_READERS: u32 = 2;

/// Largest HTTP request body. Contract: 64 KiB, else `PAYLOAD_TOO_LARGE`.
pub const MAX_REQUEST_BODY_BYTES: usize = 64 * 1024;

/// How long one HTTP request may take before the caller gets `UNAVAILABLE`.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 10_000;

/// Per-key rate limit: sustained requests per second and burst.
pub const DEFAULT_RATE_LIMIT_PER_SECOND: u32 = 1_000;
pub const DEFAULT_RATE_LIMIT_BURST: u32 = 2_000;

/// How long a looked-up API key is trusted before it is looked up again;
/// a revocation takes effect within this time.
pub const DEFAULT_KEY_CACHE_SECONDS: u64 = 5;

/// Most API keys remembered at once (cache and rate-limit buckets).
pub const MAX_CACHED_KEYS: usize = 10_000;

/// How often the expiry worker looks for due reservations, and how many it
/// expires per pass.
pub const DEFAULT_EXPIRY_INTERVAL_MS: u64 = 1_000;
pub const DEFAULT_EXPIRY_BATCH: i64 = 500;

/// How long a graceful shutdown may take before the process exits anyway.
pub const SHUTDOWN_GRACE_SECONDS: u64 = 20;

/// Group commit: the most commands one transaction takes from the queue.
/// Each reservation takes two advisory locks, so this also bounds the lock
/// table slots a batch uses (PostgreSQL has max_locks_per_transaction ×
/// max_connections of them for the whole server).
pub const GROUP_COMMIT_MAX_BATCH: usize = 256;

/// Group commit: how long a batch waits for more commands after the first,
/// when fewer than the maximum are queued. Zero: under load, batches fill by
/// themselves while the previous one commits, and measured on the hot item
/// (docs/benchmarks.md) any wait only added latency (0 µs: 8,073/s at 64
/// callers; 500 µs: 4,599/s).
pub const GROUP_COMMIT_WINDOW_MICROS: u64 = 0;

/// Group commit: batches gathered and committed at once by one process; two
/// let one batch gather while the other waits for its commit.
pub const GROUP_COMMIT_PIPELINES: usize = 2;

/// Group commit: commands waiting at most; past it callers get UNAVAILABLE.
pub const GROUP_COMMIT_QUEUE_DEPTH: usize = 20_000;
