//! `drain-retained`: issue 32's lived-in store. Every other figure is measured
//! on a fresh database, while a production queue with retention carries a long
//! history of completed jobs; on PostgreSQL each of those leaves dead row
//! versions that autovacuum may not have caught up with. This scenario measures
//! the same three shapes twice in one run, on an empty store and behind
//! `retained` completed jobs (1,000,000; 2,000 with `--quick`), so the report
//! shows each pair side by side with its ratio:
//!
//! - the in-process 10-slot drain of 10,000 jobs (`drain-inproc-10`'s shape),
//! - one-by-one enqueue (`enqueue-one`'s shape and size),
//! - batch enqueue (`enqueue-batch`'s shape and size).
//!
//! The empty store is measured first, on a database of its own that is then
//! deleted. The history is filled fast (batches of 1,000 and an in-process
//! worker with prefetch), the store closed, and the database rests 5 seconds
//! with no manual VACUUM, as a real queue would. Both stores go through the
//! same sequence (drain, then one-by-one, then batched), so the only difference
//! between them is the history.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::drain::{enqueue_and_drain_in_process, PREFETCH};
use super::{rate, Figure, Sizes};
use crate::producer::{enqueue_batched, enqueue_one_by_one};
use crate::target::Target;

/// The rest between the fill and the measurement (autovacuum's chance).
const REST: Duration = Duration::from_secs(5);

/// The three figures of one store, in jobs/s.
struct Shapes {
    drain: f64,
    one: f64,
    batch: f64,
}

/// Runs the scenario on `target` (the lived-in store) and on a sibling
/// database (the empty one).
pub async fn drain_retained(target: &Target, sizes: Sizes) -> Result<Vec<Figure>> {
    let empty_target = target.sibling()?;
    let empty = measure(&empty_target, sizes, 0).await;
    empty_target.cleanup().await?;
    let empty = empty?;

    let fill = enqueue_and_drain_in_process(target, sizes.retained, 10, PREFETCH, 0).await?;
    tokio::time::sleep(REST).await;
    let lived = measure(target, sizes, sizes.retained).await?;

    let label = retained_label(sizes.retained);
    let mut out = Vec::new();
    for (shape, e, l) in [
        ("drain_inproc_10", empty.drain, lived.drain),
        ("enqueue_one", empty.one, lived.one),
        ("enqueue_batch", empty.batch, lived.batch),
    ] {
        out.push(Figure::new(format!("{shape}_empty"), e, "jobs/s"));
        out.push(Figure::new(format!("{shape}_{label}"), l, "jobs/s"));
        out.push(Figure::new(format!("{shape}_{label}_ratio"), l / e, "x"));
    }
    out.push(Figure::new(
        "retained_fill_s",
        (fill.enqueue + fill.drain).as_secs_f64(),
        "s",
    ));
    Ok(out)
}

/// The drain, then the one-by-one and the batched enqueue, on `target`, which
/// already holds `history` completed jobs.
async fn measure(target: &Target, sizes: Sizes, history: usize) -> Result<Shapes> {
    let jobs = sizes.drain_in_process;
    let timed = enqueue_and_drain_in_process(target, jobs, 10, 0, history).await?;
    let store = target.open_producer().await?;
    let started = Instant::now();
    enqueue_one_by_one(&store, sizes.one_by_one, 1).await?;
    let one = rate(sizes.one_by_one, started.elapsed());
    let started = Instant::now();
    enqueue_batched(&store, sizes.batch_total, sizes.batch).await?;
    let batch = rate(sizes.batch_total, started.elapsed());
    store.close().await?;
    Ok(Shapes {
        drain: rate(jobs, timed.drain),
        one,
        batch,
    })
}

/// `retained_1m` for 1,000,000 jobs, `retained_200k`, `retained_2k`: the size
/// is part of the figure's name, so a quick run's figures never pass for a full run's.
fn retained_label(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("retained_{}m", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("retained_{}k", n / 1_000),
        n => format!("retained_{n}"),
    }
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
