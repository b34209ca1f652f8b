//! The command line's arguments, as clap reads them.

use clap::{Args as ClapArgs, Parser, Subcommand};

use super::commands::WriteCmd;
use super::{chaos, serve};

#[derive(Parser, Debug)]
#[command(
    name = "stockledger",
    version,
    about = "An event-sourced inventory ledger on PostgreSQL"
)]
pub struct Args {
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// The database. Without it, a private PostgreSQL cluster is started on demand.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    pub database_url: Option<String>,

    /// Log format on stderr: text or json.
    #[arg(long, env = "STOCKLEDGER_LOG_FORMAT", global = true, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,

    #[command(subcommand)]
    pub command: Cmd,
}

impl Args {
    pub fn is_serve(&self) -> bool {
        matches!(self.command, Cmd::Serve(_))
    }

    pub fn json_logs(&self) -> bool {
        self.log_format == "json"
    }
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Apply pending schema migrations (every other command does this too).
    Migrate,
    /// The commands that write (`cli/commands.rs`).
    #[command(flatten)]
    Write(WriteCmd),
    /// Show a reservation: state, lines, expiry and its event timeline.
    Show { reservation_id: String },
    /// Stock figures of one item, from the stock_levels read model (or, with
    /// --as-of / --as-of-position, replayed from the log at that moment).
    Stock(StockArgs),
    /// The items low now (available below their reorder point), from the
    /// low_stock read model.
    LowStock,
    /// Show an expected receipt: its item, date, units delivered and still
    /// to come, read from the log.
    ShowExpected { expected_id: String },
    /// What can be promised of an item now and by each date stock is due
    /// (on hand − reserved − backordered + what is expected by then), from the
    /// stock_levels and incoming read models.
    Promise(PromiseArgs),
    /// Run every projection worker until stopped (ctrl-c finishes the batch).
    Project,
    /// Publish every committed event, in commit order, exactly once to a NATS
    /// JetStream stream (until stopped); `relay status` shows where it stands.
    Relay(RelayArgs),
    /// Report on or rebuild the read models.
    Projections {
        #[command(subcommand)]
        command: ProjectionsCmd,
    },
    /// Replay the whole log and compare with the balances and every read model.
    /// Exit 0 when everything agrees, 4 when a difference is found.
    Audit {
        /// Replay the archived blocks from this archive directory's files
        /// (`stockledger archive`) and the rest from the database.
        #[arg(long, value_name = "DIR")]
        from_archive: Option<String>,
    },
    /// Write every sealed block not archived yet into DIR: compressed rows
    /// with their chain hashes, the seals, and a manifest per segment, each
    /// block verified first and each file read back (docs/archive.md).
    Archive {
        #[arg(long, value_name = "DIR")]
        dir: String,
        /// Archive no block after this one.
        #[arg(long)]
        through_block: Option<i64>,
        /// Then take out of the database, as the owner, the oldest
        /// partitions of the log and the chain that the archive holds and
        /// nothing still needs (docs/archive.md, "Detaching").
        #[arg(long)]
        detach: bool,
        /// With --detach: forget the archived streams of partitions that
        /// left more than DAYS days ago. Their ids may then be used again,
        /// and their orders reserved again (docs/archive.md, decision 3).
        #[arg(long, value_name = "DAYS", requires = "detach")]
        forget_ids_after_days: Option<u32>,
    },
    /// Rebuild the indexes of the log's full, sealed partitions packed, once
    /// each (REINDEX CONCURRENTLY: appends and reads go on), oldest first;
    /// as the owner (docs/archive.md).
    Pack,
    /// Chain and seal every event not sealed yet (a server's sealer does
    /// this by itself; this is for a ledger without one).
    Seal,
    /// Print the latest seal as a digest to keep outside the database
    /// (`--json` writes the file `verify --digest` and `prove` read).
    Digest,
    /// Recompute the chain and the seals from the log and check them, and a
    /// digest kept outside. Exit 0 when everything matches, 5 when not.
    Verify {
        /// A digest file (`stockledger digest --json`).
        #[arg(long)]
        digest: Option<String>,
        /// Read the archived blocks from this archive directory's files,
        /// and only the blocks after them from the database.
        #[arg(long, value_name = "DIR")]
        archive: Option<String>,
    },
    /// Print a proof (JSON) that the event at POSITION is in the log under a
    /// digest (the latest, or --digest FILE).
    Prove {
        position: i64,
        #[arg(long)]
        digest: Option<String>,
        /// Prove an archived event from this archive directory's files.
        #[arg(long, value_name = "DIR")]
        archive: Option<String>,
    },
    /// Check a proof file without a database, against a digest you kept
    /// (never the one inside the proof). Exit 0 when it holds, 5 when not.
    VerifyProof {
        file: String,
        /// Your own copy of the digest (`stockledger digest --json`).
        #[arg(long)]
        digest: String,
    },
    /// An order's or an item's event timeline.
    History(HistoryArgs),
    /// Read the log in safe commit order.
    Events(EventsArgs),
    /// Tell the story of a flash sale end to end, on fresh ids.
    Demo,
    /// Serve the HTTP API, with the projection and expiry workers.
    Serve(serve::ServeArgs),
    /// Print the HTTP API's OpenAPI 3.1 description (kept in docs/openapi.json).
    Openapi,
    /// Manage API keys.
    Keys {
        #[command(subcommand)]
        command: serve::KeysCmd,
    },
    /// Mixed load with faults injected between the command path and
    /// PostgreSQL; prints acknowledged / lost / duplicated / oversold and the
    /// audit. Exit 0 when nothing was lost and the audit is clean, else 4.
    Chaos(chaos::ChaosArgs),
}

