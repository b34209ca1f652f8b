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

/// Most lines a reserve request may carry before merging. Anything longer is
/// refused before a single line is read, so a hostile request costs nothing;
/// ten times the merged limit leaves room for callers that send one line per unit.
pub const MAX_RAW_LINES_PER_RESERVATION: usize = 10 * MAX_LINES_PER_RESERVATION;

/// Shortest and longest time to live of a reservation, in seconds, and the default. Domain rule.
pub const MIN_TTL_SECONDS: u32 = 1;
pub const MAX_TTL_SECONDS: u32 = 7 * 24 * 3600;
pub const DEFAULT_TTL_SECONDS: u32 = 15 * 60;

/// Most events one reservation stream may hold: its creation, its partial
/// confirmations and releases, its extensions, and the event that settles
/// it. A partial step or an extension is refused once only one place is
/// left, so the last place is always free for a whole confirm, release or
/// expiry: a hold can always be settled. Bounds what every command on the
/// reservation loads and folds.
pub const MAX_RESERVATION_EVENTS: u32 = 64;

/// Most events one expected receipt stream may hold: its record, its
/// changes and deliveries, and its cancellation. A change or a delivery is
/// refused once only one place is left, so the last place is always free for
/// the cancellation: what is expected can always be withdrawn. Bounds what
/// every command on the expected receipt loads and folds. Domain rule.
pub const MAX_EXPECTED_EVENTS: u32 = 256;

/// The most reservations that may wait for one item at once (backorders
/// and pre-orders). The queue lives on the item's balance row, which every
/// command on the item reads and writes, so its length is what each of
/// them pays. A reserve that would join a full queue is refused
/// (`BACKLOG_FULL`). Domain rule.
pub const MAX_WAITING_PER_ITEM: usize = 1_000;

/// The most open expected receipts one item may have at once. They are
/// kept on the item's balance row (what backorders may draw on), for the
/// same reason and with the same refusal as `MAX_WAITING_PER_ITEM`.
/// Domain rule.
pub const MAX_EXPECTED_PER_ITEM: usize = 256;

/// The most reservations with waiting units the backorder worker fills
/// or drops in one pass; a full pass goes again at once. Bounds one
/// pass's batch as `MAX_EXPIRIES_PER_PASS` does.
pub const MAX_FILLS_PER_PASS: usize = 500;

/// The most pages of waiting items (`MAX_FILLS_PER_PASS` items each) the
/// backorder worker reads in one pass; the next pass goes on from where it
/// stopped, so a long list of items is read across passes rather than all
/// at every wake-up.
pub const MAX_WAITING_PAGES_PER_PASS: usize = 20;

/// Earliest and latest expected date, as `YYYY-MM-DD`: the years PostgreSQL's
/// `date` and the contract's four-digit years share. Domain rule.
pub const MIN_EXPECTED_DATE: &str = "0001-01-01";
pub const MAX_EXPECTED_DATE: &str = "9999-12-31";

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
/// gets a retryable error (and never past `BATCH_DEADLINE_MS`). A lock wait that
/// ran out counts as an attempt too, where the caller waits for locks again
/// (`LockWaits::Retry`): with the 1 s lock timeout, the deadline comes first.
pub const MAX_TRANSACTION_ATTEMPTS: u32 = 10;

/// Deadline on a whole batch, all attempts and waits for a connection
/// together: no new attempt starts after it. The server sets it from its
/// request timeout instead (less `ANSWER_MARGIN_MS`, so the answer still
/// reaches the caller); this is the default, and the server's with the
/// default request timeout.
pub const BATCH_DEADLINE_MS: u64 = 8_000;

/// The part of an HTTP request's time kept for answering after its command's
/// deadline (a last attempt's resolution, writing the answer).
pub const ANSWER_MARGIN_MS: u64 = 2_000;

/// Pause between tries to get a database connection while none can be had
/// (a failover, a restart): short, so a command resumes soon after the new
/// primary takes connections; each try is itself bounded by
/// `CONNECT_TIMEOUT_MS`, and all of them by `BATCH_DEADLINE_MS`.
pub const RECONNECT_PAUSE_MS: u64 = 100;

