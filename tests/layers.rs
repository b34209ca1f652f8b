//! The floors of the code import only downward (docs/architecture.md,
//! "Architecture invariants"): every module of `src/` has a floor, and a
//! file may name another module (`crate::x`, or `stockledger::x` in the
//! binary) only if that module stands on a lower floor. Two modules on one
//! floor never import each other, so no circle runs across modules.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Each top-level module of `src/` and its floor, from the ground up.
const FLOORS: &[(&str, u8)] = &[
    ("limits", 0),
    ("domain", 1),
    ("store", 2),
    ("read_model", 3),
    ("seal", 3),
    ("relay", 3),
    ("projection", 4),
    ("app", 5),
    ("api", 5),
    ("audit", 5),
    // Opens a migrated store: `Store::migrate` is the application layer's.
    ("db", 6),
    ("server", 6),
    // The binary's chaos run (`src/chaos_run.rs`), on the fault proxy (its
    // own crate, `tests/fault_proxy`), under its command line.
    ("chaos_run", 7),
    // The binary: `src/main.rs` and `src/cli/`.
    ("cli", 8),
    ("main", 8),
];

fn floor(module: &str) -> Option<u8> {
    FLOORS.iter().find(|(m, _)| *m == module).map(|(_, f)| *f)
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`lib` for `src/lib.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_owned()
}

/// The modules a file names: `crate::x` and `stockledger::x`, in paths and
/// in `use` lists (`use crate::{x, y::z}`), outside comments.
fn named_modules(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    for prefix in ["crate::", "stockledger::"] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[at + prefix.len()..];
            if let Some(list) = rest.strip_prefix('{') {
                let list = &list[..list.find("};").unwrap_or(list.len())];
                found.extend(list_heads(list));
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.insert(name);
            }
        }
    }
    found
}

/// The first segment of each path of a `use` list, at its top level.
fn list_heads(list: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in list.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                pieces.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    pieces.push(&list[start..]);
    pieces
        .into_iter()
        .map(|p| {
            p.trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .collect()
}

#[test]
fn floors_import_only_downward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        if module == "lib" {
            continue;
        }
        let own = floor(&module).unwrap_or_else(|| {
            panic!("src/{module} has no floor: give it one in FLOORS (tests/layers.rs) and docs/architecture.md")
        });
        let text = std::fs::read_to_string(file).expect("readable");
        for named in named_modules(&text) {
            if named == module {
                continue;
            }
            let Some(theirs) = floor(&named) else {
                continue; // not a module: a macro, a crate item such as `stockledger::Error`
            };
            if theirs >= own {
                wrong.push(format!(
                    "{} (floor {own}) imports {named} (floor {theirs})",
                    file.strip_prefix(&src).expect("under src").display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that do not run downward:\n{}",
        wrong.join("\n")
    );
}

/// The checker itself: it sees the forms of import the code uses.
#[test]
fn the_checker_reads_every_form_of_import() {
    let text = "use crate::store::Store;\n\
                use crate::{audit, projection::rebuild::{self, Verified}};\n\
                // use crate::server;\n\
                let x = crate::app::expiry::run;\n\
                use stockledger::relay::RelayConfig;";
    let found: Vec<String> = named_modules(text).into_iter().collect();
    assert_eq!(found, ["app", "audit", "projection", "relay", "store"]);
}

/// The domain carries no wire and no storage: no file of `src/domain` names
/// a crate that describes an API, serves HTTP or talks to the database, and
/// none is async. (Each command's request is the domain's; its schema is
/// `api::requests`.)
#[test]
fn the_domain_names_no_wire_and_no_io() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("domain"), &mut files);
    assert!(files.len() > 10, "the domain's files are found");
    let forbidden = [
        "utoipa",
        "axum",
        "hyper",
        "tokio",
        "postgres",
        "async fn",
        ".await",
        "std::fs",
        "std::net",
        "Utc::now",
        "SystemTime",
        "rand::",
    ];
    let mut wrong = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable");
        for word in forbidden {
            if text.contains(word) {
                wrong.push(format!("{} names {word}", file.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
