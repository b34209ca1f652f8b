//! The demo tells its story against a real database, and the story is
//! true: every chapter's facts come from the ledger's own answers.

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_tells_a_flash_sale_a_transfer_and_a_partial_shipment() {
    let db = TestDb::new().await;
    let url = db.url();
    let (code, doc) = tokio::task::spawn_blocking(move || cli_json(&url, &["demo"]))
        .await
        .unwrap();
    assert_eq!(code, Some(0), "{doc}");
    let chapters = doc["chapters"].as_array().expect("chapters");
    let chapter = |title: &str| {
        chapters
            .iter()
            .find(|c| c["chapter"] == title)
            .unwrap_or_else(|| panic!("no chapter {title:?} in {doc}"))["facts"]
            .clone()
    };
    let sale = chapter("flash sale");
    assert_eq!(sale["reserved"], 100, "{sale}");
    assert_eq!(sale["stock"]["reserved"], 0);
    assert!(sale["stock"]["on_hand"].as_i64().unwrap() >= 0);
    let moved = chapter("transfer");
    assert_eq!(moved["shop"]["on_hand"], 10, "{moved}");
    assert_eq!(moved["too_many"], "INSUFFICIENT_STOCK");
    let parts = chapter("partial shipment");
    assert_eq!(parts["too_many"], "EXCEEDS_RESERVED", "{parts}");
    let line = &parts["rest"]["lines"][0];
    assert_eq!(parts["rest"]["state"], "CONFIRMED", "{parts}");
    assert_eq!(
        (
            line["quantity"].clone(),
            line["confirmed"].clone(),
            line["released"].clone()
        ),
        (
            serde_json::json!(3),
            serde_json::json!(2),
            serde_json::json!(1)
        )
    );
    let coming = chapter("coming next week");
    assert_eq!(coming["before"]["available_now"], 0, "{coming}");
    assert_eq!(coming["before"]["dates"][0]["available"], 20, "{coming}");
    assert_eq!(coming["order"], "RESERVED", "{coming}");
    assert_eq!(
        (
            coming["expected"]["state"].clone(),
            coming["expected"]["delivered"].clone()
        ),
        (serde_json::json!("cancelled"), serde_json::json!(15))
    );
    assert_eq!(coming["after"]["available_now"], 13, "{coming}");
    assert_eq!(coming["after"]["dates"], serde_json::json!([]), "{coming}");
    let pre = chapter("pre-order");
    assert_eq!(
        (
            pre["grace"].clone(),
            pre["too_many"].clone(),
            pre["henry"].clone()
        ),
        (
            serde_json::json!("RESERVED"),
            serde_json::json!("INSUFFICIENT_STOCK"),
            serde_json::json!("RESERVED")
        ),
        "{pre}"
    );
    assert_eq!(pre["early_confirm"], "BACKORDER_WAITING", "{pre}");
    assert_eq!(
        pre["henry_after_delivery"], "5 held, 2 waiting, 0 dropped",
        "{pre}"
    );
    assert_eq!(
        pre["henry_at_the_end"], "5 held, 0 waiting, 2 dropped",
        "{pre}"
    );
    assert_eq!(pre["grace_ships"], "CONFIRMED", "{pre}");
    db.project_all().await;
    db.assert_audit_clean().await;
}

/// The demo's last line tells the reader what to type next, and what it
/// prints can be typed where they are: the program's own path when neither
/// `PATH` nor cargo started it (and then both commands work as printed),
/// `cargo run --` when cargo did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demos_hint_can_be_typed_as_printed() {
    let db = TestDb::new().await;
    let url = db.url();
    let demo = move || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_stockledger"))
            .arg("demo")
            .env("DATABASE_URL", &url)
            .env_remove("CARGO")
            .env_remove("CARGO_MANIFEST_DIR")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("Try: "))
            .unwrap_or_else(|| panic!("no hint in {text}"))
            .to_owned()
    };
    let hint = tokio::task::spawn_blocking(demo).await.unwrap();
    let exe = env!("CARGO_BIN_EXE_stockledger");
    let commands: Vec<&str> = hint.split(" | ").map(str::trim).collect();
    assert_eq!(commands.len(), 2, "{hint}");
    // Both answer from this run's events, whose ids all start with its name.
    let alice = commands[0].rsplit(' ').next().unwrap();
    let run = alice
        .strip_suffix("-alice")
        .expect("the show command names alice");
    for command in &commands {
        assert!(command.starts_with(exe), "{hint}");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("DATABASE_URL", db.url())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains(run), "{command}: {said}");
    }
    let url = db.url();
    let by_cargo = tokio::task::spawn_blocking(move || {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_stockledger"));
        c.args(["demo"])
            .env("DATABASE_URL", &url)
            .env("CARGO", "cargo")
            .env("CARGO_MANIFEST_DIR", ".");
        String::from_utf8(c.output().unwrap().stdout).unwrap()
    })
    .await
    .unwrap();
    assert!(by_cargo.contains("Try: cargo run -- show "), "{by_cargo}");
}