/// First back-off between attempts; doubled each time up to the most.
pub const RETRY_BACKOFF_START_MS: u64 = 5;
pub const RETRY_BACKOFF_MAX_MS: u64 = 200;

/// Most events returned by one read of the log, and how many a read that
/// names no limit gets.
pub const MAX_EVENTS_PER_READ: i64 = 1000;

/// Most events of the log one read filtered by a stream prefix looks at. A
/// prefix that matches little (one stream, or nothing at all) would
/// otherwise walk the whole rest of the log for one page; bounded, such a
/// page may hold fewer events than asked for, or none, and its `next` moves
/// on past what was looked at (docs/domain.md, "Reading the log").
pub const MAX_EVENTS_SCANNED_PER_FILTERED_READ: i64 = 20_000;
pub const DEFAULT_EVENTS_PER_READ: i64 = 100;

/// Most digits in each of a log cursor's two numbers (`TX:POSITION`): as
/// many as always fit a signed 64-bit integer, so a cursor that matches the
/// published pattern always parses.
pub const MAX_CURSOR_PART_DIGITS: usize = 18;

/// Longest stream prefix a read of the log may filter by: the longest
/// stream name (`adjustment:` and a longest id) and some room.
pub const MAX_STREAM_PREFIX_LEN: usize = 80;

/// After no standby could be reached for a read (`--read-database-url`), how
/// long such reads go to the primary before a standby is tried again.
pub const READ_STANDBY_RETRY_MS: u64 = 1_000;

/// Connections in one process's pool unless configured otherwise.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// How long a caller waits for a pooled connection before `UNAVAILABLE`.
pub const POOL_WAIT_TIMEOUT_MS: u64 = 5_000;

/// Server-side limits set on every connection, so a stuck statement or an
/// abandoned transaction cannot hold item locks for long.
pub const STATEMENT_TIMEOUT_MS: u64 = 30_000;

/// Longest a single statement of a schema migration may run. A migration
/// that rewrites the log (`schema/0007`) takes far longer on a large log
/// than any statement of the running service may, so migrations lift
/// `STATEMENT_TIMEOUT_MS` to this inside their own transaction.
pub const MIGRATION_STATEMENT_TIMEOUT_MS: u64 = 3_600_000;

/// Longest a process waits for another's migration (or for the other
/// processes started with it, which take the migration lock one at a time)
/// before it gives up, retryably. Far past the command path's
/// `LOCK_TIMEOUT_MS`: a CLI command started beside forty others must get its
/// turn, not a lock timeout.
pub const MIGRATION_LOCK_WAIT_MS: u64 = 60_000;
pub const IDLE_IN_TRANSACTION_TIMEOUT_MS: u64 = 60_000;

/// The idle limit of a read-only snapshot shared by `verify`'s or the
/// audit's readers (`store::snapshot`): the transaction that exported it sits
/// idle while they read, and a reader while it reads an archive's files or
/// folds, for as long as the log and the archive take. Still a limit: a
/// reader that hangs does not hold the snapshot (and vacuum) for ever.
pub const SNAPSHOT_IDLE_TIMEOUT_MS: u64 = 6 * 3_600_000;

/// Longest wait for a row or advisory lock inside any statement. A lock held
/// by a stuck or abandoned transaction costs a command this long, then the
/// command is answered `UNAVAILABLE` and its items are set aside (see
/// `SUSPECT_ITEM_MS`) instead of holding up a whole batch.
pub const LOCK_TIMEOUT_MS: u64 = 1_000;

/// Deadline on one attempt of a command transaction, from taking the
/// connection to the COMMIT reply. Past it the connection is discarded and the
/// attempt's outcome is resolved by its transaction id (`pg_xact_status`),
/// never guessed. Well under the HTTP request timeout, so a caller caught in a
/// stalled connection still gets its true answer from a second attempt.
pub const TRANSACTION_ATTEMPT_DEADLINE_MS: u64 = 3_000;

