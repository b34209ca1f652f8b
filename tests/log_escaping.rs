//! Log lines cannot be forged through caller-supplied ids. In a test binary
//! of its own: it installs a tracing subscriber for its thread, and tracing's
//! per-callsite interest cache is shared by every test of a process.

mod common;

use common::server::{test_config, TestServer};
use stockledger::server::ServerConfig;

/// A log line written for a request whose correlation id tries to forge log
/// fields: the value is quoted and escaped, so it stays one field.
#[tokio::test]
async fn caller_supplied_ids_cannot_forge_log_fields() {
    #[derive(Clone, Default)]
    struct Buffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let s = TestServer::start(ServerConfig {
        run_projections: false,
        run_expiry: false,
        run_sealer: false,
        ..test_config()
    })
    .await;
    let r = s
        .http
        .get(format!("{}/healthz", s.base))
        .header("x-correlation-id", "x status=500 actor=\"admin\"")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let logged = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let line = logged
        .lines()
        .find(|l| l.contains("route=/healthz"))
        .unwrap_or_else(|| panic!("no request line in {logged}"));
    assert!(
        line.contains(r#"correlation_id="x status=500 actor=\"admin\"""#),
        "{line}"
    );
    let outside = line.replace(r#""x status=500 actor=\"admin\"""#, "");
    assert!(!outside.contains("actor="), "a forged field: {line}");
}
