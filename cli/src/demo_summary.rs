//! What `duraq demo` reports at the end: the nearest-rank percentiles of the
//! enqueue-to-start latencies, and the summary for people (`--json` prints
//! the summary object itself): the mix enqueued, the jobs per status with why
//! each ended there, the drain time and the worker's attempts per second.

use duraq_core::inspect::CountSnapshot;
use duraq_core::JobStatus;
use serde_json::Value;

use crate::demo_mix::{CAP, CAPPED_QUEUE};
use crate::display::thousands;
use crate::output::table;

pub fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

pub fn print_summary(s: &Value, snap: &CountSnapshot) {
    let m = &s["mix"];
    let db = s["database"].as_str().unwrap_or("?");
    println!("duraq demo on {db} (inspect: duraq --database sqlite:{db} jobs list)");
    println!(
        "enqueued {} rows in {} s: {} immediate, {} scheduled 1-3 s out, {} keyed replacements, \
         {} flaky (retry after 200 ms), {} on capped queue `{CAPPED_QUEUE}` (cap {CAP}), \
         {} idempotent ({} replays returned the original job)",
        s["rows"],
        s["enqueueSeconds"],
        m["immediate"],
        m["scheduled"],
        m["keyedReplacements"],
        m["flaky"],
        m["capped"],
        m["idempotent"],
        m["idempotentReplays"]
    );
    let why = |status: JobStatus| match status {
        JobStatus::Completed => "ran to the end (flaky jobs after one retry)",
        JobStatus::Cancelled => "replaced by a newer job under the same schedule key",
        JobStatus::Queued | JobStatus::HandedOff | JobStatus::Pending => "still open",
        JobStatus::Failed | JobStatus::Orphaned => "out of retries",
    };
    let rows: Vec<Vec<String>> = JobStatus::ALL
        .iter()
        .filter(|st| snap.counts.get(**st) > 0)
        .map(|st| {
            vec![
                st.to_string(),
                thousands(snap.counts.get(*st)),
                why(*st).to_string(),
            ]
        })
        .chain([vec![
            "total".to_string(),
            thousands(snap.total),
            String::new(),
        ]])
        .collect();
    print!("{}", table(&["STATUS", "JOBS", "WHY"], &rows));
    println!(
        "all terminal {} s after the first enqueue (scheduled jobs wait 1-3 s by design); \
         the worker was busy {} s for {} attempts: {} attempts/s",
        s["drainSeconds"],
        s["busySeconds"],
        thousands(s["attempts"].as_i64().unwrap_or(0)),
        thousands(s["attemptsPerSecond"].as_i64().unwrap_or(0))
    );
    println!(
        "latency from due to start (backlog included): p50 {} ms, p99 {} ms",
        s["latencyMs"]["p50"], s["latencyMs"]["p99"]
    );
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&[], 50.0), 0);
    }
}