/// How long a COMMIT's reply may take before the attempt's outcome is
/// resolved instead of waited for. A COMMIT normally answers in
/// milliseconds; a reply held up by a stalled connection then costs its
/// batch this long, not the whole attempt deadline. A slow but healthy
/// COMMIT that passes it only costs a resolution (the transaction is never
/// ended while its COMMIT runs).
pub const COMMIT_REPLY_DEADLINE_MS: u64 = 1_000;

/// How long resolving an attempt of unknown outcome may take (a fresh
/// connection, the transaction's status, ending its backend if it is still
/// open). Past it the caller gets `UNAVAILABLE`, "outcome unknown".
pub const OUTCOME_RESOLUTION_DEADLINE_MS: u64 = 3_000;

/// While resolving an unknown outcome: how often the transaction's status is
/// asked again (it may be ending, or the server coming back).
pub const OUTCOME_POLL_MS: u64 = 20;

/// TCP keepalive and user timeout on every database connection, both ways:
/// a peer that vanished (a cut cable, a dead host) is noticed within about
/// `TCP_KEEPALIVE_IDLE + TCP_KEEPALIVE_INTERVAL × TCP_KEEPALIVE_RETRIES`
/// seconds, and unacknowledged data is given up after `TCP_USER_TIMEOUT_MS`.
pub const TCP_KEEPALIVE_IDLE_SECONDS: u64 = 10;
pub const TCP_KEEPALIVE_INTERVAL_SECONDS: u64 = 2;
pub const TCP_KEEPALIVE_RETRIES: u32 = 3;
pub const TCP_USER_TIMEOUT_MS: u64 = 15_000;

/// How long opening a database connection may take.
pub const CONNECT_TIMEOUT_MS: u64 = 5_000;

/// Connections the private PostgreSQL cluster accepts: room for a server's
/// pool, its workers, the tests running side by side and the benchmarks.
pub const PRIVATE_CLUSTER_MAX_CONNECTIONS: u32 = 300;

/// How long the private PostgreSQL cluster may take to start before we give up.
pub const PRIVATE_CLUSTER_START_TIMEOUT_SECONDS: u64 = 60;

/// Most due reservations one expiry pass handles (`--expiry-batch` is
/// clamped to it); also the default.
pub const MAX_EXPIRIES_PER_PASS: i64 = 500;

/// Most events a projection worker applies in one transaction. Bounds memory
/// and lock time; large enough that set-based SQL amortises per-batch costs.
pub const PROJECTION_BATCH_EVENTS: i64 = 10_000;

/// Batch size used by rebuilds, which read the log from the start.
pub const REBUILD_BATCH_EVENTS: i64 = 50_000;

/// How often the projection runner looks at the log without being woken:
/// how it finds events other processes appended (the server wakes it
/// in-process for its own commands).
pub const PROJECTION_POLL_INTERVAL_MS: u64 = 250;

/// While events keep coming, how long the projection runner waits after a
/// wake-up before its next batch, so that one batch takes the commits of
/// this long rather than one each (the batch's fixed costs are paid once).
/// Adds at most this much to the read models' lag under load; after a quiet
/// spell the first commit is applied at once.
pub const PROJECTION_DEBOUNCE_MS: u64 = 20;

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

/// HTTP connections open at once, at most (`--max-connections`). Lowered at
/// start to fit the open-files limit.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4_096;

/// HTTP connections open at once from one client address
/// (`--max-connections-per-address`). Below the total, so one address can
/// never take every connection; raise it behind a load balancer or proxy,
/// where every connection comes from its few addresses.
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 1_024;

/// How long a client may take to send a request's headers.
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u64 = 5_000;

/// How long a connection may sit with no request in flight (a fresh one that
/// sends nothing, or a keep-alive one between requests) before it is closed.
pub const DEFAULT_IDLE_CONNECTION_TIMEOUT_MS: u64 = 30_000;

/// File descriptors kept free of client connections for the database pool,
/// the log and the listener itself.
pub const FILE_DESCRIPTORS_RESERVED: usize = 256;

/// Client connections the open-files limit must leave room for (after
/// `FILE_DESCRIPTORS_RESERVED`), or the server refuses to start: below it,
/// with a quarter of the total per address (`MAX_CONNECTION_SHARE_PER_ADDRESS`),
/// a few idle clients would shut out every other.
pub const MIN_CLIENT_CONNECTIONS: usize = 64;

