//! The clusters `stockledger-bench ha` measures, driven through
//! `.ci/ha-cluster`: three PostgreSQL nodes under Patroni with strict
//! synchronous replication, and one plain node with the same settings. Both
//! are stopped and removed when the handle is dropped.

use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::Instant;

use anyhow::Context;
use serde_json::Value;

/// A cluster the script started, in its own directory.
pub struct ScriptCluster {
    script: PathBuf,
    dir: PathBuf,
    /// The `DATABASE_URL` the script printed.
    pub url: String,
}

impl ScriptCluster {
    /// `script VERB DIR` (`start` or `single`), waiting for it to print the URL.
    pub fn start(script: &Path, verb: &str, dir: PathBuf) -> anyhow::Result<ScriptCluster> {
        let out = Process::new(script)
            .arg(verb)
            .arg(&dir)
            .output()
            .with_context(|| format!("running {}", script.display()))?;
        // Whatever happened, the directory is the handle's to remove.
        let cluster = ScriptCluster {
            script: script.to_owned(),
            dir,
            url: String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        };
        anyhow::ensure!(
            out.status.success() && !cluster.url.is_empty(),
            "{} {verb} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(cluster)
    }

    fn patronictl_members(&self) -> Vec<Value> {
        let out = Process::new("patronictl")
            .arg("-c")
            .arg(self.dir.join("ctl.yml"))
            .args(["list", "-f", "json"])
            .output();
        out.ok()
            .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }

    /// The running member with `role` (`Leader`, `Sync Standby`), by node number.
    pub fn member(&self, role: &str) -> Option<u32> {
        self.patronictl_members()
            .iter()
            .find(|m| {
                m["Role"] == role && matches!(m["State"].as_str(), Some("running" | "streaming"))
            })
            .and_then(|m| m["Member"].as_str())
            .and_then(|m| m.trim_start_matches("node").parse().ok())
    }

    /// Whether all three nodes run, one leading and the others streaming
    /// from it: a cluster ready for the next failover.
    pub fn whole(&self) -> bool {
        let members = self.patronictl_members();
        let up = |m: &&Value| matches!(m["State"].as_str(), Some("running" | "streaming"));
        members.len() == 3
            && members.iter().filter(up).count() == 3
            && self.member("Sync Standby").is_some()
    }

    /// SIGKILL to the leader's Patroni and postmaster together, so that a
    /// standby is promoted (a postmaster killed alone is restarted in place).
    /// Returns the node killed and when the signals went out (the lookups
    /// before them take a while).
    pub fn kill_leader(&self) -> anyhow::Result<(u32, Instant)> {
        let n = self.member("Leader").context("no leader to kill")?;
        let config = self.dir.join(format!("node{n}.yml"));
        let patroni = Process::new("pgrep")
            .args(["-f", &format!("patroni {}", config.display())])
            .output()?;
        let mut pids: Vec<String> = String::from_utf8_lossy(&patroni.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let pid_file = self.dir.join(format!("node{n}/data/postmaster.pid"));
        let postmaster = std::fs::read_to_string(pid_file)?;
        pids.extend(postmaster.lines().next().map(|l| l.trim().to_owned()));
        let mut kill = Process::new("kill");
        kill.arg("-9").args(&pids);
        let at = Instant::now();
        kill.status()?;
        Ok((n, at))
    }

    /// Starts node `n`'s Patroni again; it rejoins as a standby.
    pub fn revive(&self, n: u32) -> anyhow::Result<()> {
        let status = Process::new(&self.script)
            .arg("revive")
            .arg(&self.dir)
            .arg(n.to_string())
            .status()?;
        anyhow::ensure!(status.success(), "reviving node {n} failed");
        Ok(())
    }
}

impl Drop for ScriptCluster {
    fn drop(&mut self) {
        let _ = Process::new(&self.script)
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}
