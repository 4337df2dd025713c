//! `drain-retained`: issue 32's lived-in store. Every other figure is measured
//! on a fresh database, while a production queue with retention carries a long
//! history of completed jobs; on PostgreSQL each of those leaves dead row
//! versions that autovacuum may not have caught up with. This scenario measures
//! the same three shapes twice in one run, on an empty store and behind
//! `retained` completed jobs (1,000,000; 2,000 with `--quick`), so the report
//! shows each pair side by side with its ratio:
//!
//! - the in-process 10-slot drain of 10,000 jobs without prefetch
//!   (`drain-inproc-10-prefetch0`'s shape: the store's cost, not the worker's
//!   claiming ahead),
//! - one-by-one enqueue (`enqueue-one`'s shape and size),
//! - batch enqueue (`enqueue-batch`'s shape and size).
//!
//! The empty store is a database of its own, deleted afterwards. The history is
//! filled the way a queue lives, in rounds of [`FILL_ROUND`] jobs (batches of
//! 1,000, then an in-process worker with prefetch drains them), so the figure
//! is the cost of the kept history rather than of a million-job backlog drained
//! seconds before (a burst that leaves a PostgreSQL table of live jobs as large
//! as the backlog, to be vacuumed once). Then the store is closed, the
//! operating system's dirty pages are written out (`sync`, see
//! `flush_os_writes`), and the database rests 5 seconds with no manual
//! VACUUM, as a real queue would. Then each shape runs on the lived-in store and right after
//! on the empty one, so the two figures of a pair are seconds apart (measuring
//! the empty store first, minutes earlier, let one burst of load on a shared
//! machine move all three ratios). Both stores go through the same sequence
//! (drain, then one-by-one, then batched), so the only difference between them
//! is the history.

use std::time::{Duration, Instant};

use anyhow::Result;
use duraq_core::worker::PrefetchPolicy;
use duraq_core::EnqueueOptions;

use super::drain::{enqueue_and_drain_in_process, PREFETCH};
use super::{rate, size_label, Figure, Sizes};
use crate::producer::{enqueue_batched, enqueue_one_by_one};
use crate::target::Target;

/// The rest between the fill and the measurement (autovacuum's chance).
const REST: Duration = Duration::from_secs(5);

/// Jobs enqueued and drained per round of the fill.
const FILL_ROUND: usize = 20_000;

/// Runs the scenario on `target` (the lived-in store) and on a sibling
/// database (the empty one).
pub async fn drain_retained(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let empty = target.sibling()?;
    let result = pairs(target, &empty, sizes).await;
    empty.cleanup().await?;
    result
}

async fn pairs(lived: &Target, empty: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let mut fill = Duration::ZERO;
    let mut kept = 0;
    while kept < sizes.retained {
        let round = FILL_ROUND.min(sizes.retained - kept);
        let prefetch = Some(PrefetchPolicy::Fixed(PREFETCH));
        let timed =
            enqueue_and_drain_in_process(lived, round, 10, prefetch, kept, &EnqueueOptions::new())
                .await?;
        fill += timed.enqueue + timed.drain;
        kept += round;
    }
    flush_os_writes()?;
    tokio::time::sleep(REST).await;
    let label = retained_label(sizes.retained);
    let mut out = Vec::new();
    // Each shape on the lived-in store, then at once on the empty one, so a
    // burst of load on a shared machine moves one pair, not every empty figure.
    for shape in [Shape::Drain, Shape::One, Shape::Batch] {
        let l = shape.measure(lived, sizes, sizes.retained).await?;
        let e = shape.measure(empty, sizes, 0).await?;
        let name = shape.name();
        out.push(Figure::new(format!("{name}_empty"), e, "jobs/s"));
        out.push(Figure::new(format!("{name}_{label}"), l, "jobs/s"));
        out.push(Figure::new(format!("{name}_{label}_ratio"), l / e, "x"));
    }
    out.push(Figure::new("retained_fill_s", fill.as_secs_f64(), "s"));
    Ok(out)
}

/// Writes the fill's dirty pages out (`sync`) before the rest. Without it the
/// kernel wrote back the fill's hundreds of megabytes during the first
/// measurement after the rest, whose fsyncs then waited behind them: SQLite's
/// drain behind the history measured 0.68-0.90 of the empty store's when it
/// ran first, and 0.92-0.99 when the empty store ran first (three runs each).
fn flush_os_writes() -> Result<()> {
    let status = std::process::Command::new("sync").status()?;
    anyhow::ensure!(status.success(), "sync failed: {status}");
    Ok(())
}

/// The three shapes measured on both stores.
#[derive(Clone, Copy)]
enum Shape {
    /// `drain-inproc-10-prefetch0`: 10,000 jobs, 10 slots, `prefetch(0)`.
    Drain,
    /// `enqueue-one`.
    One,
    /// `enqueue-batch`.
    Batch,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Self::Drain => "drain_inproc_10",
            Self::One => "enqueue_one",
            Self::Batch => "enqueue_batch",
        }
    }

    /// The shape's rate in jobs/s on `target`, which holds `history`
    /// completed jobs (the drain waits for the count snapshot to show them
    /// all plus its own).
    async fn measure(self, target: &Target, sizes: Sizes, history: usize) -> Result<f64> {
        if let Self::Drain = self {
            let jobs = sizes.drain_in_process;
            let timed = enqueue_and_drain_in_process(
                target,
                jobs,
                10,
                Some(PrefetchPolicy::Fixed(0)),
                history,
                &EnqueueOptions::new(),
            )
            .await?;
            return Ok(rate(jobs, timed.drain));
        }
        let store = target.open_producer().await?;
        let started = Instant::now();
        let n = match self {
            Self::One => enqueue_one_by_one(&store, sizes.one_by_one, 1).await?,
            _ => {
                enqueue_batched(&store, sizes.batch_total, sizes.batch).await?;
                sizes.batch_total
            }
        };
        let jobs_s = rate(n, started.elapsed());
        store.close().await?;
        Ok(jobs_s)
    }
}

/// `retained_1m` for 1,000,000 jobs, `retained_200k`, `retained_2k`: the size
/// is part of the figure's name, so a quick run's figures never pass for a full run's.
fn retained_label(n: usize) -> String {
    format!("retained_{}", size_label(n))
}

#[cfg(test)]
mod tests {
    use super::retained_label;

    #[test]
    fn labels_name_the_size() {
        assert_eq!(retained_label(1_000_000), "retained_1m");
        assert_eq!(retained_label(200_000), "retained_200k");
        assert_eq!(retained_label(2_000), "retained_2k");
        assert_eq!(retained_label(1_500), "retained_1500");
    }
}