/// Pause after a failed accept (out of file descriptors), so the loop waits
/// for connections to end instead of spinning.
pub const ACCEPT_ERROR_PAUSE_MS: u64 = 100;

/// The `Retry-After` of an `UNAVAILABLE` answer, in seconds.
pub const UNAVAILABLE_RETRY_AFTER_SECONDS: u64 = 1;

/// How long one HTTP request may take before the caller gets `UNAVAILABLE`.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 10_000;

/// How long a key seen live is still honoured while it cannot be looked up
/// (the database is away): long enough to ride out a failover, short enough
/// that a key revoked meanwhile stops working soon after.
pub const KEY_STALE_GRACE_SECONDS: u64 = 60;

/// Per-key rate limit: sustained requests per second and burst.
pub const DEFAULT_RATE_LIMIT_PER_SECOND: u32 = 1_000;
pub const DEFAULT_RATE_LIMIT_BURST: u32 = 2_000;

/// How long a looked-up API key is trusted before it is looked up again;
/// a revocation takes effect within this time.
pub const DEFAULT_KEY_CACHE_SECONDS: u64 = 5;

/// Most API keys remembered at once (cache and rate-limit buckets); live and
/// unknown keys are counted apart.
pub const MAX_CACHED_KEYS: usize = 10_000;

/// Longest API key accepted in `Authorization: Bearer`.
pub const MAX_API_KEY_LEN: usize = 256;

/// Lookups of keys that are not in the cache, per client address: sustained
/// per second and burst. An unknown key costs a database query; this bounds
/// what unauthenticated callers can make the database do.
pub const KEY_LOOKUPS_PER_ADDRESS_PER_SECOND: u32 = 20;
pub const KEY_LOOKUPS_PER_ADDRESS_BURST: u32 = 40;

/// Key lookups (keys not in the cache) running at once in the whole server;
/// more wait, within their request timeout, so lookups can never take more
/// than this many of the pool's connections.
pub const MAX_KEY_LOOKUPS_IN_FLIGHT: usize = 4;

/// How often the expiry worker looks for due reservations (it expires up to
/// `MAX_EXPIRIES_PER_PASS` per pass).
pub const DEFAULT_EXPIRY_INTERVAL_MS: u64 = 1_000;

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

/// Group commit (adaptive gathering, the default): the longest a batch keeps
/// gathering while another batch is committing. A batch normally goes the
/// moment the committing one ends; this bound keeps one slow or stuck commit
/// from holding the next batch's callers, who then commit beside it.
pub const GROUP_COMMIT_MAX_GATHER_MICROS: u64 = 5_000;

/// Group commit: batches gathered and committed at once by one process; two
/// let one batch gather while the other waits for its commit.
pub const GROUP_COMMIT_PIPELINES: usize = 2;

/// Group commit: how long an item (or stream) whose command waited out
/// `LOCK_TIMEOUT_MS` stays suspect. Commands that touch a suspect item run on
/// their own, beside the batches, so a lock held by a stuck transaction costs
/// only the commands that need it.
pub const SUSPECT_ITEM_MS: u64 = 2_000;

/// Group commit: most commands on suspect items running at once, each on its
/// own connection; past it such commands are answered UNAVAILABLE at once.
pub const SUSPECT_COMMANDS_IN_FLIGHT: usize = 4;

/// Group commit: commands of a failed batch run one by one, this many at
/// once (each on its own connection of the pool).
pub const ONE_BY_ONE_IN_FLIGHT: usize = 8;

/// Group commit: most remembered suspect items; the oldest are forgotten first.
pub const MAX_SUSPECT_ITEMS: usize = 1_024;

/// Group commit: commands waiting at most; past it callers get UNAVAILABLE.
pub const GROUP_COMMIT_QUEUE_DEPTH: usize = 20_000;

/// How long `/metrics` reuses the projection lag it read from the database.
pub const METRICS_CACHE_MS: u64 = 1_000;

