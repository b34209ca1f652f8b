//! Suites that need programs beyond PostgreSQL: the relay's `nats-server`,
//! the high-availability suite's Patroni and etcd, the alert rules' `promtool`. On a machine without
//! them (a newcomer's, with only Rust and PostgreSQL) such a test says on the
//! terminal that it did not run and why, and returns; `.ci/run`, which
//! installs them, sets `STOCKLEDGER_REQUIRE_ALL_SUITES=1`, under which a test
//! that cannot run fails instead, so a green CI still means every suite ran.

use std::io::Write;
use std::path::Path;

/// Set (to anything but `0`) by `.ci/run`: a test whose programs are missing
/// fails instead of saying it did not run.
pub const REQUIRE_ALL_SUITES: &str = "STOCKLEDGER_REQUIRE_ALL_SUITES";

/// A program a suite needs, and the Debian package that brings it.
pub struct Program {
    pub name: &'static str,
    pub package: &'static str,
}

pub const NATS_SERVER: Program = Program {
    name: "nats-server",
    package: "nats-server",
};
pub const PATRONI: Program = Program {
    name: "patroni",
    package: "patroni",
};
pub const PATRONICTL: Program = Program {
    name: "patronictl",
    package: "patroni",
};
pub const ETCD: Program = Program {
    name: "etcd",
    package: "etcd-server",
};
pub const CURL: Program = Program {
    name: "curl",
    package: "curl",
};
pub const PROMTOOL: Program = Program {
    name: "promtool",
    package: "prometheus",
};
pub const PRLIMIT: Program = Program {
    name: "prlimit",
    package: "util-linux",
};

/// Whether every program of `programs` is on `PATH`. When one is not, the
/// test that asked should return at once: this has said so on the terminal,
/// past the test harness's capture (which would show it only on failure),
/// or, under `REQUIRE_ALL_SUITES`, failed the test.
pub fn programs(programs: &[Program]) -> bool {
    let missing: Vec<&Program> = programs.iter().filter(|p| !on_path(p.name)).collect();
    if missing.is_empty() {
        return true;
    }
    let names: Vec<&str> = missing.iter().map(|p| p.name).collect();
    let mut packages: Vec<&str> = missing.iter().map(|p| p.package).collect();
    packages.dedup();
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let why = format!(
        "tests/{}.rs, {test}: DID NOT RUN: {} not on PATH (Debian: apt-get install {}; .ci/run installs them)",
        env!("CARGO_CRATE_NAME"),
        names.join(", "),
        packages.join(" ")
    );
    if std::env::var(REQUIRE_ALL_SUITES).is_ok_and(|v| v != "0") {
        panic!("{why}, and {REQUIRE_ALL_SUITES} is set");
    }
    // Straight to the terminal: the harness captures only `eprintln!`.
    let _ = writeln!(std::io::stderr(), "{why}");
    false
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| is_executable(&dir.join(program)))
    })
}

fn is_executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    file.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
