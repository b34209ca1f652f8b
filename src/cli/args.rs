//! The command line's arguments, as clap reads them.

use clap::{Parser, Subcommand};

use super::commands::{EventsArgs, HistoryArgs, PromiseArgs, StockArgs, WriteCmd};
use super::relay::RelayArgs;
use super::seal::SealCmd;
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
    /// Rebuild the indexes of the log's full, sealed partitions packed, once
    /// each (REINDEX CONCURRENTLY: appends and reads go on), oldest first;
    /// as the owner (docs/archive.md).
    Pack,
    /// The auditor's commands (`cli/seal.rs`): archive, seal, digest,
    /// verify, prove and verify-proof.
    #[command(flatten)]
    Seal(SealCmd),
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
