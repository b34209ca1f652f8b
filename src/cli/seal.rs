//! The auditor's commands: `seal`, `digest`, `verify`, `prove` and
//! `verify-proof` (docs/auditing.md). Only `seal` writes; `verify-proof`
//! touches no database.

use std::path::Path;
use std::time::Instant;

use serde_json::json;
use stockledger::seal::archive::Archive;
use stockledger::seal::{self, Digest, Finding};
use stockledger::store::{detach, Store};

use super::output::Printer;
use super::{open, Failure};
use clap::Subcommand;

/// The auditor's commands, flattened into the command line's list.
#[derive(Subcommand, Debug)]
pub enum SealCmd {
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
}

/// Runs one of the auditor's commands.
pub async fn dispatch(
    cmd: SealCmd,
    database_url: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    match cmd {
        SealCmd::VerifyProof { file, digest } => verify_proof(&file, &digest, printer),
        SealCmd::Seal => seal_now(&open(database_url, printer).await?, printer).await,
        SealCmd::Digest => digest(&open(database_url, printer).await?, printer).await,
        SealCmd::Verify { digest, archive } => {
            let store = open(database_url, printer).await?;
            verify(&store, digest.as_deref(), archive.as_deref(), printer).await
        }
        SealCmd::Prove {
            position,
            digest,
            archive,
        } => {
            let store = open(database_url, printer).await?;
            prove(&store, position, digest.as_deref(), archive.as_deref()).await
        }
        SealCmd::Archive {
            dir,
            through_block,
            detach,
            forget_ids_after_days,
        } => {
            // Taking partitions out is the owner's; writing files is not.
            let store = match detach {
                true => {
                    let (store, _) = super::db::open_owner(database_url)
                        .await
                        .map_err(anyhow::Error::from)?;
                    store
                }
                false => open(database_url, printer).await?,
            };
            let detach = detach.then_some(Detach {
                forget_ids_after_days,
            });
            archive(&store, &dir, through_block, detach, printer).await
        }
    }
}

pub async fn seal_now(store: &Store, printer: &Printer) -> Result<(), Failure> {
    let sealed = seal::sealer::catch_up(store.pool()).await?;
    let text = match sealed {
        Some(n) => format!("sealed {n} events"),
        None => "another sealer runs (a server): it seals the log".to_owned(),
    };
    printer.value(
        &json!({"sealed": sealed, "elsewhere": sealed.is_none()}),
        &text,
    );
    Ok(())
}

fn digest_text(d: &Digest) -> String {
    format!(
        "block {} through chain row {} (log position {}), sealed {}\nchain head {}\nseal       {}\nkeep it: stockledger digest --json > digest.json",
        d.block, d.last_seq, d.last_position, d.sealed_at, d.chain_head, d.seal
    )
}

pub async fn digest(store: &Store, printer: &Printer) -> Result<(), Failure> {
    match store.digest().await? {
        Some(d) => printer.value(&serde_json::to_value(&d).expect("json"), &digest_text(&d)),
        None => printer.value(
            &json!(null),
            "nothing is sealed yet (a server's sealer seals as it goes; without one, run `stockledger seal`)",
        ),
    }
    Ok(())
}

/// Reads a digest file as `digest --json` wrote it.
pub fn read_digest(path: &str) -> Result<Digest, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
    Ok(Digest::parse(&text).map_err(|e| anyhow::anyhow!("{path}: {e}"))?)
}