/// Heavy reads (as-of figures, an item's history) running at once in the HTTP
/// server; more wait for a permit within their request timeout. Each holds one
/// connection of the pool while it runs, so commands keep the rest.
pub const MAX_HEAVY_READS_IN_FLIGHT: usize = 2;

/// `stockledger chaos`: items the writers share (few, so they contend).
pub const CHAOS_ITEMS: u64 = 20;

/// `stockledger chaos`: units of each item received before the run.
pub const CHAOS_SEED_QUANTITY: i64 = 1_000_000;

/// `stockledger chaos`: mean pause between two injected faults.
pub const CHAOS_FAULT_INTERVAL_MS: u64 = 1_000;

/// `stockledger chaos`: how long a held COMMIT reply is held (past the
/// transaction attempt deadline, so the resolution path runs).
pub const CHAOS_HELD_REPLY_MS: u64 = 4_000;

/// `stockledger chaos`: a writer's pause before sending a command again
/// after UNAVAILABLE.
pub const CHAOS_RETRY_PAUSE_MS: u64 = 50;

/// Most reservations one answer lists as about to expire (`GET
/// /v1/expiring-reservations`, the console's page); a longer list says it
/// was cut (`truncated`).
pub const MAX_EXPIRING_LISTED: i64 = 100;

/// Most items one answer lists as low (`GET /v1/low-stock`, `stockledger
/// low-stock`); a longer list says it was cut (`truncated`).
pub const MAX_LOW_STOCK_ITEMS: i64 = 1_000;

/// `stockledger chaos`: how long after the run's end a writer keeps sending
/// a command that got UNAVAILABLE, before it leaves it unacknowledged.
pub const CHAOS_RETRY_SECONDS: u64 = 30;

/// `stockledger chaos`: how long the read models may take to catch up after
/// the faults end, before the audit.
pub const CHAOS_SETTLE_SECONDS: u64 = 60;

/// How often `catch_up_fully` looks again whether the read models have
/// applied every committed event.
pub const CATCH_UP_POLL_MS: u64 = 10;

/// Connections of a pool that only runs migrations (`stockledger migrate`).
pub const MIGRATE_POOL_SIZE: usize = 1;

/// How long the key-lookup budget remembers a blocked client address at most;
/// longer than any wait a rate limiter of ours names.
pub const RATE_BLOCKED_MEMORY_SECONDS: u64 = 60;

/// How often a rebuild without a terminal prints a progress line.
pub const PROGRESS_LINE_INTERVAL_SECONDS: u64 = 2;

/// `stockledger chaos`: how long the run lasts and how many writers it has,
/// unless told otherwise; the connections of its direct (unproxied) pool for
/// seeding, the workers and the verdict; the fewest connections its command
/// path may have.
pub const CHAOS_DEFAULT_SECONDS: u64 = 30;
pub const CHAOS_DEFAULT_WRITERS: usize = 32;
pub const CHAOS_DIRECT_POOL_SIZE: usize = 4;
pub const CHAOS_MIN_POOL_SIZE: usize = 2;

/// `stockledger demo`: the time to live of the reservation that expires, how
/// long the story waits for it (a little past it), and how long the read
/// models may take to catch up before the expiry pass.
pub const DEMO_SHORT_TTL_SECONDS: i64 = 1;
pub const DEMO_EXPIRY_WAIT_MS: u64 = 1_200;
pub const DEMO_CATCH_UP_SECONDS: u64 = 10;

/// Event relay: most events read from the log and published as one batch.
/// Their acknowledgements are awaited together (pipelined), so a batch costs
/// about one round trip to the broker, not one per event.
pub const RELAY_BATCH_EVENTS: i64 = 10_000;

/// Event relay: most copies of its stream a JetStream cluster may be asked
/// to keep (`--stream-replicas`); JetStream itself allows no more than 5.
pub const MAX_RELAY_STREAM_REPLICAS: usize = 5;

/// Event relay: most publishes awaiting their acknowledgement at once.
pub const RELAY_MAX_ACKS_IN_FLIGHT: usize = 10_000;

/// Event relay: how long one acknowledgement may take before the batch is
/// given up and the relay finds out from the broker where it stands.
pub const RELAY_ACK_TIMEOUT_MS: u64 = 5_000;

