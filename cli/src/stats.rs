//! `duraq stats [--since 1h|24h|7d] [--queue Q]`: throughput from the stored
//! history (`docs/history.md`): per point (1 minute, 15 minutes or 1 hour) how
//! many jobs were enqueued, completed, failed, retried, cancelled and
//! orphaned, and the sums over the view. It samples the history first (the
//! first sample of a minute wins, so this is harmless next to workers and
//! dashboards), then reads the samples of the view plus the live totals, so
//! the newest point runs to now. The arithmetic is core's [`throughput`].

use anyhow::Result;
use clap::Args;
use duraq_core::inspect::{
    throughput, throughput_sum, utc_time, with_current, HistoryRange, OutcomeTotals,
    ThroughputPoint,
};
use duraq_core::QueueName;

use crate::db::Database;
use crate::output::{print_json, table};

/// `duraq stats`: see [`crate::stats`].
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The view: `1h` (per minute), `24h` (per 15 minutes) or `7d` (per hour).
    #[arg(long, value_name = "RANGE", default_value = "1h")]
    pub since: String,
    /// Only this queue.
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,
}

pub async fn run(db: &Database, a: &StatsArgs, json: bool) -> Result<()> {
    let range = HistoryRange::parse(&a.since)?;
    let queue = match &a.queue {
        Some(q) => Some(QueueName::named(q)?.as_str().to_owned()),
        None => None,
    };
    let store = db.open_existing(false).await?;
    crate::db::closing(&store, async {
        store.record_history().await?;
        let now = crate::parse::now_ms();
        let samples = store.history(range.read_from(now)).await?;
        let current = store.outcome_totals().await?;
        let samples = with_current(samples, &current, now);
        let points = throughput(&samples, queue.as_deref(), range, now);
        if json {
            print_json(&stats_json(range, queue.as_deref(), &points));
        } else {
            print!("{}", render(range, &points));
        }
        Ok(())
    })
    .await
}

fn totals_json(t: &OutcomeTotals) -> serde_json::Value {
    serde_json::json!({
        "enqueued": t.enqueued,
        "completed": t.completed,
        "failed": t.failed,
        "retried": t.retried,
        "cancelled": t.cancelled,
        "orphaned": t.orphaned,
    })
}

/// `{"range","bucketMs","queue","points":[{"startMs","counts":{…}|null}],"totals":{…}}`;
/// `counts` is `null` for a gap (nobody sampled then).
pub fn stats_json(
    range: HistoryRange,
    queue: Option<&str>,
    points: &[ThroughputPoint],
) -> serde_json::Value {
    let points: Vec<serde_json::Value> = points
        .iter()
        .map(|p| {
            serde_json::json!({
                "startMs": p.start_ms,
                "counts": p.counts.as_ref().map(totals_json),
            })
        })
        .collect();
    let sums = throughput_sum_of(&points);
    serde_json::json!({
        "range": range.as_str(),
        "bucketMs": range.bucket_ms(),
        "queue": queue,
        "points": points,
        "totals": sums,
    })
}

fn throughput_sum_of(points: &[serde_json::Value]) -> serde_json::Value {
    let mut sum = [0i64; 6];
    for p in points {
        if let Some(c) = p["counts"].as_object() {
            for (slot, name) in sum.iter_mut().zip(OutcomeTotals::NAMES) {
                *slot += c[name].as_i64().unwrap_or(0);
            }
        }
    }
    totals_json(&OutcomeTotals::from_array(sum))
}

/// The table: one row per point that has data (gaps left out), then the sums.
pub(crate) fn render(range: HistoryRange, points: &[ThroughputPoint]) -> String {
    let header = [
        "FROM (UTC)",
        "ENQUEUED",
        "COMPLETED",
        "FAILED",
        "RETRIED",
        "CANCELLED",
        "ORPHANED",
    ];
    let row = |label: String, t: &OutcomeTotals| {
        std::iter::once(label)
            .chain(
                t.as_array()
                    .iter()
                    .map(|n| duraq_core::inspect::thousands(*n)),
            )
            .collect::<Vec<String>>()
    };
    let mut rows: Vec<Vec<String>> = points
        .iter()
        .filter_map(|p| {
            let c = p.counts?;
            let at = utc_time(p.start_ms);
            Some(row(at.trim_end_matches(" UTC").to_owned(), &c))
        })
        .collect();
    if rows.is_empty() {
        return format!(
            "no history in the last {}: samples are taken once a minute by workers, \
             dashboards and `duraq stats`\n",
            range.as_str()
        );
    }
    rows.push(row(
        format!("total, last {}", range.as_str()),
        &throughput_sum(points),
    ));
    table(&header, &rows)
}
