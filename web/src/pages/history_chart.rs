//! The overview's throughput chart, rendered on the server as SVG from the
//! stored history (`docs/history.md`): one line per outcome (completed, failed,
//! retried, cancelled, enqueued) over the last hour, 24 hours or 7 days, with a
//! y axis (jobs per point), time ticks on the x axis, and a legend with each
//! series' total over the view. Gaps (no process sampled) break the lines.
//! Every number comes from the database, so two dashboards (or one restarted)
//! draw the same chart.

use duraq_core::inspect::{throughput_sum, utc_time, HistoryRange, OutcomeTotals, ThroughputPoint};
use maud::{html, Markup};

/// The series drawn, in legend order: (`data-series` name, legend label,
/// colour; the legend's swatches repeat the colours in `app.css`, since the
/// Content-Security-Policy allows no inline style).
const SERIES: [(&str, &str, &str); 5] = [
    ("completed", "completed", "#2e7d32"),
    ("failed", "failed", "#c62828"),
    ("retried", "retried", "#ef6c00"),
    ("cancelled", "cancelled", "#6d6d6d"),
    ("enqueued", "enqueued", "#1565c0"),
];

const W: f64 = 720.0;
const H: f64 = 220.0;
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 8.0;
const RIGHT: f64 = 8.0;

fn value(t: &OutcomeTotals, series: &str) -> i64 {
    match series {
        "completed" => t.completed,
        "failed" => t.failed + t.orphaned,
        "retried" => t.retried,
        "cancelled" => t.cancelled,
        _ => t.enqueued,
    }
}

/// A y-axis top at or above `max`: 1, 2 or 5 times a power of ten.
fn nice_top(max: i64) -> i64 {
    let mut step = 1;
    loop {
        for m in [1, 2, 5] {
            if m * step >= max.max(1) {
                return m * step;
            }
        }
        step *= 10;
    }
}

/// The chart section (`#history`), with its range switch.
pub fn history_section(
    range: HistoryRange,
    points: &[ThroughputPoint],
    link_for: impl Fn(HistoryRange) -> String,
) -> Markup {
    let sums = throughput_sum(points);
    let max = points
        .iter()
        .filter_map(|p| p.counts)
        .flat_map(|c| SERIES.map(|(s, _, _)| value(&c, s)))
        .max()
        .unwrap_or(0);
    let top = nice_top(max);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let n = points.len().max(1);
    let x = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / n as f64;
    let y = |v: i64| TOP + plot_h * (1.0 - v as f64 / top as f64);
    let per = match range {
        HistoryRange::Hour => "per minute",
        HistoryRange::Day => "per 15 minutes",
        HistoryRange::Week => "per hour",
    };
    let ticks_x: Vec<usize> = (0..=4).map(|k| k * (n - 1) / 4).collect();
    let label_at = |i: usize| {
        let at = points.get(i).map_or(0, |p| p.start_ms);
        let text = utc_time(at);
        match range {
            HistoryRange::Week => text.get(5..16).unwrap_or(&text).to_owned(),
            _ => text.get(11..16).unwrap_or(&text).to_owned(),
        }
    };
    html! {
        section #history data-range=(range.as_str()) {
            h2 { "Throughput" }
            nav.ranges aria-label="Time range" {
                @for r in HistoryRange::ALL {
                    @if r == range {
                        strong data-range-link=(r.as_str()) aria-current="true" { (r.as_str()) }
                    } @else {
                        a data-range-link=(r.as_str()) href=(link_for(r)) { (r.as_str()) }
                    }
                    " "
                }
            }
            p.muted { "Jobs " (per) " from the stored history: each point holds what happened \
                       between one sample and the next (samples are taken once a minute by \
                       workers and dashboards); a break in a line is a time nobody sampled. \
                       Failed includes orphaned." }
            svg #throughput viewBox=(format!("0 0 {W} {H}")) role="img"
                aria-label=(format!("Jobs {per}, last {}", range.as_str()))
                data-max=(top) data-points=(points.len()) {
                g.axis data-axis="y" {
                    line x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(TOP + plot_h) stroke="#999" {}
                    @for v in [0, top / 2, top] {
                        line x1=(LEFT - 4.0) y1=(y(v)) x2=(W - RIGHT) y2=(y(v)) stroke="#e0e0e0" {}
                        text.tick x=(LEFT - 6.0) y=(y(v) + 4.0) text-anchor="end" font-size="11" { (v) }
                    }
                }
                g.axis data-axis="x" {
                    line x1=(LEFT) y1=(TOP + plot_h) x2=(W - RIGHT) y2=(TOP + plot_h) stroke="#999" {}
                    @for i in &ticks_x {
                        text.tick x=(x(*i)) y=(H - 6.0) text-anchor="middle" font-size="11" { (label_at(*i)) " UTC" }
                    }
                }
                @for (name, _, colour) in SERIES {
                    g data-series=(name) {
                        @for segment in segments(points, name) {
                            @if segment.len() == 1 {
                                circle cx=(x(segment[0].0)) cy=(y(segment[0].1)) r="2" fill=(colour) {}
                            } @else {
                                polyline fill="none" stroke=(colour) stroke-width="1.5"
                                    points=(segment.iter().map(|(i, v)| format!("{:.1},{:.1}", x(*i), y(*v))).collect::<Vec<_>>().join(" ")) {}
                            }
                        }
                    }
                }
            }
            ul.legend aria-label="Legend" {
                @for (name, label, _) in SERIES {
                    li data-series=(name) {
                        span.swatch {}
                        " " (label) " "
                        span.total data-total=(name) { (value(&sums, name)) }
                    }
                }
            }
        }
    }
}

/// The runs of consecutive non-gap points of one series: (index, value).
fn segments(points: &[ThroughputPoint], series: &str) -> Vec<Vec<(usize, i64)>> {
    let mut out: Vec<Vec<(usize, i64)>> = Vec::new();
    let mut current = Vec::new();
    for (i, p) in points.iter().enumerate() {
        match p.counts {
            Some(c) => current.push((i, value(&c, series))),
            None if !current.is_empty() => out.push(std::mem::take(&mut current)),
            None => {}
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn y_axis_tops_are_round() {
        assert_eq!(nice_top(0), 1);
        assert_eq!(nice_top(3), 5);
        assert_eq!(nice_top(11), 20);
        assert_eq!(nice_top(500), 500);
    }

    #[test]
    fn gaps_split_the_lines() {
        let p = |c: Option<i64>| ThroughputPoint {
            start_ms: 0,
            counts: c.map(|n| OutcomeTotals {
                completed: n,
                ..OutcomeTotals::default()
            }),
        };
        let points = [p(Some(1)), p(Some(2)), p(None), p(Some(3))];
        assert_eq!(
            segments(&points, "completed"),
            vec![vec![(0, 1), (1, 2)], vec![(3, 3)]]
        );
    }
}
