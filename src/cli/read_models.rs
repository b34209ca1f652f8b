//! Commands over the read models: run the workers, report and rebuild them,
//! audit the ledger, read history and stock.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use serde_json::json;
use stockledger::api::answers as api;
use stockledger::domain::{Item, Rejection};
use stockledger::projection::{self, rebuild, worker};
use stockledger::store::history::{figures, AsOf};
use stockledger::store::Store;
use tokio_util::sync::CancellationToken;

use super::commands::HistoryQuery;
use super::output::{stock_json, stock_text, Printer};
use super::Failure;

/// Cancels `token` on ctrl-c or SIGTERM.
pub fn cancel_on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing a SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        token.cancel();
    });
}

pub async fn project(store: &Store, printer: &Printer) -> Result<(), Failure> {
    let cancel = CancellationToken::new();
    cancel_on_signal(cancel.clone());
    printer.note("projection workers running; ctrl-c finishes the current batch and stops");
    worker::run_all(
        store.pool().clone(),
        // Nothing in this process commits commands: the runner finds them by
        // its poll.
        Default::default(),
        cancel,
        worker::WorkerConfig::default(),
    )
    .await;
    printer.note("stopped");
    Ok(())
}

pub async fn status(store: &Store, printer: &Printer) -> Result<(), Failure> {
    let all = store.projection_status().await?;
    let mut text = format!(
        "{:<20} {:<11} {:>16} {:>12} {:>11} {:>9}  definition",
        "projection", "state", "checkpoint", "applied", "lag events", "lag s"
    );
    for s in &all {
        text.push_str(&format!(
            "\n{:<20} {:<11} {:>16} {:>12} {:>11} {:>9.1}  {}",
            s.name,
            s.state,
            s.live.checkpoint.to_string(),
            s.live.events_applied,
            format!(
                "{}{}",
                if s.live.lag_capped { ">=" } else { "" },
                s.live.lag_events
            ),
            s.live.lag_seconds,
            if s.definition_current {
                "current"
            } else {
                "stale: rebuild it"
            }
        ));
        if let Some(r) = &s.rebuild {
            text.push_str(&format!(
                "\n{:<20} {:<11} {:>16} {:>12} {:>11}",
                "",
                "(copy)",
                r.checkpoint.to_string(),
                r.events_applied,
                r.lag_events
            ));
        }
    }
    printer.value(&api::projections(all), &text);
    Ok(())
}

