//! Test support: a fresh, migrated database per test on a real PostgreSQL.
//!
//! The server is the one `DATABASE_URL` names, or else the private cluster the
//! program itself would use, so `cargo test` works on a fresh machine. Each
//! test creates its own database (so tests run in parallel without sharing
//! state) and drops it when the `TestDb` goes out of scope, even on panic.
#![allow(dead_code)]

pub mod link;
pub mod nats;
pub mod needs;
pub mod server;

use std::sync::atomic::{AtomicU64, Ordering};
use stockledger::domain::event::StockReceived;

use stockledger::db;
use stockledger::domain::{
    command, Command, CommandContext, LineRequest, Outcome, ReceiveRequest, Rejection,
    ReserveRequest,
};
use stockledger::store::{pool, Store};
use tokio::sync::OnceCell;
use tokio_postgres::NoTls;

static SERVER: OnceCell<tokio_postgres::Config> = OnceCell::const_new();
static COUNTER: AtomicU64 = AtomicU64::new(0);

async fn server() -> tokio_postgres::Config {
    SERVER
        .get_or_init(|| async {
            let url = std::env::var("DATABASE_URL").ok();
            db::server(url.as_deref())
                .await
                .expect("a PostgreSQL server for the tests (DATABASE_URL or the private cluster)")
                .config
        })
        .await
        .clone()
}

/// The login every test store connects as (a member of the service role).
pub const SERVICE_LOGIN: &str = "stockledger_test_service";

/// Rows per partition of the log and the chain in a test database: small,
/// so that most tests' logs span several partitions and every read, fold
/// and proof is exercised across them (production's size is 2^24 rows,
/// `schema/0021_partitioned_log.sql`).
pub const TEST_PARTITION_ROWS: i64 = 256;

/// Room made ahead in a test database: 16 partitions of the test size, for
/// the tests that write the log by hand.
pub const TEST_ROOM_AHEAD: i64 = 4096;

/// Cuts the partitions of an empty log and chain anew, `rows` per
/// partition: the migration made its first ones at production's size.
/// Room is made for `ahead` rows: tests that write the log by hand (as older
/// releases wrote it) do not make room as the store does.
pub async fn cut_log_anew(client: &mut tokio_postgres::Client, rows: i64, ahead: i64) {
    stockledger::store::room::partition_anew(client, rows, ahead)
        .await
        .expect("an empty log cut anew");
}

pub struct TestDb {
    pub store: Store,
    pub name: String,
    pub config: tokio_postgres::Config,
    admin: tokio_postgres::Config,
}

impl TestDb {
    pub async fn new() -> TestDb {
        Self::with_pool_size(32).await
    }

    pub async fn with_pool_size(size: usize) -> TestDb {
        Self::at_schema(size, i32::MAX).await
    }

    /// A database migrated only up to schema version `last`, as an older
    /// release left it.
    pub async fn at_schema(size: usize, last: i32) -> TestDb {
        let admin = server().await;
        let name = format!(
            "sltest_{}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            uuid::Uuid::new_v4().simple().to_string().get(..8).unwrap()
        );
        db::ensure_database(&admin, &name)
            .await
            .expect("create test database");
        let mut config = admin.clone();
        config.dbname(&name);
        let (mut client, conn) = config.connect(NoTls).await.expect("connect");
        tokio::spawn(conn);
        stockledger::app::migrate_through(&mut client, last)
            .await
            .expect("migrate");
        // The store connects as the service does in production: a login in
        // the service role, which may append to the log but not change it
        // (from schema 10 on; before it, as the superuser).
        let mut service = config.clone();
        if last >= 10 {
            stockledger::store::roles::ensure_service_login(&client, SERVICE_LOGIN)
                .await
                .expect("the service login");
            service.user(SERVICE_LOGIN);
        }
        if last >= 21 {
            cut_log_anew(&mut client, TEST_PARTITION_ROWS, TEST_ROOM_AHEAD).await;
        }
        let store = Store::new(pool::build(service, size).expect("pool"));
        TestDb {
            store,
            name,
            config,
            admin,
        }
    }

    /// A store that connects as the superuser, who acts as the owner: for
    /// rebuilds, which create and swap tables.
    pub fn owner_store(&self) -> Store {
        Store::new(pool::build(self.config.clone(), 8).expect("pool"))
    }

