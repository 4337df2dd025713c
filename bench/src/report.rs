//! `duraq-bench report`: turns the JSON lines of every run into the table on
//! stdout and `results.json` — per (store, figure) the median of the runs with
//! their spread (min–max), the target and whether it is met, and the highest
//! 1-minute load average seen when a run started (a noisy machine shows); plus
//! the same table as Markdown (`results.md`) for the README. A soak's
//! per-minute lines (`"series"`) go to `results.json`'s `series` as they are.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::args::Args;
use crate::targets::{binding, target, Goal};

/// The runs of one figure.
#[derive(Default)]
struct Series {
    unit: String,
    values: Vec<f64>,
    load_max: f64,
    order: usize,
}

pub fn main(args: &Args) -> Result<()> {
    let raw_path = args.required("raw")?;
    let out_path = args.required("out")?;
    let raw = std::fs::read_to_string(raw_path).with_context(|| format!("reading {raw_path}"))?;
    let mut series: BTreeMap<(String, String), Series> = BTreeMap::new();
    let mut settings = serde_json::Map::new();
    let mut stores: Vec<String> = Vec::new();
    let mut samples: Vec<Value> = Vec::new();
    for line in raw.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).with_context(|| format!("bad line {line:?}"))?;
        let store = v["store"].as_str().unwrap_or("?").to_owned();
        if !stores.contains(&store) {
            stores.push(store.clone());
        }
        if let Some(s) = v.get("settings") {
            settings.insert(store, s.clone());
            continue;
        }
        if v.get("series").is_some() {
            samples.push(v); // a soak's per-minute line: kept as it is
            continue;
        }
        let figure = v["figure"].as_str().unwrap_or("?").to_owned();
        let next = series.len();
        let entry = series.entry((store, figure)).or_insert_with(|| Series {
            order: next,
            ..Series::default()
        });
        entry.unit = v["unit"].as_str().unwrap_or("").to_owned();
        entry.values.push(v["value"].as_f64().unwrap_or(f64::NAN));
        entry.load_max = entry.load_max.max(v["load1"].as_f64().unwrap_or(0.0));
    }

    let machine = crate::machine::describe();
    let mut rows: Vec<_> = series.into_iter().collect();
    rows.sort_by_key(|((store, _), s)| (stores.iter().position(|x| x == store), s.order));
    let mut figures = Vec::new();
    let mut medians = BTreeMap::new();
    let mut markdown = String::from(
        "| store | figure | median | spread (min–max) | unit | target |\n|---|---|--:|--:|---|---|\n",
    );
    println!("\nduraq bench — {}", crate::machine::summary(&machine));
    println!(
        "{:<14} {:<30} {:>12} {:>25} {:<7} {:>4} {:<12} {:<6} {:>5}",
        "store", "figure", "median", "spread (min–max)", "unit", "runs", "target", "", "load"
    );
    for ((store, figure), s) in rows {
        let mut sorted = s.values.clone();
        sorted.sort_by(f64::total_cmp);
        let (lo, hi, med) = (sorted[0], sorted[sorted.len() - 1], median(&sorted));
        medians.insert((store.clone(), figure.clone()), med);
        let goal = target(&store, &figure);
        let met = goal.map(|g| g.met(med));
        let (goal_text, verdict) = match (goal, binding(&store)) {
            (Some(g), true) => (describe(g), if g.met(med) { "ok" } else { "MISS" }),
            (Some(g), false) => (format!("({})", describe(g)), "info"),
            (None, _) => (String::new(), ""),
        };
        println!(
            "{:<14} {:<30} {:>12} {:>25} {:<7} {:>4} {:<12} {:<6} {:>5.2}",
            store,
            figure,
            num(med),
            format!("{} – {}", num(lo), num(hi)),
            s.unit,
            sorted.len(),
            goal_text,
            verdict,
            s.load_max,
        );
        markdown.push_str(&format!(
            "| {store} | {figure} | {} | {} – {} | {} | {} {verdict} |\n",
            num(med),
            num(lo),
            num(hi),
            s.unit,
            goal_text,
        ));
        figures.push(json!({
            "store": store, "figure": figure, "unit": s.unit, "median": med,
            "min": lo, "max": hi, "runs": s.values, "target": goal.map(describe),
            "met": met, "binding": binding(&store), "load1_max": s.load_max,
        }));
    }
    let ratios = crate::ratios::ratios(&medians, &stores);
    if !ratios.is_empty() {
        println!("\nduraq / bare driver on the same schema (medians):");
        markdown.push_str("\n| store | duraq figure | / raw figure | ratio |\n|---|---|---|--:|\n");
    }
    for r in &ratios {
        println!(
            "{:<14} {:<16} / {:<10} {:>6.2}",
            r.store, r.figure, r.raw, r.value
        );
        markdown.push_str(&format!(
            "| {} | {} | {} | {:.2} |\n",
            r.store, r.figure, r.raw, r.value
        ));
    }
    let ratios: Vec<Value> = ratios
        .iter()
        .map(|r| json!({"store": r.store, "figure": r.figure, "raw": r.raw, "ratio": r.value}))
        .collect();
    let results = json!({
        "generated_unix": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        "quick": args.flag("quick"),
        "machine": machine,
        "settings": settings,
        "figures": figures,
        "vs_raw": ratios,
        "series": samples,
    });
    std::fs::write(out_path, serde_json::to_string_pretty(&results)? + "\n")
        .with_context(|| format!("writing {out_path}"))?;
    let md_path = std::path::Path::new(out_path).with_extension("md");
    std::fs::write(&md_path, markdown)?;
    println!("\nsettings: {}", Value::Object(settings));
    println!("wrote {out_path} and {} (README table)", md_path.display());
    Ok(())
}

/// The median of sorted values (mean of the middle two for an even count).
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// A goal for humans: `≥ 2,000`, `≤ 20.0`.
fn describe(goal: Goal) -> String {
    match goal {
        Goal::AtLeast(t) => format!("≥ {}", num(t)),
        Goal::AtMost(t) => format!("≤ {}", num(t)),
    }
}

/// A figure for humans: thousands separated above 1,000, three significant
/// digits below.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v.abs() >= 1_000.0 {
        let digits = format!("{:.0}", v.abs());
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        return if v < 0.0 { format!("-{out}") } else { out };
    }
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_numbers() {
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert_eq!(num(1_234_567.0), "1,234,567");
        assert_eq!(num(999.4), "999");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(1.234), "1.23");
    }
}
