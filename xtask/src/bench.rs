//! `cargo xtask bench [--quick] [--stores sqlite,postgres] [--runs N] [--only a,b]
//! [--soak] [--soak-minutes M]`: the driver of issue 7's benchmarks.
//!
//! Why it is split this way: xtask keeps to anyhow + std, so the measuring lives in
//! the `duraq-bench` binary and this file only orchestrates — build it, provide a
//! PostgreSQL (`DATABASE_URL`, else a throwaway server with stock durability), run
//! `duraq-bench run <scenario>` once per (run, store, scenario) as a fresh process
//! on a fresh database, collect the JSON lines in `target/bench/raw.jsonl`, and let
//! `duraq-bench report` print the table and write `target/bench/results.json`.
//! Runs are interleaved (run 1 of everything, then run 2, …) so a burst of noise
//! on a shared machine widens a spread instead of shifting one figure.
//!
//! `--quick` is the smoke version `test-all` can afford: tiny sizes, one run, every
//! scenario, and a dev-profile build — test-all has just built the workspace's
//! dependencies in that profile, while a first release build costs minutes on two
//! cores, and quick figures are not meant to be read anyway.
//!
//! The `soak` scenario (30 minutes per store) is opt-in: `--soak` or `--only soak`
//! adds it, it runs once (in round 1, not every round), and `--soak-minutes`
//! sets its length. Under `--quick` it runs for one minute on PostgreSQL only.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::pg;

const USAGE: &str =
    "usage: cargo xtask bench [--quick] [--stores sqlite,postgres] [--runs N] [--only SCENARIO,…]
                         [--soak] [--soak-minutes M] [--no-build]
  stores: sqlite (= sqlite-full + sqlite-normal), sqlite-full, sqlite-normal, postgres
  --quick           tiny sizes, one run, debug build (the smoke run test-all makes)
  --soak            add the soak scenario (a steady 500 jobs/s with retention on, sampled
                    every minute; 30 minutes per store, run once, sqlite-full and postgres);
                    not in the default list, as it would double the full bench's time.
                    Under --quick it runs anyway, for 1 minute, on postgres only.
  --only soak       the soak alone (implies --soak)
  --soak-minutes M  the soak's length (default 30, 1 with --quick)";