    /// A raw connection to the test database, for looking behind the store.
    pub async fn client(&self) -> tokio_postgres::Client {
        let (client, conn) = self.config.connect(NoTls).await.expect("connect");
        tokio::spawn(conn);
        client
    }

    /// The first column of every row of `sql`.
    pub async fn column<T: for<'a> tokio_postgres::types::FromSql<'a>>(&self, sql: &str) -> Vec<T> {
        self.client()
            .await
            .query(sql, &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    pub async fn count_events(&self) -> i64 {
        self.client()
            .await
            .query_one("SELECT count(*) FROM events", &[])
            .await
            .unwrap()
            .get(0)
    }

    pub async fn count_stream(&self, stream: &str) -> i64 {
        self.client()
            .await
            .query_one("SELECT count(*) FROM events WHERE stream = $1", &[&stream])
            .await
            .unwrap()
            .get(0)
    }

    /// (on_hand, reserved, confirmed) of an item in the write-side balances.
    pub async fn figures(&self, sku: &str) -> (i64, i64, i64) {
        let row = self
            .client()
            .await
            .query_opt(
                "SELECT on_hand, reserved, confirmed FROM item_balances WHERE sku = $1 AND location = 'default'",
                &[&sku],
            )
            .await
            .unwrap();
        row.map_or((0, 0, 0), |r| (r.get(0), r.get(1), r.get(2)))
    }

    pub async fn run(&self, cmd: Command) -> Result<Outcome, Rejection> {
        self.store
            .execute(cmd, CommandContext::new("test"))
            .await
            .expect("the store answers")
    }

    pub async fn receive(&self, receipt_id: &str, sku: &str, quantity: i64) {
        self.run(receive(receipt_id, sku, quantity))
            .await
            .expect("receipt accepted");
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        // Drop runs outside any async context we can block on, so the clean-up
        // gets a thread and a small runtime of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                if let Ok((client, conn)) = admin.connect(NoTls).await {
                    tokio::spawn(conn);
                    let _ = client
                        .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                        .await;
                }
            });
        })
        .join();
    }
}

pub fn receive(receipt_id: &str, sku: &str, quantity: i64) -> Command {
    ReceiveRequest {
        receipt_id: receipt_id.into(),
        sku: sku.into(),
        location: None,
        quantity,
        against: None,
    }
    .validate()
    .unwrap()
}

/// A receipt of `quantity` units of `sku` delivered against the expected
/// receipt `against`.
pub fn receive_against(receipt_id: &str, sku: &str, quantity: i64, against: &str) -> Command {
    ReceiveRequest {
        receipt_id: receipt_id.into(),
        sku: sku.into(),
        location: None,
        quantity,
        against: Some(against.into()),
    }
    .validate()
    .unwrap()
}

/// An expected receipt of `quantity` units of `sku` due on `on` (YYYY-MM-DD).
pub fn expect(id: &str, sku: &str, quantity: i64, on: &str) -> Command {
    stockledger::domain::ExpectRequest {
        expected_id: id.into(),
        sku: sku.into(),
        location: None,
        quantity,
        expected_on: on.into(),
    }
    .validate()
    .unwrap()
}

/// A change of the expected receipt `id` to `quantity` in all, due on `on`.
pub fn change_expected(id: &str, change_id: &str, quantity: i64, on: &str) -> Command {
    stockledger::domain::ChangeExpectedRequest {
        change_id: change_id.into(),
        quantity,
        expected_on: on.into(),
    }
    .validate(id)
    .unwrap()
}

/// A cancellation of the expected receipt `id`.
pub fn cancel_expected(id: &str) -> Command {
    stockledger::domain::CancelExpected::validate(id).unwrap()
}

/// A reservation of `lines` (sku, quantity) at the default location.
pub fn reserve(id: &str, order: &str, lines: &[(&str, i64)], ttl: Option<i64>) -> Command {
    ReserveRequest {
        reservation_id: id.into(),
        order_id: order.into(),
        lines: lines
            .iter()
            .map(|(sku, q)| LineRequest {
                sku: (*sku).into(),
                location: None,
                quantity: *q,
            })
            .collect(),
        ttl_seconds: ttl,
        backorder: false,
        latest_arrival: None,
    }
    .validate()
    .unwrap()
}

