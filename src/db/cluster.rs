//! The private PostgreSQL cluster used when no `DATABASE_URL` is set.
//!
//! It is initialised on first use with the installed PostgreSQL binaries
//! (`initdb`/`pg_ctl` on PATH, else the newest `/usr/lib/postgresql/*/bin`),
//! listens only on a Unix socket inside its own data directory (so it never
//! clashes with another server's port), trusts local connections, and keeps
//! running between invocations. When we run as root, the binaries run as the
//! `postgres` user, because initdb and postgres refuse to run as root.
//!
//! Data directory: `$STOCKLEDGER_DATA_DIR`, else `/var/lib/stockledger/postgres`
//! for root, else `$XDG_DATA_HOME/stockledger/postgres`
//! (`~/.local/share/stockledger/postgres`).

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{chown, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::limits::{PRIVATE_CLUSTER_MAX_CONNECTIONS, PRIVATE_CLUSTER_START_TIMEOUT_SECONDS};

/// The superuser created in the private cluster.
pub const SUPERUSER: &str = "stockledger";

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("no PostgreSQL server binaries found (looked for initdb and pg_ctl on PATH and in /usr/lib/postgresql/*/bin); install PostgreSQL or set DATABASE_URL")]
    NoBinaries,
    #[error("running as root, but there is no `postgres` user to run PostgreSQL as; create one or set DATABASE_URL")]
    NoPostgresUser,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{step} failed ({status}): {output}")]
    Step {
        step: &'static str,
        status: String,
        output: String,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ClusterError {
    let what = what.into();
    move |source| ClusterError::Io { what, source }
}

/// What `ensure_running` had to do, for the message printed to the user.
#[derive(Debug, Default, Clone, Copy)]
pub struct Started {
    pub initialised: bool,
    pub started: bool,
}

#[derive(Debug, Clone)]
pub struct PrivateCluster {
    pub data_dir: PathBuf,
}

fn is_root() -> bool {
    // /proc/self belongs to the process's effective user; reading its owner
    // avoids an unsafe libc call for one bit of information.
    fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// Preloads `pg_stat_statements` when the server packages ship it, so an
/// operator (and the benchmarks) can see where the server's time goes
/// (`CREATE EXTENSION pg_stat_statements` in a database shows it). It times
/// every statement, which costs little beside a command's commit.
fn statement_statistics(bin: &Path) -> &'static str {
    // `bin` may hold links to the real binaries (/usr/local/bin/initdb ->
    // /usr/lib/postgresql/15/bin/initdb): the library is beside the real ones.
    let real = fs::canonicalize(bin.join("initdb")).unwrap_or_else(|_| bin.join("initdb"));
    let lib = real.with_file_name("../lib/pg_stat_statements.so");
    if lib.exists() {
        "shared_preload_libraries = 'pg_stat_statements'\n"
    } else {
        ""
    }
}

impl PrivateCluster {
    pub fn at(data_dir: impl Into<PathBuf>) -> Self {
        PrivateCluster {
            data_dir: data_dir.into(),
        }
    }

    /// The documented default location (see the module docs).
    pub fn default_location() -> PathBuf {
        if let Some(dir) = std::env::var_os("STOCKLEDGER_DATA_DIR") {
            return PathBuf::from(dir);
        }
        if is_root() {
            return PathBuf::from("/var/lib/stockledger/postgres");
        }
        let base = std::env::var_os("XDG_DATA_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
            .unwrap_or_else(|| PathBuf::from("."));
        base.join("stockledger/postgres")
    }

    /// The server listens on a socket in its own data directory.
    pub fn socket_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Connection settings for database `dbname` of this cluster.
    pub fn config(&self, dbname: &str) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        c.host_path(self.socket_dir())
            .user(SUPERUSER)
            .dbname(dbname);
        c
    }

    /// Initialises the cluster if needed and starts it if it is not running.
    /// Blocking; safe to call from several processes at once (a file lock
    /// next to the data directory serialises them).
    pub fn ensure_running(&self) -> Result<Started, ClusterError> {
        let bin = find_binaries().ok_or(ClusterError::NoBinaries)?;
        let runner = if is_root() {
            Some(postgres_user().ok_or(ClusterError::NoPostgresUser)?)
        } else {
            None
        };
        let parent = self
            .data_dir
            .parent()
            .unwrap_or(Path::new("/"))
            .to_path_buf();
        create_traversable(&parent)?;
        let lock_path = parent.join(format!(
            ".{}.lock",
            self.data_dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("cluster")
        ));
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(format!("opening {}", lock_path.display())))?;
        lock.lock().map_err(io("locking the cluster directory"))?;
        let result = self.ensure_running_locked(&bin, runner);
        let _ = File::unlock(&lock);
        result
    }

    fn ensure_running_locked(
        &self,
        bin: &Path,
        runner: Option<(u32, u32)>,
    ) -> Result<Started, ClusterError> {
        let mut started = Started::default();
        let dir = &self.data_dir;
        if !dir.join("PG_VERSION").exists() {
            fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(io("setting data directory permissions"))?;
            if let Some((uid, gid)) = runner {
                chown(dir, Some(uid), Some(gid))
                    .map_err(io("handing the data directory to postgres"))?;
            }
            run(
                "initdb",
                Command::new(bin.join("initdb")).arg("-D").arg(dir).args([
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C",
                ]),
                runner,
            )?;
            let conf = format!(
                "\n# Written by stockledger: a private server on a Unix socket only.\n\
                 listen_addresses = ''\n\
                 unix_socket_directories = '{}'\n\
                 max_connections = {PRIVATE_CLUSTER_MAX_CONNECTIONS}\n{}",
                dir.display(),
                statement_statistics(bin)
            );
            let mut f = OpenOptions::new()
                .append(true)
                .open(dir.join("postgresql.conf"))
                .map_err(io("opening postgresql.conf"))?;
            std::io::Write::write_all(&mut f, conf.as_bytes())
                .map_err(io("writing postgresql.conf"))?;
            started.initialised = true;
        }
        let status = command(
            Command::new(bin.join("pg_ctl"))
                .arg("status")
                .arg("-D")
                .arg(dir),
            runner,
        )
        .output()
        .map_err(io("running pg_ctl status"))?;
        if !status.status.success() {
            run(
                "pg_ctl start",
                Command::new(bin.join("pg_ctl"))
                    .arg("start")
                    .arg("-D")
                    .arg(dir)
                    .arg("-l")
                    .arg(dir.join("server.log"))
                    .args([
                        "-w",
                        "-t",
                        &PRIVATE_CLUSTER_START_TIMEOUT_SECONDS.to_string(),
                    ]),
                runner,
            )?;
            started.started = true;
        }
        Ok(started)
    }
}