struct Options {
    quick: bool,
    stores: Vec<String>,
    runs: u32,
    only: Option<Vec<String>>,
    build: bool,
    soak: bool,
    soak_minutes: Option<String>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options {
        quick: false,
        stores: vec!["sqlite".into(), "postgres".into()],
        runs: 0,
        only: None,
        build: true,
        soak: false,
        soak_minutes: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().context(format!("{arg} needs a value"));
        match arg.as_str() {
            "--quick" => opts.quick = true,
            "--stores" => opts.stores = split(&value()?),
            "--runs" => opts.runs = value()?.parse().context("--runs")?,
            "--only" => opts.only = Some(split(&value()?)),
            "--no-build" => opts.build = false,
            "--soak" => opts.soak = true,
            "--soak-minutes" => opts.soak_minutes = Some(value()?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown bench argument {other:?}\n\n{USAGE}"),
        }
    }
    let mut stores = Vec::new();
    for s in &opts.stores {
        match s.as_str() {
            "sqlite" => stores.extend(["sqlite-full".into(), "sqlite-normal".into()]),
            "sqlite-full" | "sqlite-normal" | "postgres" => stores.push(s.clone()),
            other => bail!("unknown store {other:?}\n\n{USAGE}"),
        }
    }
    opts.stores = stores;
    if opts
        .only
        .as_ref()
        .is_some_and(|o| o.iter().any(|s| s == "soak"))
    {
        opts.soak = true;
    }
    if opts.runs == 0 {
        opts.runs = if opts.quick { 1 } else { 3 };
    }
    Ok(opts)
}

fn split(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let opts = parse(args)?;
    let total = Instant::now();
    let profile = if opts.quick { "debug" } else { "release" };
    if opts.build {
        println!("==> building duraq-bench ({profile})");
        let mut build = crate::cargo(root);
        build.args(["build", "-p", "duraq-bench"]);
        if !opts.quick {
            build.arg("--release");
        }
        if !build.status().context("running cargo build")?.success() {
            bail!("building duraq-bench failed");
        }
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(Into::into)
        .unwrap_or_else(|| root.join("target"));
    let exe = target_dir.join(profile).join("duraq-bench");
    let out_dir = target_dir.join("bench");
    let sqlite_dir = out_dir.join("sqlite");
    std::fs::create_dir_all(&sqlite_dir)?;

    let mut _server = None;
    let pg_url = if !opts.stores.iter().any(|s| s == "postgres") {
        String::new()
    } else if let Some(url) = std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()) {
        println!("==> PostgreSQL: DATABASE_URL from the environment (its durability settings are reported)");
        url
    } else {
        println!("==> PostgreSQL: starting a throwaway server with stock durability");
        let server = pg::TempPostgres::start_durable()?;
        let url = server.url().to_owned();
        _server = Some(server);
        url
    };

    // Which scenarios each store runs (the bench binary owns that list).
    let mut plan: Vec<(String, Vec<String>)> = Vec::new();
    for store in &opts.stores {
        let mut list = Command::new(&exe);
        list.args(["list", "--store", store]);
        if opts.quick {
            list.arg("--quick");
        }
        if opts.soak {
            list.arg("--soak");
        }
        let out = list.output()?;
        if !out.status.success() {
            bail!(
                "duraq-bench list failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let scenarios = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|s| opts.only.as_ref().is_none_or(|o| o.iter().any(|x| x == s)))
            .map(str::to_owned)
            .collect();
        plan.push((store.clone(), scenarios));
    }

    let raw_path = out_dir.join("raw.jsonl");
    let mut raw = std::fs::File::create(&raw_path)?;
    let mut failures = Vec::new();
    for run in 1..=opts.runs {
        for (store, scenarios) in &plan {
            for scenario in scenarios {
                if scenario == "soak" && run > 1 {
                    continue; // long by design: once is the measurement
                }
                let database = if store == "postgres" {
                    pg_url.clone()
                } else {
                    sqlite_dir.display().to_string()
                };
                let label = format!("run {run}/{} {store:<13} {scenario:<15}", opts.runs);
                let started = Instant::now();
                let mut cmd = Command::new(&exe);
                cmd.args(["run", scenario, "--store", store, "--database", &database]);
                cmd.args(["--run", &run.to_string()]);
                if opts.quick {
                    cmd.arg("--quick");
                }
                if let (Some(minutes), "soak") = (&opts.soak_minutes, scenario.as_str()) {
                    cmd.args(["--minutes", minutes]);
                }
                let out = cmd.stderr(Stdio::inherit()).output()?;
                let took = started.elapsed().as_secs_f64();
                if !out.status.success() {
                    println!("{label} FAILED after {took:.1}s");
                    failures.push(format!("{store}/{scenario} (run {run})"));
                    continue;
                }
                raw.write_all(&out.stdout)?;
                let text = String::from_utf8_lossy(&out.stdout);
                let figures: Vec<String> = text.lines().filter_map(brief).collect();
                println!("{label} {took:>6.1}s  {}", figures.join("  "));
            }
        }
    }
    drop(raw);
    drop(_server);

    let results = out_dir.join("results.json");
    let mut report = Command::new(&exe);
    report
        .arg("report")
        .arg("--raw")
        .arg(&raw_path)
        .arg("--out")
        .arg(&results);
    if opts.quick {
        report.arg("--quick");
    }
    if !report.status()?.success() {
        bail!("duraq-bench report failed");
    }
    println!("bench took {:.1}s", total.elapsed().as_secs_f64());
    if !failures.is_empty() {
        bail!("failed scenarios: {}", failures.join(", "));
    }
    Ok(())
}

/// `figure=value` from one result line (no JSON parser in xtask; the lines are
/// ours and flat).
fn brief(line: &str) -> Option<String> {
    let field = |key: &str| {
        let start = line.find(&format!("\"{key}\":"))? + key.len() + 3;
        let rest = &line[start..];
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim_matches('"').to_owned())
    };
    let value: f64 = field("value")?.parse().ok()?;
    Some(format!("{}={value:.1}", field("figure")?))
}