/// A reservation of `quantity` of `sku` that may wait for expected stock
/// (a backorder; a pre-order when nothing is on hand).
pub fn backorder_of(id: &str, order: &str, sku: &str, quantity: i64, ttl: Option<i64>) -> Command {
    ReserveRequest {
        reservation_id: id.into(),
        order_id: order.into(),
        lines: line_requests(&[(sku, quantity)]),
        ttl_seconds: ttl,
        backorder: true,
        latest_arrival: None,
    }
    .validate()
    .unwrap()
}

pub fn confirm(id: &str) -> Command {
    command::confirm(id).unwrap()
}

pub fn release(id: &str) -> Command {
    command::release(id, None).unwrap()
}

pub fn expire(id: &str) -> Command {
    command::expire(id).unwrap()
}

fn line_requests(lines: &[(&str, i64)]) -> Vec<LineRequest> {
    lines
        .iter()
        .map(|(sku, q)| LineRequest {
            sku: (*sku).into(),
            location: None,
            quantity: *q,
        })
        .collect()
}

/// A partial confirm of `lines` (sku, quantity) of reservation `id`.
pub fn confirm_lines(id: &str, confirmation_id: &str, lines: &[(&str, i64)]) -> Command {
    stockledger::domain::ConfirmLinesRequest {
        confirmation_id: confirmation_id.into(),
        lines: line_requests(lines),
    }
    .validate(id)
    .unwrap()
}

/// A partial release of `lines` (sku, quantity) of reservation `id`.
pub fn release_lines(id: &str, release_id: &str, lines: &[(&str, i64)]) -> Command {
    stockledger::domain::ReleaseLinesRequest {
        release_id: release_id.into(),
        lines: line_requests(lines),
        reason: None,
    }
    .validate(id)
    .unwrap()
}

/// Extends reservation `id` to `ttl` seconds from now.
pub fn extend(id: &str, extension_id: &str, ttl: i64) -> Command {
    stockledger::domain::ExtendRequest {
        extension_id: extension_id.into(),
        ttl_seconds: ttl,
    }
    .validate(id)
    .unwrap()
}

/// The reservation state in a successful answer, as the API spells it.
pub fn state_of(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Reservation { view, .. } => view.state.as_str(),
        Outcome::NotDue { .. } => "NOT_DUE",
        _ => "OTHER",
    }
}

/// A cheap random number below `n` (tests only need variety, not quality).
pub fn random_below(n: u64) -> u64 {
    (uuid::Uuid::new_v4().as_u128() as u64) % n.max(1)
}

/// Appends `event` at (`stream`, `seq`) by hand, laid out as the store lays
/// it out (`log_row::encode`), without touching balances; returns its position.
pub async fn insert_event(
    client: &impl tokio_postgres::GenericClient,
    stream: &str,
    seq: i32,
    event: &stockledger::domain::Event,
    meta: &serde_json::Value,
) -> i64 {
    // As a release before event versions (schema 20) wrote it: version 1,
    // which the column's default says where it exists.
    let row = stockledger::store::log_row::encode_in(event, 1);
    client
        .query_one(
            "INSERT INTO events (stream, seq, type, data, metadata, order_id, skus, locations, quantities)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING position",
            &[
                &stream,
                &seq,
                &event.type_name(),
                &row.data,
                meta,
                &row.order_id,
                &row.skus,
                &row.locations,
                &row.quantities,
            ],
        )
        .await
        .unwrap()
        .get(0)
}

/// Appends a valid receipt inside `tx` by hand, with its balance, exactly as
/// the store would; lets a test hold a writing transaction open.
pub async fn raw_receipt(
    tx: &tokio_postgres::Transaction<'_>,
    receipt_id: &str,
    sku: &str,
    quantity: u32,
) -> i64 {
    use stockledger::domain::command::Receive;
    use stockledger::domain::{Event, EventMetadata, Item, Location, Sku};
    let item = Item {
        sku: Sku::parse("sku", sku).unwrap(),
        location: Location::parse_or_default("location", None).unwrap(),
    };
    let event = Event::StockReceived(StockReceived {
        sku: item.sku.clone(),
        location: item.location.clone(),
        quantity,
    });
    let meta = serde_json::to_value(EventMetadata {
        command_id: uuid::Uuid::new_v4(),
        actor: "test".into(),
        fingerprint: Some(Receive::fingerprint_of(&item, quantity, None)),
        ..Default::default()
    })
    .unwrap();
    let position = insert_event(tx, &format!("receipt:{receipt_id}"), 1, &event, &meta).await;
    tx.execute(
        "INSERT INTO item_balances AS b (sku, location, on_hand) VALUES ($1, 'default', $2)
         ON CONFLICT (sku, location) DO UPDATE SET on_hand = b.on_hand + EXCLUDED.on_hand",
        &[&sku, &i64::from(quantity)],
    )
    .await
    .unwrap();
    position
}

