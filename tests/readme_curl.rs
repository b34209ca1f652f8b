//! The README's curl calls work as printed, against a development server.

mod common;

use std::process::Command;

use common::needs::{self, CURL};
use common::server::{test_config, TestServer};

/// The shell commands of the README's HTTP block, continuation lines joined.
fn readme_curls() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = readme
        .split("stockledger serve --dev &\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README has the HTTP block");
    block
        .replace("\\\n", " ")
        .lines()
        .filter(|l| l.starts_with("curl "))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_curl_calls_work_as_printed() {
    if !needs::programs(&[CURL]) {
        return;
    }
    let mut config = test_config();
    config.dev = true;
    let mut s = TestServer::start(config).await;
    let host = s.base.trim_start_matches("http://").to_owned();
    let curls = readme_curls();
    assert!(curls.len() >= 5, "{curls:?}");
    for cmd in &curls {
        let cmd = cmd.replace("localhost:8080", &host);
        let out = tokio::task::spawn_blocking(move || {
            Command::new("sh").arg("-c").arg(&cmd).output().unwrap()
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let body: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON answer");
        assert!(body.get("code").is_none(), "an error answer: {body}");
    }
    assert_eq!(s.db.figures("apple").await, (8, 0, 2));
    s.stop().await;
}
