//! `stockledger pack`: the log's full, sealed partitions, their indexes
//! rebuilt packed (`store::pack`), and what that saved.

use serde_json::json;
use stockledger::store::pack::{self, Packed};
use stockledger::store::Store;

use super::output::Printer;
use super::Failure;

pub async fn pack(store: &Store, printer: &Printer) -> Result<(), Failure> {
    let packed = pack::pack_sealed(store.pool()).await?;
    let mut text: Vec<String> = packed.iter().map(line).collect();
    if packed.is_empty() {
        text.push(
            "no partition to pack: each full, sealed partition of the log is packed".to_owned(),
        );
    }
    printer.value(&json!({ "packed": packed }), &text.join("\n"));
    Ok(())
}

fn line(p: &Packed) -> String {
    let mib = |bytes: i64| bytes as f64 / (1 << 20) as f64;
    format!(
        "{} (positions {} to {}): {:.1} MiB -> {:.1} MiB{}",
        p.partition,
        p.first,
        p.next - 1,
        mib(p.bytes_before),
        mib(p.bytes_after),
        if p.leftovers_dropped > 0 {
            format!(
                ", {} half-built indexes of an earlier run dropped",
                p.leftovers_dropped
            )
        } else {
            String::new()
        }
    )
}