/// Event relay: how long connecting to the broker, or one request to its
/// JetStream API, may take.
pub const RELAY_REQUEST_TIMEOUT_MS: u64 = 5_000;

/// Event relay: pause after a failure (broker or database unreachable)
/// before trying again; doubled each time up to the most.
pub const RELAY_RETRY_BACKOFF_START_MS: u64 = 100;
pub const RELAY_RETRY_BACKOFF_MAX_MS: u64 = 5_000;

/// Event relay: how often an idle relay looks at the log even without a
/// commit notification.
pub const RELAY_POLL_INTERVAL_MS: u64 = 200;

/// Event relay: the broker stream and the subject prefix unless configured.
pub const DEFAULT_RELAY_STREAM: &str = "STOCKLEDGER";
pub const DEFAULT_RELAY_SUBJECT_PREFIX: &str = "stockledger";

/// Longest broker stream name or subject prefix accepted.
pub const MAX_RELAY_NAME_LEN: usize = 64;

/// `GET /v1/events/stream`: subscribers at once in one server unless
/// configured; past it a subscriber is answered `UNAVAILABLE`. Each polls
/// the log while idle.
pub const MAX_EVENT_STREAM_SUBSCRIBERS: usize = 64;

/// `GET /v1/events/stream`: how often an idle subscriber's stream looks at
/// the log, and how often a comment line is sent when nothing else is (so
/// that proxies and clients can tell a quiet stream from a dead one).
pub const EVENT_STREAM_POLL_MS: u64 = 250;
pub const EVENT_STREAM_HEARTBEAT_SECONDS: u64 = 15;

/// `GET /v1/events/stream`: a stream ends after this long, however busy
/// (the client reconnects with `Last-Event-ID` and loses nothing), so no
/// answer outlives the checks made when it began by more than this.
pub const EVENT_STREAM_MAX_SECONDS: u64 = 3_600;

/// `GET /v1/events/stream`: the shortest time between two checks of an open
/// stream's key, whatever the key cache's time to live (which may be zero):
/// each check is a query.
pub const EVENT_STREAM_KEY_RECHECK_MIN_MS: u64 = 1_000;

/// How long an event stream that should have ended (its time is up, its key
/// revoked) may stay open before its connection is closed: the feed ends it
/// at its next event when its client reads, and a client that stopped
/// reading is cut off after this.
pub const EVENT_STREAM_STALL_GRACE_MS: u64 = 1_000;

/// `GET /v1/events/stream`: streams one key may hold open at once, so one
/// key (or one leaked key) cannot take every subscriber slot.
pub const MAX_EVENT_STREAMS_PER_KEY: usize = 8;

/// `GET /v1/events/stream`: events read from the log per look.
pub const EVENT_STREAM_BATCH: i64 = 500;

/// Sealer: most events chained and sealed as one block. A proof carries a
/// Merkle path of log2 of this (12 hashes) plus one entry per later block.
pub const SEAL_BLOCK_MAX_EVENTS: i64 = 4_096;

/// Sealer: how often it looks for events to seal. Events that arrive in
/// between go into one block, so a busy log gets full blocks and a quiet one
/// waits at most this long for its seal.
pub const SEAL_INTERVAL_MS: u64 = 1_000;

/// `verify`: most findings listed; past it they are only counted.
pub const MAX_VERIFY_FINDINGS: usize = 100;

/// `prove`: most later blocks a proof walks to its digest. A proof for an
/// event older than this many blocks is refused (take a digest nearer to it).
pub const MAX_PROOF_LATER_BLOCKS: i64 = 100_000;

/// `verify`: chain rows read and hashed as one window, and connections
/// reading windows side by side (in one shared snapshot). A window's rows
/// and events are held in memory while it is checked, so this bounds it.
pub const VERIFY_WINDOW_ROWS: i64 = 20_000;
pub const VERIFY_READERS: usize = 2;

/// `archive`: most events and most blocks in one segment (docs/archive.md).
/// A segment's seals live in its manifest, which is read whole, so the
/// block count bounds the manifest (about 450 bytes a block); the event
/// count bounds a file an auditor has to fetch to check one event in it.
pub const MAX_ARCHIVE_SEGMENT_EVENTS: u64 = 1 << 20;
pub const MAX_ARCHIVE_SEGMENT_BLOCKS: usize = 4_096;