fn finding_text(f: &Finding) -> String {
    match f {
        Finding::EventMissing { chain_seq, position } => {
            format!("chain row {chain_seq}: the event at position {position} is gone from the log")
        }
        Finding::EventAltered {
            chain_seq,
            position,
            stream,
            seq,
            archive,
            ..
        } => format!(
            "chain row {chain_seq}: the event at position {position} ({stream} #{seq}) was changed after it was sealed{}",
            archive.as_ref().map(|f| format!(" (in archive segment {f})")).unwrap_or_default()
        ),
        Finding::EventUndecodable {
            chain_seq,
            position,
            why,
        } => format!("chain row {chain_seq}: the event at position {position} no longer reads as an event: {why}"),
        Finding::OutOfOrder { chain_seq, position } => format!(
            "chain row {chain_seq}: the event at position {position} no longer follows the one before in commit order"
        ),
        Finding::ChainGap { expected, found } => {
            format!("chain rows {expected} to {} are gone", found - 1)
        }
        Finding::Uncovered { position } => format!(
            "the event at position {position} is not in the chain, though events after it are: it was inserted later"
        ),
        Finding::SealBroken { block, what } => format!("block {block}: {what}"),
        Finding::DigestMismatch { block, what } => format!("the digest (block {block}): {what}"),
        Finding::DigestNotInLog {
            block,
            sealed_blocks,
        } => format!(
            "the digest names block {block}, but the log has {sealed_blocks} sealed blocks: sealed events are gone"
        ),
        Finding::ArchiveProblem { file, what } => format!("archive {file}: {what}"),
    }
}

/// An archive directory, refused unless every segment reads and follows on.
pub fn open_archive(dir: &str) -> Result<Archive, Failure> {
    Ok(Archive::open(Path::new(dir))
        .and_then(Archive::whole)
        .map_err(|e| anyhow::anyhow!("{e}"))?)
}

