//! Command-line arguments and dispatch.
//!
//! Exit codes: 0 success (replays included), 3 business rejection,
//! 2 usage error or `INVALID_ARGUMENT`, 1 anything else.

mod chaos;
mod demo;
mod output;
mod read_models;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::json;
use stockledger::db;
use stockledger::domain::{
    command, AdjustRequest, Command, CommandContext, Item, LineRequest, Location, ReceiveRequest,
    Rejection, ReservationId, ReserveRequest, Sku,
};
use stockledger::limits::MAX_EVENTS_PER_READ;
use stockledger::store::history::AsOf;
use stockledger::store::{Cursor, Store};

use output::Printer;

#[derive(Parser, Debug)]
#[command(
    name = "stockledger",
    version,
    about = "An event-sourced inventory ledger on PostgreSQL"
)]
pub struct Args {
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,

    /// The database. Without it, a private PostgreSQL cluster is started on demand.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    database_url: Option<String>,

    /// Log format on stderr: text or json.
    #[arg(long, env = "STOCKLEDGER_LOG_FORMAT", global = true, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,

    #[command(subcommand)]
    command: Cmd,
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
enum Cmd {
    /// Apply pending schema migrations (every other command does this too).
    Migrate,
    /// Record a delivery of stock.
    Receive {
        #[arg(long)]
        receipt_id: String,
        #[arg(long)]
        sku: String,
        #[arg(long)]
        location: Option<String>,
        #[arg(long, allow_negative_numbers = true)]
        quantity: i64,
    },
    /// Correct on-hand stock (count correction, damage, return to stock...).
    Adjust {
        #[arg(long)]
        adjustment_id: String,
        #[arg(long)]
        sku: String,
        #[arg(long)]
        location: Option<String>,
        #[arg(long, allow_negative_numbers = true)]
        delta: i64,
        #[arg(long)]
        reason: String,
    },
    /// Reserve stock for an order: every line, or none.
    Reserve {
        #[arg(long)]
        reservation_id: String,
        #[arg(long)]
        order_id: String,
        /// SKU[@LOCATION]:QTY; the quantity follows the last ':'. Repeatable.
        #[arg(long = "line", required = true)]
        lines: Vec<String>,
        /// Time to live in seconds (default 900).
        #[arg(long, allow_negative_numbers = true)]
        ttl: Option<i64>,
    },
    /// Confirm a reservation (the order was paid).
    Confirm { reservation_id: String },
    /// Release a reservation (the order was cancelled).
    Release {
        reservation_id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Show a reservation: state, lines, expiry and its event timeline.
    Show { reservation_id: String },
    /// Stock figures of one item, from the stock_levels read model (or, with
    /// --as-of / --as-of-position, replayed from the log at that moment).
    Stock {
        sku: String,
        #[arg(long)]
        location: Option<String>,
        /// A past moment (RFC 3339 time).
        #[arg(long, conflicts_with = "as_of_position")]
        as_of: Option<String>,
        /// A past log position.
        #[arg(long)]
        as_of_position: Option<i64>,
    },
    /// Run every projection worker until stopped (ctrl-c finishes the batch).
    Project,
    /// Report on or rebuild the read models.
    Projections {
        #[command(subcommand)]
        command: ProjectionsCmd,
    },
    /// Replay the whole log and compare with the balances and every read model.
    /// Exit 0 when everything agrees, 4 when a difference is found.
    Audit,
    /// An order's or an item's event timeline.
    History {
        #[arg(long, conflicts_with_all = ["sku", "location"])]
        order: Option<String>,
        #[arg(long)]
        sku: Option<String>,
        #[arg(long, requires = "sku")]
        location: Option<String>,
    },
    /// Read the log in safe commit order.
    Events {
        /// Cursor (TX:POSITION) from a previous page's `next`.
        #[arg(long)]
        after: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
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
enum ProjectionsCmd {
    /// Each projection's checkpoint, lag in events and seconds, and state.
    Status,
    /// Build a fresh copy from the start while the live one serves, verify it,
    /// and swap it in atomically.
    Rebuild {
        /// stock_levels, order_view or reservation_expiry.
        #[arg(required_unless_present = "all")]
        name: Option<String>,
        #[arg(long, conflicts_with = "name")]
        all: bool,
    },
}

/// How a run ended, mapped to the documented exit codes.
pub enum Failure {
    Rejected(Rejection),
    /// The audit found differences (exit 4); the report is already printed.
    AuditDifferences,
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Other(e)
    }
}

impl From<Rejection> for Failure {
    fn from(r: Rejection) -> Self {
        Failure::Rejected(r)
    }
}

impl From<stockledger::store::StoreError> for Failure {
    fn from(e: stockledger::store::StoreError) -> Self {
        Failure::Other(e.into())
    }
}

pub async fn run(args: Args) -> ExitCode {
    let printer = Printer { json: args.json };
    match dispatch(args.command, args.database_url.as_deref(), &printer).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Rejected(r)) => {
            printer.rejection(&r);
            ExitCode::from(exit_code(r.code()))
        }
        Err(Failure::AuditDifferences) => ExitCode::from(4),
        Err(Failure::Other(e)) => {
            printer.error(&e);
            ExitCode::from(1)
        }
    }
}

/// The documented exit code of a rejection: 2 for bad input, 3 for a
/// business refusal.
fn exit_code(code: stockledger::domain::RejectionCode) -> u8 {
    use stockledger::domain::RejectionCode::*;
    match code {
        InvalidArgument => 2,
        InsufficientStock | IdempotencyConflict | ReservationReleased | ReservationExpired
        | AlreadyConfirmed | ReservationNotFound | OrderAlreadyReserved | NotFound => 3,
    }
}

/// Opens the store, telling the user when we had to start a server for them.
async fn open(database_url: Option<&str>, printer: &Printer) -> Result<Store, Failure> {
    Ok(open_with_server(database_url, printer).await?.0)
}

async fn open_with_server(
    database_url: Option<&str>,
    printer: &Printer,
) -> Result<(Store, db::Server), Failure> {
    open_with_pool(
        database_url,
        stockledger::limits::DEFAULT_POOL_SIZE,
        printer,
    )
    .await
}

/// `open_with_server` with a pool of `pool_size` connections.
async fn open_with_pool(
    database_url: Option<&str>,
    pool_size: usize,
    printer: &Printer,
) -> Result<(Store, db::Server), Failure> {
    let (store, server) = db::open_with_pool(database_url, pool_size)
        .await
        .map_err(anyhow::Error::from)?;
    if let Some(started) = server.started {
        if started.initialised || started.started {
            let did = if started.initialised {
                "initialised and started"
            } else {
                "started"
            };
            printer.note(&format!(
                "{did} {}; it keeps running for the next commands. Set DATABASE_URL (e.g. postgres://user@host/db) to use another server.",
                server.description
            ));
        }
    }
    Ok((store, server))
}

fn actor() -> String {
    format!(
        "cli:{}",
        std::env::var("USER").unwrap_or_else(|_| "unknown".into())
    )
}

async fn execute(store: &Store, cmd: Command) -> Result<stockledger::domain::Outcome, Failure> {
    Ok(store.execute(cmd, CommandContext::new(actor())).await??)
}

async fn dispatch(cmd: Cmd, database_url: Option<&str>, printer: &Printer) -> Result<(), Failure> {
    // Validate before touching the database: bad input writes nothing and
    // needs no server.
    let command = match &cmd {
        Cmd::Receive {
            receipt_id,
            sku,
            location,
            quantity,
        } => Some(
            ReceiveRequest {
                receipt_id: receipt_id.clone(),
                sku: sku.clone(),
                location: location.clone(),
                quantity: *quantity,
            }
            .validate()?,
        ),
        Cmd::Adjust {
            adjustment_id,
            sku,
            location,
            delta,
            reason,
        } => Some(
            AdjustRequest {
                adjustment_id: adjustment_id.clone(),
                sku: sku.clone(),
                location: location.clone(),
                delta: *delta,
                reason: reason.clone(),
            }
            .validate()?,
        ),
        Cmd::Reserve {
            reservation_id,
            order_id,
            lines,
            ttl,
        } => Some(
            ReserveRequest {
                reservation_id: reservation_id.clone(),
                order_id: order_id.clone(),
                lines: lines
                    .iter()
                    .enumerate()
                    .map(|(i, l)| parse_line(i, l))
                    .collect::<Result<_, _>>()?,
                ttl_seconds: *ttl,
            }
            .validate()?,
        ),
        Cmd::Confirm { reservation_id } => Some(command::confirm(reservation_id)?),
        Cmd::Release {
            reservation_id,
            reason,
        } => Some(command::release(reservation_id, reason.as_deref())?),
        _ => None,
    };
    if let Some(command) = command {
        let store = open(database_url, printer).await?;
        let outcome = execute(&store, command).await?;
        printer.outcome(&outcome);
        return Ok(());
    }

    match cmd {
        Cmd::Migrate => {
            let server = db::server(database_url)
                .await
                .map_err(anyhow::Error::from)?;
            let store = Store::new(stockledger::store::pool::build(server.config.clone(), 1)?);
            let applied = store.migrate().await?;
            printer.value(
                &json!({"database": server.description, "applied": applied}),
                &if applied.is_empty() {
                    format!("{}: schema is current", server.description)
                } else {
                    format!("{}: applied migrations {applied:?}", server.description)
                },
            );
        }
        Cmd::Show { reservation_id } => {
            let id = ReservationId::parse("reservation_id", &reservation_id)?;
            let store = open(database_url, printer).await?;
            match store.reservation(&id).await? {
                Some(details) => printer.reservation_details(&details),
                None => {
                    return Err(Rejection::ReservationNotFound { reservation_id }.into());
                }
            }
        }
        Cmd::Stock {
            sku,
            location,
            as_of,
            as_of_position,
        } => {
            let item = Item {
                sku: Sku::parse("sku", &sku)?,
                location: Location::parse_or_default("location", location.as_deref())?,
            };
            let as_of = match (as_of, as_of_position) {
                (Some(t), _) => Some(AsOf::Time(
                    chrono::DateTime::parse_from_rfc3339(&t)
                        .map_err(|e| {
                            Rejection::invalid("as_of", format!("not an RFC 3339 time: {e}"))
                        })?
                        .with_timezone(&chrono::Utc),
                )),
                (None, Some(p)) if p >= 0 => Some(AsOf::Position(p)),
                (None, Some(_)) => {
                    return Err(Rejection::invalid("as_of_position", "must not be negative").into())
                }
                (None, None) => None,
            };
            let store = open(database_url, printer).await?;
            read_models::stock(&store, item, as_of, printer).await?;
        }
        Cmd::Project => {
            let (store, server) = open_with_server(database_url, printer).await?;
            read_models::project(&store, server.config, printer).await?;
        }
        Cmd::Projections { command } => {
            let store = open(database_url, printer).await?;
            match command {
                ProjectionsCmd::Status => read_models::status(&store, printer).await?,
                ProjectionsCmd::Rebuild { name, all } => {
                    read_models::rebuild_cmd(&store, name, all, printer).await?
                }
            }
        }
        Cmd::Audit => {
            let store = open(database_url, printer).await?;
            if !read_models::audit(&store, printer).await? {
                return Err(Failure::AuditDifferences);
            }
        }
        Cmd::History {
            order,
            sku,
            location,
        } => {
            let store = open(database_url, printer).await?;
            read_models::history(&store, order, sku, location, printer).await?;
        }
        Cmd::Events { after, limit } => {
            let after = match after {
                Some(a) => a.parse::<Cursor>()?,
                None => Cursor::START,
            };
            if !(1..=MAX_EVENTS_PER_READ).contains(&limit) {
                return Err(Rejection::invalid(
                    "limit",
                    format!("must be from 1 to {MAX_EVENTS_PER_READ}"),
                )
                .into());
            }
            let store = open(database_url, printer).await?;
            let page = store.events(after, limit, None).await?;
            printer.events(&page);
        }
        Cmd::Chaos(args) => chaos::run(args, database_url, printer).await?,
        Cmd::Serve(args) => serve::serve(args, database_url, printer).await?,
        Cmd::Openapi => print!("{}", stockledger::server::openapi::document()),
        Cmd::Keys { command } => {
            let store = open(database_url, printer).await?;
            serve::keys(command, &store, printer).await?;
        }
        Cmd::Demo => {
            let store = open(database_url, printer).await?;
            demo::run(&store, printer).await?;
        }
        Cmd::Receive { .. }
        | Cmd::Adjust { .. }
        | Cmd::Reserve { .. }
        | Cmd::Confirm { .. }
        | Cmd::Release { .. } => {
            unreachable!("commands are handled above")
        }
    }
    Ok(())
}

/// Parses `SKU[@LOCATION]:QTY`. The quantity follows the last ':' because a
/// SKU may itself contain ':'; '@' cannot appear in an id, so it separates
/// the location unambiguously.
fn parse_line(index: usize, text: &str) -> Result<LineRequest, Rejection> {
    let field = format!("lines[{index}]");
    let (item, qty) = text
        .rsplit_once(':')
        .ok_or_else(|| Rejection::invalid(&field, "expected SKU[@LOCATION]:QTY"))?;
    let quantity: i64 = qty
        .parse()
        .map_err(|_| Rejection::invalid(&format!("{field}.quantity"), "must be a whole number"))?;
    let (sku, location) = match item.split_once('@') {
        Some((s, l)) => (s, Some(l.to_owned())),
        None => (item, None),
    };
    Ok(LineRequest {
        sku: sku.to_owned(),
        location,
        quantity,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_line;

    #[test]
    fn lines_parse_with_the_quantity_after_the_last_colon() {
        let l = parse_line(0, "sku:with:colons@north:5").unwrap();
        assert_eq!(
            (l.sku.as_str(), l.location.as_deref(), l.quantity),
            ("sku:with:colons", Some("north"), 5)
        );
        let l = parse_line(0, "apple:2").unwrap();
        assert_eq!((l.sku.as_str(), l.location, l.quantity), ("apple", None, 2));
        assert_eq!(
            parse_line(3, "apple").unwrap_err().details()["field"],
            "lines[3]"
        );
        assert_eq!(
            parse_line(1, "apple:x").unwrap_err().details()["field"],
            "lines[1].quantity"
        );
    }
}
