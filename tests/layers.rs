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

/// A file's product code: its lines before its `#[cfg(test)]` module, with
/// comment lines left out (tests and comments may name anything).
fn product_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l))
        .collect()
}

/// Every product line of `src/` (but the files `allowed`) that contains one
/// of `words`, as `file:line`.
fn lines_naming(words: &[&str], allowed: &[&str]) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let rel = rel.to_string_lossy().replace('\\', "/");
        // `*_tests.rs` files are test modules kept beside their code.
        if allowed.contains(&rel.as_str()) || rel.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("readable");
        for (n, line) in product_lines(&text) {
            if words.iter().any(|w| line.contains(w)) {
                found.push(format!("src/{rel}:{n}: {}", line.trim()));
            }
        }
    }
    found
}

/// Architecture invariant: a stream prefix is spelled only in
/// `src/domain/stream.rs` (and SQL gets it as a bound parameter).
#[test]
fn stream_prefixes_are_spelled_only_in_the_stream_module() {
    // Every kind's prefix, as Rust or SQL would quote it.
    let quoted: Vec<String> = stockledger::domain::StreamKind::ALL
        .iter()
        .flat_map(|k| [format!("\"{}", k.prefix()), format!("'{}", k.prefix())])
        .collect();
    let prefixes: Vec<&str> = quoted.iter().map(String::as_str).collect();
    let found = lines_naming(&prefixes, &["domain/stream.rs"]);
    assert!(found.is_empty(), "{}", found.join("\n"));
    let projections = Path::new(env!("CARGO_MANIFEST_DIR")).join("projections");
    for dir in std::fs::read_dir(&projections).expect("projections/") {
        let dir = dir.expect("an entry").path();
        if !dir.is_dir() {
            continue;
        }
        for sql in std::fs::read_dir(&dir).expect("a projection's folder") {
            let sql = sql.expect("an entry").path();
            let text = std::fs::read_to_string(&sql).expect("readable");
            for p in prefixes.iter().filter(|p| p.starts_with('\'')) {
                assert!(!text.contains(*p), "{} spells {p}", sql.display());
            }
        }
    }
}

