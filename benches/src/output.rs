//! Printing: Markdown on stdout (what goes into docs/benchmarks.md), or one
//! JSON document with `--json`. Notes, progress and errors for people go to
//! stderr, so stdout stays clean.

use serde_json::{json, Value};

pub struct Printer {
    pub json: bool,
}

impl Printer {
    /// A remark for people, on stderr.
    pub fn note(&self, text: &str) {
        eprintln!("stockledger-bench: {text}");
    }

    /// A progress line for people, on stderr.
    pub fn progress(&self, text: &str) {
        eprintln!("  {text}");
    }

    /// The result: `value` as JSON with `--json`, else `markdown`.
    pub fn result(&self, value: &Value, markdown: &str) {
        if self.json {
            println!("{}", serde_json::to_string_pretty(value).expect("json"));
        } else {
            print!("{markdown}");
        }
    }

    /// What went wrong: on stderr, or as a JSON document on stdout.
    pub fn error(&self, e: &anyhow::Error) {
        if self.json {
            let doc = json!({"code": "INTERNAL", "message": format!("{e:#}")});
            println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
        } else {
            eprintln!("error: {e:#}");
        }
    }
}

/// A Markdown table of `header` and `rows`, ending with a newline.
pub fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let mut out = line(&header);
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_markdown_table_has_its_header_rule_and_rows() {
        let rows = vec![vec!["a".to_owned(), String::new()]];
        assert_eq!(
            super::markdown_table(&["x", "y"], &rows),
            "| x | y |\n|---|---|\n| a |  |\n"
        );
    }
}
