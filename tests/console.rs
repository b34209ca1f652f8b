//! The operator console in a real browser: Debian's Chromium, headless,
//! driven by playwright-core (`tests/console/browse.mjs`), against a server
//! this test seeds. Each page is checked and kept as a screenshot in
//! `target/console-screenshots/`. The API reads the console stands on (who a
//! key is, the reservations about to expire, the relays) are checked here
//! first, with their roles.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::needs::{self, Program};
use common::server::{test_config, TestServer};
use reqwest::Method;
use serde_json::json;

const NODE: Program = Program {
    name: "node",
    package: "nodejs",
};
const NPM: Program = Program {
    name: "npm",
    package: "npm",
};
const CHROMIUM: Program = Program {
    name: "chromium",
    package: "chromium",
};

/// The driver's version, pinned: installed from the npm registry into
/// `target/console-test/` the first time.
const PLAYWRIGHT_CORE: &str = "playwright-core@1.64.1";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `target/console-test/node_modules/playwright-core`, installed if absent.
fn driver() -> PathBuf {
    let dir = root().join("target/console-test");
    if !dir.join("node_modules/playwright-core").exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
            .arg(&dir)
            .arg(PLAYWRIGHT_CORE)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "npm install {PLAYWRIGHT_CORE}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dir.join("node_modules")
}

/// What the pages show: stock of apple, order o-1 reserved and confirmed,
/// r-held held, everything sealed and projected.
async fn seed(s: &TestServer) {
    for (path, body) in [
        (
            "/v1/stock/receipts",
            json!({"receipt_id": "in-1", "sku": "apple", "quantity": 10}),
        ),
        (
            "/v1/reservations",
            json!({"reservation_id": "r-1", "order_id": "o-1", "lines": [{"sku": "apple", "quantity": 2}]}),
        ),
        ("/v1/reservations/r-1/confirm", json!({})),
        (
            "/v1/reservations",
            json!({"reservation_id": "r-held", "order_id": "o-2", "lines": [{"sku": "apple", "quantity": 1}], "ttl_seconds": 600}),
        ),
    ] {
        let (status, body) = s.post(path, body).await;
        assert!(status == 200 || status == 201, "{path}: {status} {body}");
    }
    s.db.project_all().await;
    // The server's own sealer seals them (a second sealer would wait for it).
    for _ in 0..200 {
        if s.get("/v1/digest", "auditor").await.0 == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server's sealer sealed nothing in 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reads_the_console_stands_on_answer_by_role() {
    let s = TestServer::start(test_config()).await;
    seed(&s).await;
    let (status, me) = s.get("/v1/me", "reader").await;
    assert_eq!((status, me["role"].as_str()), (200, Some("reader")), "{me}");
    // A listing names orders the caller did not ask for by id: a reader
    // key may not enumerate them (docs: the role matrix in the README).
    let (status, x) = s.get("/v1/expiring-reservations", "reader").await;
    assert_eq!(
        (status, x["code"].as_str()),
        (403, Some("FORBIDDEN")),
        "{x}"
    );
    for role in ["writer", "admin"] {
        assert_eq!(s.get("/v1/expiring-reservations", role).await.0, 200);
    }
    let (status, x) = s.get("/v1/expiring-reservations", "auditor").await;
    assert_eq!(status, 200, "{x}");
    assert_eq!(x["reservations"][0]["reservation_id"], "r-held", "{x}");
    assert_eq!(
        x["reservations"].as_array().unwrap().len(),
        1,
        "confirmed ones are not held: {x}"
    );
    assert_eq!(x["truncated"], false);
    // The relays' standing is for auditors.
    assert_eq!(s.get("/v1/relays", "reader").await.0, 403);
    let (status, r) = s.get("/v1/relays", "auditor").await;
    assert_eq!(
        (status, r["relays"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{r}"
    );
    // Where the log ends now: after the last seeded event; for auditors.
    let (status, head) = s.get("/v1/events/head", "auditor").await;
    assert_eq!(status, 200, "{head}");
    let cursor = head["cursor"].as_str().unwrap();
    assert!(
        cursor.ends_with(":4"),
        "the fourth event is the last: {cursor}"
    );
    let (_, page) = s
        .get(&format!("/v1/events?after={cursor}"), "auditor")
        .await;
    assert_eq!(page["events"], json!([]), "nothing after the head: {page}");
    assert_eq!(s.get("/v1/events/head", "reader").await.0, 403);
    let unkeyed = s.req(Method::GET, "/v1/me", None).send().await.unwrap();
    assert_eq!(unkeyed.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_console_page_works_in_a_real_browser_under_a_strict_policy() {
    if !needs::programs(&[NODE, NPM, CHROMIUM]) {
        return;
    }
    let modules = tokio::task::spawn_blocking(driver).await.unwrap();
    let s = TestServer::start(test_config()).await;
    seed(&s).await;
    let shots = root().join("target/console-screenshots");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let mut browse = tokio::process::Command::new("node");
    browse
        .arg(root().join("tests/console/browse.mjs"))
        .arg(&s.base)
        .arg(&shots)
        .env("NODE_MODULES", &modules)
        .env("AUDITOR_KEY", &s.keys["auditor"])
        .env("READER_KEY", &s.keys["reader"])
        .env("WRITER_KEY", &s.keys["writer"])
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(180), browse.output())
        .await
        .expect("the browser run ends within 3 minutes")
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for page in [
        "0-login-refused",
        "1-overview",
        "2-item",
        "3-order",
        "4-expiring",
        "5-events",
        "6-reader",
    ] {
        let png = shots.join(format!("{page}.png"));
        let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(size > 5_000, "{} missing or empty", png.display());
    }
}