/// Architecture invariant: SQLSTATE codes are read only in
/// `src/store/error.rs`.
#[test]
fn sqlstates_are_read_only_in_the_store_errors() {
    let found = lines_naming(
        &["SqlState", "as_db_error", ".code() == \"", "sqlstate"],
        &["store/error.rs"],
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Architecture invariant: the shells (`src/server`, `src/cli`) hold no SQL.
#[test]
fn the_shells_hold_no_sql() {
    let keywords = [
        "\"SELECT ",
        "\"INSERT ",
        "\"UPDATE ",
        "\"DELETE ",
        "\"WITH ",
        "\"CREATE ",
        "\"DROP ",
        "\"BEGIN",
        ".batch_execute(",
        ".query_one(",
        ".query_opt(",
    ];
    let found: Vec<String> = lines_naming(&keywords, &[])
        .into_iter()
        .filter(|l| l.starts_with("src/server/") || l.starts_with("src/cli/"))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Architecture invariant: an advisory lock is named only in
/// `src/store/locks.rs`: anywhere else a lock function binds its key (`$1`)
/// or names none (`pg_advisory_unlock_all()`).
#[test]
fn advisory_locks_are_named_only_in_the_locks_module() {
    let found: Vec<String> = lines_naming(&["advisory_"], &["store/locks.rs"])
        .into_iter()
        .filter(|l| {
            l.match_indices("advisory_").any(|(at, _)| {
                let rest = &l[at..];
                let args = rest.split_once('(').map_or("", |(_, a)| a);
                !(args.starts_with('$') || args.starts_with(')'))
            })
        })
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Architecture invariant: a read's statement does not outlive its caller:
/// a `Store` method takes its connection through `pool::reading`/`read_on`,
/// never bare. The two that may: the read connection's source
/// (`read_connection`, which `read_on` then lends out) and the migration,
/// which holds its connection for a transaction under the migration lock.
#[test]
fn store_methods_take_connections_through_reading() {
    const MAY_TAKE_BARE: &[(&str, &str)] = &[
        ("store/queries.rs", "read_connection"),
        ("app/migrate.rs", "migrate"),
    ];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let rel = rel.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(file).expect("readable");
        let mut in_store = false;
        let mut function = String::new();
        for (n, line) in product_lines(&text) {
            if !line.starts_with(' ') && !line.trim().is_empty() {
                in_store = line.starts_with("impl Store");
            }
            if let Some(at) = line.find("fn ") {
                let name = &line[at + 3..];
                function = name.split(['(', '<']).next().unwrap_or("").to_owned();
            }
            let bare = line.contains("pool::get(") || line.contains("pool.get()");
            if in_store && bare && !MAY_TAKE_BARE.contains(&(rel.as_str(), function.as_str())) {
                wrong.push(format!("src/{rel}:{n} in {function}: {}", line.trim()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The files of `src/domain` a file names, by module path (`domain::event::fact`):
/// `crate::domain::a::b` paths, the heads of `crate::domain::a::{b, c}` lists,
/// and `super::x` paths; each resolved to the longest module that exists. The
/// domain's root (`domain/mod.rs`) only re-exports, so it is no one's import.
fn domain_imports(text: &str, me: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let segment = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|p| {
                p.chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|p| !p.is_empty())
            .collect()
    };
    let longest = |parts: &[String]| -> Option<String> {
        (2..=parts.len())
            .rev()
            .map(|n| parts[..n].join("::"))
            .find(|m| modules.contains(m))
    };
    let parent = me.rsplit_once("::").map_or("", |(p, _)| p).to_owned();
    let mut found = BTreeSet::new();
    for (_, line) in product_lines(text) {
        for (at, _) in line.match_indices("crate::domain::") {
            let rest = &line[at + "crate::".len()..];
            let mut parts = segment(rest);
            let after = &rest[parts.join("::").len()..];
            if let Some(list) = after.strip_prefix("::{") {
                for head in list_heads(&list[..list.find('}').unwrap_or(list.len())]) {
                    let mut p = parts.clone();
                    p.push(head);
                    found.extend(longest(&p));
                }
            }
            found.extend(longest(&parts));
            parts.clear();
        }
        for (at, _) in line.match_indices("super::") {
            let mut parts: Vec<String> = parent.split("::").map(str::to_owned).collect();
            parts.extend(segment(&line[at + "super::".len()..]));
            found.extend(longest(&parts));
        }
    }
    found.remove(me);
    found
}

/// Architecture invariant: no import circle among the domain's files: each
/// event's module, the registry and the rows below the folds, the folds
/// below the decision's types, those below the commands and `decide`.
#[test]
fn the_domain_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("domain"), &mut files);
    let module = |f: &PathBuf| {
        let rel = f.strip_prefix(&src).expect("under src").with_extension("");
        let rel = rel.to_string_lossy().replace('\\', "/").replace('/', "::");
        rel.trim_end_matches("::mod").to_owned()
    };
    let modules: BTreeSet<String> = files.iter().map(module).collect();
    let mut edges: Vec<(String, BTreeSet<String>)> = Vec::new();
    for f in &files {
        let me = module(f);
        if me == "domain" || f.to_string_lossy().ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("readable");
        edges.push((me.clone(), domain_imports(&text, &me, &modules)));
    }
    // A module is in a circle when it reaches itself.
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(m) = todo.pop() {
            for (_, to) in edges.iter().filter(|(n, _)| *n == m) {
                for t in to {
                    if seen.insert(t.clone()) {
                        todo.push(t.clone());
                    }
                }
            }
        }
        seen
    };
    let circled: Vec<String> = edges
        .iter()
        .map(|(m, _)| m.clone())
        .filter(|m| reach(m).contains(m))
        .collect();
    assert!(circled.is_empty(), "in an import circle: {circled:?}");
}

#[test]
fn the_circle_check_sees_lists_and_super() {
    let modules: BTreeSet<String> = ["domain::a", "domain::b", "domain::c::d", "domain::c"]
        .map(str::to_owned)
        .into();
    let text = "use crate::domain::a::Thing;\nuse crate::domain::c::{d::X, Y};\nuse super::b;\n";
    let found = domain_imports(text, "domain::c::e", &modules);
    let want: BTreeSet<String> = ["domain::a", "domain::c::d", "domain::c"]
        .map(str::to_owned)
        .into();
    assert_eq!(found, want);
    let text = "use super::d;\n";
    assert_eq!(
        domain_imports(text, "domain::c::e", &modules),
        ["domain::c::d".to_owned()].into()
    );
}
