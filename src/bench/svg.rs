//! A small SVG line chart (callers on a log axis), so the benchmark can
//! draw its figures without a plotting dependency.

use std::fmt::Write;

pub struct Series {
    pub name: String,
    /// (callers, value)
    pub points: Vec<(f64, f64)>,
}

const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];
const W: f64 = 560.0;
const H: f64 = 320.0;
const PAD_L: f64 = 70.0;
const PAD_B: f64 = 45.0;
const PAD_T: f64 = 30.0;
const PAD_R: f64 = 150.0;

fn panel(out: &mut String, x0: f64, title: &str, y_label: &str, series: &[Series]) {
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    if xs.is_empty() {
        return;
    }
    let (xmin, xmax) = (
        xs.iter().cloned().fold(f64::MAX, f64::min).max(1.0).ln(),
        xs.iter().cloned().fold(1.0, f64::max).ln(),
    );
    let ymax = ys.iter().cloned().fold(0.0, f64::max).max(1e-9) * 1.1;
    let pw = W - PAD_L - PAD_R;
    let ph = H - PAD_T - PAD_B;
    let px = |x: f64| {
        x0 + PAD_L
            + if xmax > xmin {
                (x.max(1.0).ln() - xmin) / (xmax - xmin) * pw
            } else {
                pw / 2.0
            }
    };
    let py = |y: f64| PAD_T + ph - y / ymax * ph;
    let _ = writeln!(
        out,
        r#"<text x="{}" y="18" font-size="14" font-weight="bold">{title}</text>"#,
        x0 + PAD_L
    );
    let _ = writeln!(
        out,
        r##"<rect x="{}" y="{PAD_T}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##,
        x0 + PAD_L
    );
    for i in 0..=4 {
        let v = ymax * f64::from(i) / 4.0;
        let label = if v >= 1000.0 {
            format!("{:.0}k", v / 1000.0)
        } else {
            format!("{v:.1}")
        };
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="end">{label}</text>"#,
            x0 + PAD_L - 6.0,
            py(v) + 4.0
        );
        let _ = writeln!(
            out,
            r##"<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#eee"/>"##,
            x0 + PAD_L,
            x0 + PAD_L + pw,
            py(v),
            py(v)
        );
    }
    let mut ticks: Vec<f64> = xs.clone();
    ticks.sort_by(|a, b| a.total_cmp(b));
    ticks.dedup();
    for x in ticks {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{x}</text>"#,
            px(x),
            PAD_T + ph + 16.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">callers</text>"#,
        x0 + PAD_L + pw / 2.0,
        H - 8.0
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="11" transform="rotate(-90 {} {})" text-anchor="middle">{y_label}</text>"#,
        x0 + 14.0,
        PAD_T + ph / 2.0,
        x0 + 14.0,
        PAD_T + ph / 2.0
    );
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = s
            .points
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        for (x, y) in &s.points {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
                px(*x),
                py(*y)
            );
        }
        let ly = PAD_T + 14.0 + i as f64 * 16.0;
        let _ = writeln!(
            out,
            r#"<rect x="{}" y="{}" width="10" height="10" fill="{colour}"/>"#,
            x0 + W - PAD_R + 10.0,
            ly - 9.0
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{ly}" font-size="11">{}</text>"#,
            x0 + W - PAD_R + 24.0,
            s.name
        );
    }
}

/// Two panels side by side: throughput and p99 latency against callers.
pub fn throughput_and_p99(title: &str, throughput: &[Series], p99: &[Series]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif">"#,
        W * 2.0,
        H + 20.0
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(out, r#"<g transform="translate(0 20)">"#);
    panel(
        &mut out,
        0.0,
        &format!("{title}: commands/s"),
        "commands per second",
        throughput,
    );
    panel(
        &mut out,
        W,
        &format!("{title}: p99 latency"),
        "p99 latency (ms)",
        p99,
    );
    out.push_str("</g>\n</svg>\n");
    out
}