/// Writes the sealed blocks not archived yet into `dir`.
pub async fn archive(
    store: &Store,
    dir: &str,
    through_block: Option<i64>,
    detach: Option<Detach>,
    printer: &Printer,
) -> Result<(), Failure> {
    let started = Instant::now();
    let written = seal::archive::write::archive(store.pool(), Path::new(dir), through_block)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut text = format!(
        "archive {dir}: {} new segment(s) in {:.2} s",
        written.len(),
        started.elapsed().as_secs_f64()
    );
    for m in &written {
        text.push_str(&format!(
            "\n  blocks {} to {}: {} events, {} bytes ({:.0} per event), SHA-256 {}",
            m.first_block,
            m.last_block,
            m.events,
            m.bytes,
            m.bytes as f64 / m.events.max(1) as f64,
            m.sha256
        ));
    }
    if written.is_empty() {
        text.push_str("\n  every sealed block is archived already");
    }
    let mut value = json!({ "dir": dir, "segments": written });
    if let Some(d) = detach {
        let archive = open_archive(dir)?;
        let report = seal::archive::detach::detach(
            store.pool(),
            &archive,
            &stockledger::projection::snapshot::Snapshots,
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        text.push_str(&detach_text(&report));
        value["detach"] = json!(report);
        if let Some(days) = d.forget_ids_after_days {
            let below = detach::detached_days_ago(store.pool(), days).await?;
            let forgotten = detach::forget_archived_below(store.pool(), below).await?;
            text.push_str(&format!(
                "\nforgot {forgotten} archived streams of partitions that left more than {days} days ago: their ids may be used again"
            ));
            value["forgotten"] = json!(forgotten);
        }
    }
    printer.value(&value, &text);
    Ok(())
}

/// What `--detach` asks for beyond taking partitions out.
pub struct Detach {
    pub forget_ids_after_days: Option<u32>,
}

fn detach_text(r: &seal::archive::detach::DetachReport) -> String {
    let mut text = format!(
        "\ndetached {} partition(s) the archive holds",
        r.detached.len()
    );
    for d in &r.detached {
        text.push_str(&format!(
            "\n  {} ({} {} to {}): {} rows, {:.1} MiB freed; {} streams archived, {} events carried",
            d.partition,
            if d.parent == "events" { "positions" } else { "chain rows" },
            d.first,
            d.next - 1,
            d.rows,
            d.bytes as f64 / f64::from(1 << 20),
            d.archived_streams,
            d.carried_events
        ));
    }
    for why in &r.kept {
        text.push_str(&format!("\n  stays: {why}"));
    }
    text
}

/// Exit 0 when everything matches, 5 on any finding.
pub async fn verify(
    store: &Store,
    digest: Option<&str>,
    archive: Option<&str>,
    printer: &Printer,
) -> Result<(), Failure> {
    let digest = digest.map(read_digest).transpose()?;
    let started = Instant::now();
    let report = match archive {
        None => seal::verify::verify(store.pool(), digest.as_ref()).await?,
        Some(dir) => {
            // Not `open_archive`: what is wrong in the directory is a finding.
            let archive = Archive::open(Path::new(dir)).map_err(|e| anyhow::anyhow!("{e}"))?;
            seal::verify::verify_across(store.pool(), digest.as_ref(), &archive).await?
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let mut text = format!(
        "verify: {} events in {} blocks; {:.2} s ({:.0} events/s); {} not sealed yet",
        report.events,
        report.blocks,
        seconds,
        report.events as f64 / seconds.max(1e-9),
        report.unsealed
    );
    match report.digest_matches {
        Some(true) => text.push_str("\ndigest: the log still hashes to it"),
        Some(false) => text.push_str("\ndigest: DOES NOT MATCH"),
        None => {}
    }
    for f in &report.findings {
        text.push_str(&format!("\n  {}", finding_text(f)));
    }
    if report.more > 0 {
        text.push_str(&format!("\n  ... and {} more", report.more));
    }
    text.push_str(if report.clean() {
        "\nclean"
    } else {
        "\nTAMPERED: the log is not the one that was sealed"
    });
    let mut value = serde_json::to_value(&report).expect("json");
    value["clean"] = json!(report.clean());
    value["seconds"] = json!(seconds);
    printer.value(&value, &text);
    if report.clean() {
        Ok(())
    } else {
        Err(Failure::TamperFound)
    }
}

/// Prints the proof for the event at `position` (always JSON: it is a file).
pub async fn prove(
    store: &Store,
    position: i64,
    digest: Option<&str>,
    archive: Option<&str>,
) -> Result<(), Failure> {
    let digest = digest.map(read_digest).transpose()?;
    let archived = match archive {
        Some(dir) => {
            let archive = Archive::open(Path::new(dir)).map_err(|e| anyhow::anyhow!("{e}"))?;
            seal::archive::prove::prove(store.pool(), &archive, position, digest.clone())
                .await
                .map_err(proving)?
        }
        None => None,
    };
    let proof = match archived {
        Some(p) => p,
        None => seal::proof::prove(store.pool(), position, digest)
            .await
            .map_err(proving)?,
    };
    println!("{}", serde_json::to_string_pretty(&proof).expect("json"));
    Ok(())
}

/// A proof that could not be made: a store error keeps its own code (an
/// archived event is `HISTORY_ARCHIVED`, a database away `UNAVAILABLE`), not
/// `INTERNAL`.
fn proving(e: seal::proof::ProveError) -> Failure {
    match e {
        seal::proof::ProveError::Store(s) => s.into(),
        e => anyhow::anyhow!("{e}").into(),
    }
}

/// Checks a proof file offline against the auditor's own digest file.
/// Exit 0 when it holds, 5 when it does not.
pub fn verify_proof(path: &str, digest: &str, printer: &Printer) -> Result<(), Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
    let proof: seal::Proof =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{path}: not a proof: {e}"))?;
    let trusted = read_digest(digest)?;
    match seal::proof::check(&proof, &trusted) {
        Ok(()) => {
            let text = format!(
                "the event at position {} is in the log under the digest of block {} (seal {})",
                proof.event["position"], trusted.block, trusted.seal
            );
            printer.value(&json!({"valid": true, "digest": trusted}), &text);
            Ok(())
        }
        Err(e) => {
            printer.value(
                &json!({"valid": false, "why": e.to_string()}),
                &format!("INVALID: {e}"),
            );
            Err(Failure::TamperFound)
        }
    }
}
