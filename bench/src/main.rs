//! `duraq-bench`: the measuring half of `cargo xtask bench` (issue 7).
//!
//! Why a separate binary: benchmarks need release builds and real OS processes
//! (a worker process, producer processes, the peak RSS of a worker), and wall-clock
//! figures must never live in tests. `cargo xtask bench` builds this binary and runs
//! it once per (store, scenario, run); each run prints its figures as JSON lines, and
//! `report` turns the collected lines into the table and `results.json`.
//!
//! Commands:
//! - `list --store K [--quick] [--soak]`: the scenarios that apply to store `K`,
//!   one per line (`soak` only with `--soak`, or `--quick` on PostgreSQL).
//! - `run <scenario> --store K --database D --run I [--quick]`: one run of one
//!   scenario on a fresh database (`D`: a directory for SQLite, a URL for
//!   PostgreSQL); prints `{"store","figure","value","unit","run","load1"}` lines.
//! - `worker` / `producer`: the child processes the scenarios spawn (see
//!   [`worker`] and [`producer`]); they speak a line protocol on stdin/stdout.
//! - `report --raw FILE --out FILE`: median and spread per figure, vs the targets.

mod args;
mod child;
mod machine;
mod producer;
mod ratios;
mod report;
mod scenarios;
mod target;
mod targets;
mod worker;

use anyhow::{bail, Result};

use args::Args;

/// The one job name every scenario enqueues and every bench worker runs (no-op).
pub const JOB: &str = "bench.noop";

const USAGE: &str = "usage: duraq-bench <list|run|worker|producer|report> [options]
  list --store sqlite-full|sqlite-normal|postgres [--quick] [--soak]
  run <scenario> --store K --database DIR-or-URL --run I [--quick]
      [--minutes M] [--rate R]   (soak: its length, 30 (1 with --quick), and jobs/s, 500)
  worker --store K --database PATH-or-URL [--schema S] [--concurrency 64]
      [--keep-ms K [--sweep-ms S]]
  producer --store K --database PATH-or-URL [--schema S] --count N [--tasks 1]
  report --raw FILE --out FILE";

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(e) = runtime.block_on(real_main(argv)) {
        eprintln!("duraq-bench: error: {e:#}");
        std::process::exit(1);
    }
}

async fn real_main(argv: Vec<String>) -> Result<()> {
    let Some((command, rest)) = argv.split_first() else {
        bail!("{USAGE}");
    };
    let args = Args::parse(rest)?;
    match command.as_str() {
        "list" => {
            let kind = target::Kind::parse(args.required("store")?)?;
            for name in scenarios::names(kind, args.flag("quick"), args.flag("soak")) {
                println!("{name}");
            }
            Ok(())
        }
        "run" => scenarios::run(&args).await,
        "worker" => worker::main(&args).await,
        "producer" => producer::main(&args).await,
        "report" => report::main(&args),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => bail!("unknown command {other:?}\n{USAGE}"),
    }
}