/// `archive`: most segments one directory holds, and the largest manifest
/// and row line read; anything larger is not a file this release wrote.
pub const MAX_ARCHIVE_SEGMENTS: usize = 100_000;
pub const MAX_ARCHIVE_MANIFEST_BYTES: u64 = 8 << 20;
pub const MAX_ARCHIVE_LINE_BYTES: usize = 1 << 20;

/// `archive`: rows handed from the thread that reads (or writes) a file to
/// the task that checks them, per batch, and batches in flight.
pub const ARCHIVE_BATCH_ROWS: usize = 1_024;
pub const ARCHIVE_QUEUE_BATCHES: usize = 4;

/// `pack`: most partitions one run packs (oldest first; the next run goes
/// on), so that a run's length is bounded by what an operator asked for.
pub const MAX_PARTITIONS_PER_PACK: i64 = 64;

/// `pack`: longest one partition's `REINDEX … CONCURRENTLY` may run (a
/// partition of 2^24 events has about 4 GB of indexes), and longest it may
/// wait for the transactions it must outlast (an audit's snapshot, say)
/// before giving up; the next run drops what it left half built.
pub const PACK_STATEMENT_TIMEOUT_MS: u64 = 3_600_000;
pub const PACK_LOCK_WAIT_MS: u64 = 60_000;

/// `archive --detach`: most partitions of the log one run takes out (the
/// oldest first; the next run goes on), so a run's length is bounded.
pub const MAX_PARTITIONS_PER_DETACH: usize = 64;

/// `archive --detach`: longest one statement may run (the directory of a
/// partition of 2^24 events is one statement), longest a detach may wait
/// for the transactions it must outlast, and longest it waits for the
/// appenders that were running when it began to end (a command's attempt
/// ends within 3 s; a connection left idle in a transaction, within a
/// minute).
pub const DETACH_STATEMENT_TIMEOUT_MS: u64 = 3_600_000;
pub const DETACH_LOCK_WAIT_MS: u64 = 60_000;
pub const DETACH_WRITERS_WAIT_MS: u64 = 60_000;

/// The per-address connection cap is at most this fraction (1/N) of the total
/// cap, whatever `--max-connections-per-address` says: when the open-files
/// limit lowers the total below the per-address cap, one address could
/// otherwise take every connection and lock every other client out.
pub const MAX_CONNECTION_SHARE_PER_ADDRESS: usize = 4;

/// How often the server checks, in the background, whether the database
/// answers and its schema is current. `/readyz` answers from the last check,
/// so probes cost the database nothing however many there are.
pub const READINESS_CHECK_INTERVAL_MS: u64 = 1_000;

/// How long one readiness check may take before it counts as failed: a
/// database that answers slower than this is not ready to serve requests.
pub const READINESS_CHECK_TIMEOUT_MS: u64 = 2_000;

/// A readiness check older than this is not trusted (the checker is stuck):
/// `/readyz` answers 503 until a fresh one arrives.
pub const READINESS_MAX_AGE_MS: u64 = 10_000;

/// Requests to the routes that need no key (`/healthz`, `/readyz`,
/// `/metrics` without a key, `/openapi.json`), per client address: sustained
/// per second and burst. Probes and scrapers ask a few times a minute; this
/// bounds what an unauthenticated caller can make the server do.
pub const OPS_REQUESTS_PER_ADDRESS_PER_SECOND: u32 = 20;
pub const OPS_REQUESTS_PER_ADDRESS_BURST: u32 = 100;

/// A worker that panicked is started again after this back-off, doubled
/// after each panic up to the maximum, so a worker that fails at once does
/// not spin; it is reset once the worker has run `WORKER_HEALTHY_AFTER_MS`.
pub const WORKER_RESTART_BACKOFF_START_MS: u64 = 100;
pub const WORKER_RESTART_BACKOFF_MAX_MS: u64 = 30_000;
pub const WORKER_HEALTHY_AFTER_MS: u64 = 60_000;