impl PrivateCluster {
    /// Stops the server if it runs (fast shutdown). Used by tests and tools
    /// that start a cluster of their own; the default cluster keeps running.
    pub fn stop(&self) {
        let Some(bin) = find_binaries() else { return };
        let runner = if is_root() { postgres_user() } else { None };
        let _ = command(
            Command::new(bin.join("pg_ctl"))
                .arg("stop")
                .arg("-D")
                .arg(&self.data_dir)
                .args(["-m", "fast", "-w"]),
            runner,
        )
        .output();
    }
}

impl PrivateCluster {
    /// Restarts the server the hard way (`pg_ctl restart -m immediate`: no
    /// checkpoint, every connection cut, crash recovery on start), as a crash
    /// would. For fault tests and `stockledger chaos`.
    pub fn restart_immediately(&self) -> Result<(), ClusterError> {
        let bin = find_binaries().ok_or(ClusterError::NoBinaries)?;
        let runner = if is_root() { postgres_user() } else { None };
        run(
            "pg_ctl restart",
            Command::new(bin.join("pg_ctl"))
                .arg("restart")
                .arg("-D")
                .arg(&self.data_dir)
                .arg("-l")
                .arg(self.data_dir.join("server.log"))
                .args([
                    "-m",
                    "immediate",
                    "-w",
                    "-t",
                    &PRIVATE_CLUSTER_START_TIMEOUT_SECONDS.to_string(),
                ]),
            runner,
        )
    }
}

/// Creates `dir` and its missing ancestors readable and traversable by all,
/// so that the `postgres` user can reach a data directory below them.
fn create_traversable(dir: &Path) -> Result<(), ClusterError> {
    let mut missing = Vec::new();
    let mut d = dir;
    while !d.exists() {
        missing.push(d.to_path_buf());
        match d.parent() {
            Some(p) => d = p,
            None => break,
        }
    }
    for m in missing.iter().rev() {
        fs::create_dir(m)
            .or_else(|e| if m.exists() { Ok(()) } else { Err(e) })
            .map_err(io(format!("creating {}", m.display())))?;
        fs::set_permissions(m, fs::Permissions::from_mode(0o755))
            .map_err(io(format!("setting permissions of {}", m.display())))?;
    }
    Ok(())
}

fn command(cmd: &mut Command, runner: Option<(u32, u32)>) -> &mut Command {
    if let Some((uid, gid)) = runner {
        // Start in a directory the postgres user can enter, not root's home.
        cmd.uid(uid).gid(gid).current_dir("/").env_remove("HOME");
    }
    cmd
}

fn run(
    step: &'static str,
    cmd: &mut Command,
    runner: Option<(u32, u32)>,
) -> Result<(), ClusterError> {
    let out = command(cmd, runner)
        .output()
        .map_err(io(format!("running {step}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(ClusterError::Step {
        step,
        status: out.status.to_string(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .trim()
        .to_owned(),
    })
}

/// The directory holding initdb and pg_ctl.
fn find_binaries() -> Option<PathBuf> {
    let has_both = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if has_both(&d) {
                return Some(d);
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has_both(d))
        .collect();
    versions.sort();
    versions.pop().map(|(_, d)| d)
}

/// (uid, gid) of the `postgres` user, from /etc/passwd.
fn postgres_user() -> Option<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.len() > 3 && f[0] == "postgres")
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}