impl TestDb {
    /// A key-value connection string for this database, for running the binary.
    pub fn url(&self) -> String {
        key_value(&self.config, &self.name)
    }

    /// A key-value connection string for the server as its administrator
    /// (who may create databases), for a binary that makes its own.
    pub fn admin_url(&self) -> String {
        key_value(&self.admin, self.admin.get_dbname().unwrap_or("postgres"))
    }

    /// Brings every live projection up to date with everything committed.
    pub async fn project_all(&self) {
        let current = stockledger::projection::worker::catch_up_fully(
            self.store.pool(),
            std::time::Duration::from_secs(30),
        )
        .await
        .unwrap();
        assert!(current, "projections did not catch up");
    }

    /// Waits until every live projection has applied every committed event.
    pub async fn wait_caught_up(&self) {
        let client = self.store.pool().get().await.unwrap();
        for _ in 0..1500 {
            let statuses = stockledger::projection::status::status(&**client)
                .await
                .unwrap();
            if statuses.iter().all(|s| s.live.lag_events == 0) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("projections did not catch up");
    }

    /// Runs the audit and asserts it found nothing.
    pub async fn assert_audit_clean(&self) -> stockledger::audit::AuditReport {
        let report = stockledger::audit::audit(self.store.pool()).await.unwrap();
        assert!(
            report.clean(),
            "audit differences: {:#?}",
            report.differences
        );
        report
    }
}

/// A transfer of `quantity` of `sku` from one location to another.
pub fn transfer(id: &str, sku: &str, from: &str, to: &str, quantity: i64) -> Command {
    stockledger::domain::TransferRequest {
        transfer_id: id.into(),
        sku: sku.into(),
        from_location: from.into(),
        to_location: to.into(),
        quantity,
    }
    .validate()
    .unwrap()
}

/// Runs the `stockledger` binary with `args` on the database `url` names;
/// its exit code and the JSON document it printed.
pub fn cli_json(url: &str, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stockledger"))
        .args(args)
        .arg("--json")
        .env("DATABASE_URL", url)
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), doc)
}

/// A stock count of `sku` at the default location.
pub fn count(id: &str, sku: &str, counted: i64) -> Command {
    stockledger::domain::CountRequest {
        count_id: id.into(),
        sku: sku.into(),
        location: None,
        counted,
    }
    .validate()
    .unwrap()
}

/// A per-order limit of `max` (`None`: lifted) on `sku` at the default location.
pub fn limit(id: &str, sku: &str, max: Option<i64>) -> Command {
    stockledger::domain::LimitRequest {
        limit_id: id.into(),
        sku: sku.into(),
        location: None,
        max_per_order: max,
    }
    .validate()
    .unwrap()
}

/// A reorder point of `point` (`None`: removed) on `sku` at the default location.
pub fn reorder_point(id: &str, sku: &str, point: Option<i64>) -> Command {
    stockledger::domain::ReorderPointRequest {
        reorder_point_id: id.into(),
        sku: sku.into(),
        location: None,
        reorder_point: point,
    }
    .validate()
    .unwrap()
}

/// An adjustment of `delta` to `sku` at the default location.
pub fn adjust(adjustment_id: &str, sku: &str, delta: i64) -> Command {
    stockledger::domain::AdjustRequest {
        adjustment_id: adjustment_id.into(),
        sku: sku.into(),
        location: None,
        delta,
        reason: "count".into(),
    }
    .validate()
    .unwrap()
}

/// The name of reservation `id`'s stream (prefixes are spelled only in
/// `domain::stream`).
pub fn res_stream(id: impl std::fmt::Display) -> String {
    format!(
        "{}{id}",
        stockledger::domain::StreamKind::Reservation.prefix()
    )
}

/// The name of receipt `id`'s stream.
pub fn receipt_stream(id: impl std::fmt::Display) -> String {
    format!("{}{id}", stockledger::domain::StreamKind::Receipt.prefix())
}

