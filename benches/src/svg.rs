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
/// Size of one panel, and its margins around the plot area (the right one
/// holds the legend).
const W: f64 = 560.0;
const H: f64 = 320.0;
const PAD_L: f64 = 70.0;
const PAD_B: f64 = 45.0;
const PAD_T: f64 = 30.0;
const PAD_R: f64 = 150.0;
/// Horizontal grid lines above zero.
const Y_GRID_LINES: u32 = 4;
/// Head room above the highest value.
const Y_HEADROOM: f64 = 1.1;

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

/// One chart at horizontal offset `x0`; nothing when there are no points.
fn panel(out: &mut String, x0: f64, title: &str, y_label: &str, series: &[Series]) {
    let Some(panel) = Panel::new(x0, series) else {
        return;
    };
    panel.frame(out, title);
    panel.y_grid(out);
    panel.x_ticks(out, series);
    panel.axis_labels(out, y_label);
    for (i, s) in series.iter().enumerate() {
        panel.series(out, i, s);
    }
}

/// A panel's placement and scales: callers on a log axis, values linear
/// from zero.
struct Panel {
    x0: f64,
    /// Logarithms of the smallest and largest callers.
    xmin: f64,
    xmax: f64,
    ymax: f64,
    /// Width and height of the plot area.
    pw: f64,
    ph: f64,
}

impl Panel {
    fn new(x0: f64, series: &[Series]) -> Option<Panel> {
        let points = || series.iter().flat_map(|s| s.points.iter());
        points().next()?;
        let ymax = points().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * Y_HEADROOM;
        Some(Panel {
            x0,
            xmin: points().map(|p| p.0).fold(f64::MAX, f64::min).max(1.0).ln(),
            xmax: points().map(|p| p.0).fold(1.0, f64::max).ln(),
            ymax,
            pw: W - PAD_L - PAD_R,
            ph: H - PAD_T - PAD_B,
        })
    }

    fn px(&self, x: f64) -> f64 {
        self.x0
            + PAD_L
            + if self.xmax > self.xmin {
                (x.max(1.0).ln() - self.xmin) / (self.xmax - self.xmin) * self.pw
            } else {
                self.pw / 2.0
            }
    }

    fn py(&self, y: f64) -> f64 {
        PAD_T + self.ph - y / self.ymax * self.ph
    }

    /// The title and the plot area's border.
    fn frame(&self, out: &mut String, title: &str) {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="18" font-size="14" font-weight="bold">{title}</text>"#,
            self.x0 + PAD_L
        );
        let _ = writeln!(
            out,
            r##"<rect x="{}" y="{PAD_T}" width="{}" height="{}" fill="none" stroke="#999"/>"##,
            self.x0 + PAD_L,
            self.pw,
            self.ph
        );
    }

    /// Value labels and horizontal grid lines.
    fn y_grid(&self, out: &mut String) {
        for i in 0..=Y_GRID_LINES {
            let v = self.ymax * f64::from(i) / f64::from(Y_GRID_LINES);
            let label = if v >= 1000.0 {
                format!("{:.0}k", v / 1000.0)
            } else {
                format!("{v:.1}")
            };
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" font-size="11" text-anchor="end">{label}</text>"#,
                self.x0 + PAD_L - 6.0,
                self.py(v) + 4.0
            );
            let _ = writeln!(
                out,
                r##"<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#eee"/>"##,
                self.x0 + PAD_L,
                self.x0 + PAD_L + self.pw,
                self.py(v),
                self.py(v)
            );
        }
    }

    /// A label under every distinct number of callers.
    fn x_ticks(&self, out: &mut String, series: &[Series]) {
        let mut ticks: Vec<f64> = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        ticks.sort_by(|a, b| a.total_cmp(b));
        ticks.dedup();
        for x in ticks {
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{x}</text>"#,
                self.px(x),
                PAD_T + self.ph + 16.0
            );
        }
    }

    /// The axes' names.
    fn axis_labels(&self, out: &mut String, y_label: &str) {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">callers</text>"#,
            self.x0 + PAD_L + self.pw / 2.0,
            H - 8.0
        );
        let (x, y) = (self.x0 + 14.0, PAD_T + self.ph / 2.0);
        let _ = writeln!(
            out,
            r#"<text x="{x}" y="{y}" font-size="11" transform="rotate(-90 {x} {y})" text-anchor="middle">{y_label}</text>"#,
        );
    }

    /// Series `i`: its line, its points and its legend entry.
    fn series(&self, out: &mut String, i: usize, s: &Series) {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = s
            .points
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", self.px(*x), self.py(*y)))
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
                self.px(*x),
                self.py(*y)
            );
        }
        let ly = PAD_T + 14.0 + i as f64 * 16.0;
        let _ = writeln!(
            out,
            r#"<rect x="{}" y="{}" width="10" height="10" fill="{colour}"/>"#,
            self.x0 + W - PAD_R + 10.0,
            ly - 9.0
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{ly}" font-size="11">{}</text>"#,
            self.x0 + W - PAD_R + 24.0,
            s.name
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_panels_with_a_line_and_a_legend_per_series() {
        let series = |name: &str| Series {
            name: name.into(),
            points: vec![(1.0, 10.0), (16.0, 200.0), (512.0, 3000.0)],
        };
        let svg = throughput_and_p99("hot", &[series("a"), series("b")], &[series("c")]);
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert_eq!(svg.matches("<circle").count(), 9);
        assert!(svg.contains(">hot: commands/s<") && svg.contains(">hot: p99 latency<"));
        assert_eq!(
            throughput_and_p99("t", &[], &[]).matches("<text").count(),
            0
        );
    }
}