#[derive(ClapArgs, Debug)]
pub struct PromiseArgs {
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
}

#[derive(ClapArgs, Debug)]
pub struct StockArgs {
    pub sku: String,
    #[arg(long)]
    pub location: Option<String>,
    /// A past moment (RFC 3339 time); not with --as-of-position.
    #[arg(long)]
    pub as_of: Option<String>,
    /// A past log position.
    #[arg(long, allow_hyphen_values = true)]
    pub as_of_position: Option<String>,
}

#[derive(ClapArgs, Debug)]
pub struct HistoryArgs {
    #[arg(long, conflicts_with_all = ["sku", "location"])]
    pub order: Option<String>,
    #[arg(long)]
    pub sku: Option<String>,
    #[arg(long, requires = "sku")]
    pub location: Option<String>,
}

#[derive(ClapArgs, Debug)]
pub struct EventsArgs {
    /// Cursor (TX:POSITION) from a previous page's `next`.
    #[arg(long)]
    pub after: Option<String>,
    /// Events in the page, from 1 to the maximum (default: the API's default).
    #[arg(long, allow_hyphen_values = true)]
    pub limit: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum ProjectionsCmd {
    /// Each projection's checkpoint, lag in events and seconds, and state.
    Status,
    /// Build a fresh copy from the start while the live one serves, verify it,
    /// and swap it in atomically. Once partitions were detached, the copy
    /// starts from its snapshot at the cut and needs --archive.
    Rebuild {
        /// The read model's name (see `projections status`).
        #[arg(required_unless_present = "all")]
        name: Option<String>,
        #[arg(long, conflicts_with = "name")]
        all: bool,
        /// Verify the copy against a replay of this archive directory's
        /// files and the log (docs/archive.md, decision 5).
        #[arg(long, value_name = "DIR")]
        archive: Option<String>,
    },
}

#[derive(clap::Args, Debug)]
pub struct RelayArgs {
    #[command(subcommand)]
    pub command: Option<RelayCmd>,
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Publish the whole log again to a stream that was deleted or purged
    /// (without it, the relay stops with an error when that happened).
    #[arg(long)]
    pub republish: bool,
    /// A hot standby to read the log from (the relay's reads only); the
    /// checkpoint is written on DATABASE_URL.
    #[arg(long, env = "STOCKLEDGER_READ_DATABASE_URL", hide_env_values = true)]
    pub read_database_url: Option<String>,
    /// Most events per published batch (1 to 10000).
    #[arg(long, default_value_t = stockledger::limits::RELAY_BATCH_EVENTS)]
    pub batch_events: i64,
}

/// Where the relay publishes. Also read by `serve --relay`.
#[derive(clap::Args, Debug, Clone)]
pub struct BrokerArgs {
    /// The NATS server.
    #[arg(
        long,
        env = "STOCKLEDGER_NATS_URL",
        hide_env_values = true,
        default_value = "nats://127.0.0.1:4222"
    )]
    pub nats_url: String,
    /// The JetStream stream (created if absent).
    #[arg(long, env = "STOCKLEDGER_RELAY_STREAM", default_value = stockledger::limits::DEFAULT_RELAY_STREAM)]
    pub stream: String,
    /// Subjects are <prefix>.<event type>.<sku or reservation id>.
    #[arg(long, env = "STOCKLEDGER_RELAY_SUBJECT_PREFIX", default_value = stockledger::limits::DEFAULT_RELAY_SUBJECT_PREFIX)]
    pub subject_prefix: String,
    /// Copies of the stream a JetStream cluster keeps, when the relay creates
    /// it (3 on a three-server cluster: a message acknowledged survives the
    /// loss of any one server).
    #[arg(long, env = "STOCKLEDGER_RELAY_STREAM_REPLICAS", default_value_t = 1)]
    pub stream_replicas: usize,
}

#[derive(Subcommand, Debug)]
pub enum RelayCmd {
    /// Each relay's cursor, last message id, events published and lag.
    Status,
}