pub async fn rebuild_cmd(
    store: &Store,
    name: Option<String>,
    all: bool,
    archive: Option<&stockledger::seal::archive::Archive>,
    printer: &Printer,
) -> Result<(), Failure> {
    let targets: Vec<&'static dyn projection::ReadModel> = match (name, all) {
        (_, true) => projection::ALL.to_vec(),
        (Some(n), false) => vec![projection::by_name(&n).ok_or_else(|| {
            stockledger::domain::Rejection::invalid(
                "name",
                format!(
                    "unknown projection {n:?}; known: {}",
                    projection::ALL
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?],
        (None, false) => {
            return Err(stockledger::domain::Rejection::invalid(
                "name",
                "name a projection or pass --all",
            )
            .into())
        }
    };
    let mut display = Progress::new(&targets, printer.json);
    let verifier: &dyn rebuild::VerifyCopies = match archive {
        Some(a) => &stockledger::audit::ArchiveReplayVerifier(a),
        None => &stockledger::audit::ReplayVerifier,
    };
    let reports = rebuild::rebuild_many(
        store.pool(),
        &targets,
        stockledger::limits::REBUILD_BATCH_EVENTS,
        verifier,
        |pr| display.update(pr),
    )
    .await
    .map_err(|e| match e {
        // Keeps its code (`HISTORY_ARCHIVED`, `UNAVAILABLE`) for the output.
        rebuild::RebuildError::Store(e) => Failure::from(e),
        other => anyhow::Error::from(other).into(),
    })?;
    display.finish();
    let mut docs = Vec::new();
    for r in &reports {
        let secs = r.fill.as_secs_f64();
        if !printer.json {
            println!(
                "{}: rebuilt from {} events in {:.2} s ({:.0} events/s), verified in {:.2} s, swapped in {:.3} s",
                r.projection,
                r.events,
                secs,
                r.events as f64 / secs.max(1e-9),
                r.verify.as_secs_f64(),
                r.swap.as_secs_f64()
            );
        }
        docs.push(json!({
            "projection": r.projection, "events": r.events, "fill_seconds": secs,
            "verify_seconds": r.verify.as_secs_f64(), "swap_seconds": r.swap.as_secs_f64(),
            "checkpoint": r.checkpoint.to_string(),
        }));
    }
    if printer.json {
        printer.value(&json!({ "rebuilt": docs }), "");
    }
    Ok(())
}

/// Progress bars on a terminal (one per projection), plain lines every few
/// seconds otherwise.
struct Progress {
    bars: Vec<(&'static str, indicatif::ProgressBar)>,
    _multi: Option<indicatif::MultiProgress>,
    quiet: bool,
    last_line: Instant,
}

impl Progress {
    fn new(ps: &[&'static dyn projection::ReadModel], quiet: bool) -> Self {
        let show = !quiet && std::io::stderr().is_terminal();
        let multi = show.then(indicatif::MultiProgress::new);
        let bars = match &multi {
            None => Vec::new(),
            Some(m) => ps
                .iter()
                .map(|p| {
                    let bar = m.add(indicatif::ProgressBar::new(0));
                    bar.set_style(
                        indicatif::ProgressStyle::with_template(
                            "{prefix:>20} [{bar:30}] {pos}/{len} events, {per_sec}, ETA {eta}",
                        )
                        .expect("valid template")
                        .progress_chars("=> "),
                    );
                    bar.set_prefix(p.name());
                    (p.name(), bar)
                })
                .collect(),
        };
        Progress {
            bars,
            _multi: multi,
            quiet,
            last_line: Instant::now(),
        }
    }

    fn update(&mut self, p: rebuild::Progress) {
        if let Some((_, bar)) = self.bars.iter().find(|(n, _)| *n == p.projection) {
            bar.set_length(p.total_estimate.max(p.events) as u64);
            bar.set_position(p.events as u64);
        } else if !self.quiet
            && self.last_line.elapsed()
                >= Duration::from_secs(stockledger::limits::PROGRESS_LINE_INTERVAL_SECONDS)
        {
            self.last_line = Instant::now();
            let rate = p.events as f64 / p.elapsed.as_secs_f64().max(1e-9);
            let left = (p.total_estimate - p.events).max(0) as f64 / rate.max(1.0);
            eprintln!(
                "{}: {}/{} events, {:.0} events/s, ETA {:.0} s",
                p.projection, p.events, p.total_estimate, rate, left
            );
        }
    }

    fn finish(&self) {
        for (_, bar) in &self.bars {
            bar.finish_and_clear();
        }
    }
}

pub async fn audit(
    store: &Store,
    from_archive: Option<&str>,
    printer: &Printer,
) -> Result<bool, Failure> {
    let report = match from_archive {
        None => stockledger::audit::audit(store.pool()).await?,
        Some(dir) => {
            let archive = super::seal::open_archive(dir)?;
            stockledger::audit::audit_from_archive(store.pool(), &archive).await?
        }
    };
    let mut text = format!(
        "audit: {} events in {} streams, {} items, {} orders; {:.2} s ({:.0} events/s)\ncompared: item_balances",
        report.events, report.streams, report.items, report.orders, report.seconds, report.events_per_second
    );
    for (name, at) in &report.projections {
        text.push_str(&format!(", {name} at {at}"));
    }
    if report.clean() {
        text.push_str("\nclean: the balances and every projection agree with the log");
    } else {
        text.push_str(&format!("\n{} difference(s):", report.difference_count));
        for d in &report.differences {
            text.push_str(&format!("\n  {d}"));
        }
        if report.difference_count as usize > report.differences.len() {
            text.push_str(&format!(
                "\n  ... and {} more",
                report.difference_count as usize - report.differences.len()
            ));
        }
    }
    printer.value(&serde_json::to_value(&report).expect("json"), &text);
    Ok(report.clean())
}

/// An expected receipt and its timeline, or the API's body with --json.
pub async fn show_expected(
    store: &Store,
    id: &stockledger::domain::ExpectedId,
    printer: &Printer,
) -> Result<(), Failure> {
    let Some((e, events)) = store.expected_receipt(id).await? else {
        return Err(Rejection::NotFound {
            what: "expected receipt",
            key: id.to_string(),
        }
        .into());
    };
    let view = stockledger::domain::ExpectationView::from(&e);
    let mut text = vec![crate::cli::output::expected_text(&view)];
    for ev in &events {
        text.push(format!("  #{} {}", ev.seq, ev.event));
    }
    printer.value(
        &serde_json::to_value(stockledger::api::answers::expected_receipt(&view, None))
            .expect("json"),
        &text.join("\n"),
    );
    Ok(())
}

/// What can be promised of an item: now, then a line per date stock is
/// due, or the API's body with --json.
pub async fn promise(store: &Store, item: &Item, printer: &Printer) -> Result<(), Failure> {
    // Without running workers, both read models the promise adds up are
    // caught up here, together (as `stock` does for its one); a running
    // worker keeps them together itself.
    let models: [&'static dyn stockledger::read_model::ReadModel; 2] = [
        &stockledger::read_model::STOCK_LEVELS,
        &stockledger::read_model::INCOMING,
    ];
    worker::catch_up_if_idle(store.pool(), &models).await?;
    let p = store
        .promise(item)
        .await?
        .ok_or_else(|| Rejection::never_received(item))?;
    let body = stockledger::api::answers::promise(item, &p.figures, &p.promise, p.position);
    let mut text = vec![format!(
        "{item}: {} available now ({} on hand, {} reserved), {} incoming",
        body.available_now, body.on_hand, body.reserved, body.incoming
    )];
    for d in &body.dates {
        text.push(format!(
            "  by {}: {} available ({:+} arriving)",
            d.date, d.available, d.arriving
        ));
    }
    printer.value(
        &serde_json::to_value(&body).expect("json"),
        &text.join("\n"),
    );
    Ok(())
}

/// The items low now: a line each, or the API's body with --json.
pub async fn low_stock(store: &Store, printer: &Printer) -> Result<(), Failure> {
    let (items, truncated) = store.low_stock().await?;
    let mut text: Vec<String> = items
        .iter()
        .map(|(item, row)| {
            let point = row.reorder_point.map_or("none".into(), |p| p.to_string());
            format!(
                "{item}: {} available, reorder point {point}, low since #{} ({})",
                row.available,
                row.position,
                row.since.format("%Y-%m-%d %H:%M:%S")
            )
        })
        .collect();
    if items.is_empty() {
        text.push("no item is low".into());
    }
    if truncated {
        text.push("(more are low; the list is cut)".into());
    }
    printer.value(
        &stockledger::api::answers::low_stock(&items, truncated),
        &text.join("\n"),
    );
    Ok(())
}

pub async fn history(store: &Store, query: HistoryQuery, printer: &Printer) -> Result<(), Failure> {
    match query {
        HistoryQuery::Order(id) => match store.order_history(&id).await? {
            Some(details) => printer.reservation_details(&details),
            None => {
                return Err(stockledger::domain::Rejection::NotFound {
                    what: "reservation for order",
                    key: id.to_string(),
                }
                .into())
            }
        },
        HistoryQuery::Item(item) => {
            let events = store.item_history(&item).await?;
            let mut text = format!("history of {item}: {} event(s)", events.len());
            let mut docs = Vec::new();
            for (i, e) in events.iter().enumerate() {
                let b = figures(&item, &events[..=i]);
                text.push_str(&format!(
                    "\n{:>8}  {}  {:<40} {:<60} on_hand {:>6}  reserved {:>6}  available {:>6}",
                    e.position,
                    e.recorded_at.format("%Y-%m-%d %H:%M:%S%.3f"),
                    format!("{} #{}", e.stream, e.seq),
                    e.event,
                    b.on_hand,
                    b.reserved,
                    b.available()
                ));
                let mut doc = stockledger::store::read::event_json(e);
                doc["after"] = stock_json(&item, b);
                docs.push(doc);
            }
            printer.value(
                &json!({"sku": item.sku, "location": item.location, "events": docs}),
                &text,
            );
        }
    }
    Ok(())
}

pub async fn stock(
    store: &Store,
    item: Item,
    as_of: Option<AsOf>,
    printer: &Printer,
) -> Result<(), Failure> {
    // `--json` prints what `GET /v1/stock/{sku}` answers (`api::stock`); the
    // text adds where the figures came from.
    if let Some(as_of) = as_of {
        let f = store.stock_as_of(&item, as_of).await?;
        let label = match f.answered {
            AsOf::Time(t) => format!("as of {}", t.to_rfc3339()),
            AsOf::Position(p) => format!("as of position {p}"),
        };
        let clamped = if f.clamped {
            ", moved back to the safe horizon"
        } else {
            ""
        };
        let b = f.figures;
        printer.value(
            &api::stock(&item, b, api::past(&f)),
            &format!(
                "{} ({label}{clamped}, replayed from the log)",
                stock_text(&item, b)
            ),
        );
        return Ok(());
    }
    let model: &dyn stockledger::read_model::ReadModel = &stockledger::read_model::STOCK_LEVELS;
    worker::catch_up_if_idle(store.pool(), &[model]).await?;
    // An item never received is NOT_FOUND, as in the API (docs/domain.md).
    let now = store
        .stock_now(&item)
        .await?
        .ok_or_else(|| Rejection::never_received(&item))?;
    let status = store.projection_status().await?;
    let s = status
        .iter()
        .find(|s| s.name == model.name())
        .expect("stock_levels is a read model");
    let b = now.figures;
    let behind = if now.from_balance {
        "from the write-side balance; the read model has not caught up".to_owned()
    } else if s.live.lag_events == 0 {
        "up to date with the log".to_owned()
    } else {
        format!(
            "{} event(s), {:.1} s behind the log",
            s.live.lag_events, s.live.lag_seconds
        )
    };
    printer.value(
        &api::stock(&item, b, api::now(now.position, now.recorded_at)),
        &format!("{} ({behind})", stock_text(&item, b)),
    );
    Ok(())
}
