//! Command-line arguments and dispatch.
//!
//! Exit codes: 0 success (replays included), 3 business rejection,
//! 2 usage error or `INVALID_ARGUMENT`, 4 the audit found differences, 5
//! `verify` or `verify-proof` found the log or a proof tampered with, 1
//! anything else.

mod args;
mod chaos;
mod commands;
mod demo;
mod output;
mod pack;
mod read_models;
mod relay;
mod seal;
mod serve;

use std::process::ExitCode;

use serde_json::json;
use stockledger::db;
use stockledger::domain::{Command, CommandContext, Rejection, ReservationId};
use stockledger::store::Store;

pub use args::Args;
use args::{Cmd, ProjectionsCmd};
use output::Printer;

/// How a run ended, mapped to the documented exit codes.
pub enum Failure {
    Rejected(Rejection),
    /// The audit found differences (exit 4); the report is already printed.
    AuditDifferences,
    /// `verify` or `verify-proof` found tampering (exit 5); already printed.
    TamperFound,
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
            ExitCode::from(r.code().exit_code())
        }
        Err(Failure::AuditDifferences) => ExitCode::from(4),
        Err(Failure::TamperFound) => ExitCode::from(5),
        Err(Failure::Other(e)) => {
            printer.error(&e);
            ExitCode::from(1)
        }
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

/// `store`, reading pages of the log (event pages, the event stream, the
/// relay) from the server `url` names, a hot standby, when one is given.
fn with_reads(store: Store, url: Option<&str>, pool_size: usize) -> Result<Store, Failure> {
    let Some(url) = url else {
        return Ok(store);
    };
    let config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| anyhow::anyhow!("--read-database-url: {e}"))?;
    let reads = stockledger::store::pool::build(config, pool_size)?;
    Ok(store.with_reads(reads))
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

/// An expected receipt and its timeline.
async fn show_expected(id: &str, url: Option<&str>, printer: &Printer) -> Result<(), Failure> {
    let id = stockledger::domain::ExpectedId::parse("expected_id", id)?;
    let store = open(url, printer).await?;
    read_models::show_expected(&store, &id, printer).await
}

/// What can be promised of an item now and by each date stock is due.
async fn promise(
    a: &commands::PromiseArgs,
    url: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    let item = a.validate()?;
    let store = open(url, printer).await?;
    read_models::promise(&store, &item, printer).await
}

async fn dispatch(cmd: Cmd, database_url: Option<&str>, printer: &Printer) -> Result<(), Failure> {
    // Each command is validated before `open` touches the database.
    match cmd {
        Cmd::Write(w) => send(w.validate()?, database_url, printer).await?,
        Cmd::Migrate => migrate(database_url, printer).await?,
        Cmd::Show { reservation_id } => show(&reservation_id, database_url, printer).await?,
        Cmd::Stock(a) => {
            let (item, as_of) = a.validate()?;
            let store = open(database_url, printer).await?;
            read_models::stock(&store, item, as_of, printer).await?;
        }
        Cmd::LowStock => {
            let store = open(database_url, printer).await?;
            read_models::low_stock(&store, printer).await?;
        }
        Cmd::ShowExpected { expected_id } => {
            show_expected(&expected_id, database_url, printer).await?
        }
        Cmd::Promise(a) => promise(&a, database_url, printer).await?,
        Cmd::Project => {
            let store = open(database_url, printer).await?;
            read_models::project(&store, printer).await?;
        }
        Cmd::Relay(args) => {
            let store = open(database_url, printer).await?;
            let store = with_reads(
                store,
                args.read_database_url.as_deref(),
                stockledger::limits::DEFAULT_POOL_SIZE,
            )?;
            relay::relay(&store, args, printer).await?;
        }
        Cmd::Projections { command } => projections(command, database_url, printer).await?,
        Cmd::Audit { from_archive } => {
            let store = open(database_url, printer).await?;
            if !read_models::audit(&store, from_archive.as_deref(), printer).await? {
                return Err(Failure::AuditDifferences);
            }
        }
        Cmd::Seal(c) => seal::dispatch(c, database_url, printer).await?,
        Cmd::History(a) => {
            let query = a.validate()?;
            let store = open(database_url, printer).await?;
            read_models::history(&store, query, printer).await?;
        }
        Cmd::Events(a) => {
            let (after, limit) = a.validate()?;
            let store = open(database_url, printer).await?;
            printer.events(&store.events(after, limit, None).await?);
        }
        Cmd::Chaos(args) => chaos::run(args, database_url, printer).await?,
        Cmd::Serve(args) => serve::serve(args, database_url, printer).await?,
        Cmd::Openapi => print!("{}", stockledger::server::openapi::document()),
        Cmd::Keys { command } => {
            serve::keys(command, &as_owner(database_url).await?, printer).await?
        }
        Cmd::Pack => pack::pack(&as_owner(database_url).await?, printer).await?,
        Cmd::Demo => {
            let store = open(database_url, printer).await?;
            demo::run(&store, printer).await?;
        }
    }
    Ok(())
}

/// The commands that act as the owner. Minting and revoking keys is the key
/// administrators' privilege (schema 0013), not the service's: on the
/// private cluster its superuser, on DATABASE_URL a login in
/// stockledger_keys_admin (or the owner's). Rebuilding a partition's indexes
/// is the owner's, as rebuilds are.
async fn as_owner(database_url: Option<&str>) -> Result<Store, Failure> {
    let (store, _) = db::open_owner(database_url)
        .await
        .map_err(anyhow::Error::from)?;
    Ok(store)
}

/// `projections status` and `projections rebuild`.
async fn projections(
    command: ProjectionsCmd,
    database_url: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    match command {
        ProjectionsCmd::Status => {
            read_models::status(&open(database_url, printer).await?, printer).await
        }
        // A rebuild creates and swaps tables: the owner's work.
        ProjectionsCmd::Rebuild { name, all, archive } => {
            let archive = archive.as_deref().map(seal::open_archive).transpose()?;
            let (store, _) = db::open_owner(database_url)
                .await
                .map_err(anyhow::Error::from)?;
            read_models::rebuild_cmd(&store, name, all, archive.as_ref(), printer).await
        }
    }
}

/// Sends one validated command and prints its answer.
async fn send(cmd: Command, database_url: Option<&str>, printer: &Printer) -> Result<(), Failure> {
    let store = open(database_url, printer).await?;
    let outcome = execute(&store, cmd).await?;
    printer.outcome(&outcome);
    Ok(())
}

async fn migrate(database_url: Option<&str>, printer: &Printer) -> Result<(), Failure> {
    let server = db::server(database_url)
        .await
        .map_err(anyhow::Error::from)?;
    let store = Store::new(stockledger::store::pool::build(
        server.config.clone(),
        stockledger::limits::MIGRATE_POOL_SIZE,
    )?);
    let applied = store.migrate().await?;
    let text = if applied.is_empty() {
        format!("{}: schema is current", server.description)
    } else {
        format!("{}: applied migrations {applied:?}", server.description)
    };
    printer.value(
        &json!({"database": server.description, "applied": applied}),
        &text,
    );
    Ok(())
}

async fn show(
    reservation_id: &str,
    database_url: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    let id = ReservationId::parse("reservation_id", reservation_id)?;
    let store = open(database_url, printer).await?;
    match store.reservation(&id).await? {
        Some(details) => printer.reservation_details(&details),
        None => {
            return Err(Rejection::ReservationNotFound {
                reservation_id: reservation_id.to_owned(),
            }
            .into())
        }
    }
    Ok(())
}