/// Writes `n` receipts, and a reservation for every third, confirmed or
/// released in turn: a log with every kind of stock movement.
pub async fn write_mixed(db: &TestDb, tag: &str, n: usize) {
    for i in 0..n {
        let sku = format!("{tag}-sku-{}", i % 5);
        db.receive(&format!("{tag}-in-{i}"), &sku, 3).await;
        if i % 3 == 0 {
            let id = format!("{tag}-r-{i}");
            db.run(reserve(&id, &format!("{tag}-o-{i}"), &[(&sku, 1)], None))
                .await
                .unwrap();
            let next = if i % 2 == 0 {
                confirm(&id)
            } else {
                release(&id)
            };
            db.run(next).await.unwrap();
        }
    }
}

/// The bound of `eventually`: no test asserts how fast anything happens; this
/// only makes a broken build fail instead of hanging, far above any normal
/// run.
pub const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(300);

/// Polls `check` until it holds; panics with `what` if it never does (within
/// `HANG_GUARD`). What a test asserts with it is that something comes true,
/// never how soon.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let waited = tokio::time::timeout(HANG_GUARD, async {
        while !check().await {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}: never came true");
}

/// A free TCP port on the loopback interface.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The plan of `sql` with `params`, one line per row of EXPLAIN.
pub async fn explain(
    client: &tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> String {
    let rows = client
        .query(&format!("EXPLAIN {sql}"), params)
        .await
        .unwrap();
    rows.iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `config` as a key-value connection string to `dbname`.
fn key_value(config: &tokio_postgres::Config, dbname: &str) -> String {
    let mut parts = Vec::new();
    for h in config.get_hosts() {
        match h {
            tokio_postgres::config::Host::Tcp(name) => parts.push(format!("host={name}")),
            tokio_postgres::config::Host::Unix(path) => {
                parts.push(format!("host={}", path.display()))
            }
        }
    }
    if let Some(p) = config.get_ports().first() {
        parts.push(format!("port={p}"));
    }
    if let Some(u) = config.get_user() {
        parts.push(format!("user={u}"));
    }
    parts.push(format!("dbname={dbname}"));
    parts.join(" ")
}

/// Chains and seals everything not sealed yet, as `stockledger seal` does.
pub async fn seal_all(db: &TestDb) {
    let sealed = stockledger::seal::sealer::catch_up(db.store.pool())
        .await
        .unwrap();
    assert!(sealed.is_some(), "no other sealer runs on a test database");
}

/// The latest seal, as `stockledger digest` prints it.
pub async fn digest(db: &TestDb) -> stockledger::seal::Digest {
    db.store.digest().await.unwrap().expect("a seal")
}

/// Runs `sql` as the superuser with every trigger switched off, as an
/// administrator who wants to rewrite history would.
pub async fn as_superuser(db: &TestDb, sql: &str) {
    let client = db.client().await;
    client
        .batch_execute(&format!(
            "BEGIN; SET LOCAL session_replication_role = replica; {sql}; COMMIT"
        ))
        .await
        .unwrap();
}

/// The log position of event `seq` of `stream`.
pub async fn position_of(db: &TestDb, stream: &str, seq: i32) -> i64 {
    db.client()
        .await
        .query_one(
            "SELECT position FROM events WHERE stream = $1 AND seq = $2",
            &[&stream, &seq],
        )
        .await
        .unwrap()
        .get(0)
}

/// How many partitions of `parent` (`events` or `event_chain`) are attached.
pub async fn attached_partitions(db: &TestDb, parent: &str) -> i64 {
    db.client()
        .await
        .query_one(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = $1::text::regclass",
            &[&parent],
        )
        .await
        .unwrap()
        .get(0)
}

/// Whether every statement of `db` waiting for a lock is gone well inside
/// the lock timeout (half of it), which alone would end a wait: a read whose
/// request gave up was cancelled in the database, not left waiting.
pub async fn no_statement_waits_for_a_lock(db: &TestDb) -> bool {
    let waiting = async {
        loop {
            let n: Vec<i64> = db
                .column(
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                )
                .await;
            if n == vec![0] {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    let within = std::time::Duration::from_millis(stockledger::limits::LOCK_TIMEOUT_MS / 2);
    tokio::time::timeout(within, waiting).await.is_ok()
}
