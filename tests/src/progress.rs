//! Progress and log lines of a running job (`docs/jobs.md`):
//! `record_progress` is fenced by the lease like a report and changes no job
//! and no count; new progress replaces the old, a batch without progress keeps
//! it; lines are numbered across batches and attempts and only the newest 100
//! are kept; text round-trips at the byte bound; an operator retry keeps
//! everything; prune and a bulk delete remove a job's rows with the job.

use std::time::Duration;

use duraq_core::driver::{Lease, ProgressBatch};
use duraq_core::inspect::{BulkAction, JobProgress, PruneRequest};
use duraq_core::limits::{MAX_LINE_BYTES, MAX_LOG_LINES};
use duraq_core::{EnqueueOptions, Job, Outcome};
use serde_json::json;

use crate::harness::{job, lease, Harness};

/// A running job named `name` (maxRetries 1).
async fn running(h: &Harness, name: &str) -> Job {
    let id = h
        .insert(job(name, json!([]), EnqueueOptions::new().max_retries(1)))
        .await;
    h.claim_id(&format!("w-{name}"), name, &id).await
}

fn lines(batch: ProgressBatch, from: usize, n: usize, at: i64) -> ProgressBatch {
    (from..from + n).fold(batch, |b, i| b.with_line(at, format!("line {i}")))
}

async fn progress(h: &Harness, id: &str) -> Option<JobProgress> {
    h.store.job_progress(id).await.expect("job_progress")
}

async fn record(h: &Harness, batch: ProgressBatch) -> bool {
    h.store
        .record_progress(batch)
        .await
        .expect("record_progress")
}

pub async fn progress_and_lines_round_trip_and_change_no_job(h: &Harness) {
    let j = running(h, "p-round").await;
    assert_eq!(progress(h, &j.id).await, None, "nothing said yet");
    let before = h.state().await;
    h.advance(7);
    let batch = ProgressBatch::new(lease(&j), 1)
        .with_progress(0.25, "a quarter")
        .unwrap()
        .with_line(h.now() - 2, "first")
        .with_line(h.now() - 1, "second");
    assert!(record(h, batch).await);
    h.assert_unchanged(&before, "record_progress").await;
    let p = progress(h, &j.id).await.expect("stored");
    assert_eq!(
        (
            p.fraction,
            p.message.as_deref(),
            p.updated_at_ms,
            p.lines_total
        ),
        (Some(0.25), Some("a quarter"), h.now(), 2)
    );
    let said: Vec<(i64, i64, i64, &str)> = p
        .logs
        .iter()
        .map(|l| (l.seq, l.at_ms, l.attempt, l.line.as_str()))
        .collect();
    assert_eq!(
        said,
        [(1, h.now() - 2, 1, "first"), (2, h.now() - 1, 1, "second")]
    );
    // Lines alone keep the progress; new progress replaces it.
    h.advance(5);
    assert!(
        record(
            h,
            ProgressBatch::new(lease(&j), 1).with_line(h.now(), "third")
        )
        .await
    );
    let p = progress(h, &j.id).await.unwrap();
    assert_eq!(
        (p.fraction, p.lines_total, p.updated_at_ms),
        (Some(0.25), 3, h.now())
    );
    let batch = ProgressBatch::new(lease(&j), 1)
        .with_progress(1.0, "")
        .unwrap();
    assert!(record(h, batch).await);
    let p = progress(h, &j.id).await.unwrap();
    assert_eq!(
        (p.fraction, p.message.as_deref(), p.logs.len()),
        (Some(1.0), Some(""), 3)
    );
    if let Some(other) = h.reopen().await {
        let seen = other.job_progress(&j.id).await.unwrap();
        assert_eq!(seen.as_ref(), Some(&p), "another handle reads the same");
    }
}

pub async fn only_the_newest_hundred_lines_are_kept(h: &Harness) {
    let j = running(h, "p-trim").await;
    for round in 0..3 {
        let batch = lines(ProgressBatch::new(lease(&j), 1), round * 60, 60, h.now());
        assert!(record(h, batch).await);
    }
    let p = progress(h, &j.id).await.unwrap();
    assert_eq!(p.lines_total, 180);
    assert_eq!(p.logs.len(), MAX_LOG_LINES);
    let seqs: Vec<i64> = p.logs.iter().map(|l| l.seq).collect();
    assert_eq!(
        seqs,
        (81..=180).collect::<Vec<_>>(),
        "oldest first, gapless"
    );
    assert_eq!(p.logs[0].line, "line 80");
    assert_eq!(p.logs.last().unwrap().line, "line 179");
    // A batch that dropped lines before it was sent counts them.
    let batch = lines(ProgressBatch::new(lease(&j), 1), 1000, 130, h.now());
    assert_eq!(batch.skipped(), 30);
    assert!(record(h, batch).await);
    let p = progress(h, &j.id).await.unwrap();
    assert_eq!(p.lines_total, 310);
    assert_eq!(p.logs.len(), MAX_LOG_LINES);
    assert_eq!((p.logs[0].seq, p.logs[0].line.as_str()), (211, "line 1030"));
    assert_eq!(p.logs.last().unwrap().line, "line 1129");
}

pub async fn a_stale_or_made_up_lease_writes_nothing(h: &Harness) {
    let j = running(h, "p-fence").await;
    let made_up = Lease {
        job_id: j.id.clone(),
        handoff_id: "not-the-handoff".into(),
    };
    let say = |l: Lease| ProgressBatch::new(l, 1).with_line(0, "x");
    assert!(!record(h, say(made_up)).await);
    let missing = Lease {
        job_id: "no-such-job".into(),
        handoff_id: "h".into(),
    };
    assert!(!record(h, say(missing)).await);
    assert_eq!(progress(h, &j.id).await, None);
    // The job is recovered from a dead worker and claimed again: the first
    // attempt's lease may no longer write, the second's may.
    h.advance(60_001);
    assert_eq!(
        h.store.recover_stale(60_000).await.unwrap(),
        vec![j.id.clone()]
    );
    assert!(!record(h, say(lease(&j))).await, "recovered lease");
    h.advance(24 * 3_600_000); // past any retry backoff
    let again = h.claim_id("w-second", "p-fence", &j.id).await;
    assert!(
        !record(h, say(lease(&j))).await,
        "the first lease after a new claim"
    );
    assert!(record(h, ProgressBatch::new(lease(&again), 2).with_line(0, "mine")).await);
    assert!(h.report(&again, Outcome::Completed).await);
    assert!(!record(h, say(lease(&again))).await, "after its own report");
    let p = progress(h, &j.id).await.unwrap();
    let said: Vec<(i64, &str)> = p
        .logs
        .iter()
        .map(|l| (l.attempt, l.line.as_str()))
        .collect();
    assert_eq!(said, [(2, "mine")]);
}

pub async fn text_round_trips_at_the_byte_bound(h: &Harness) {
    let j = running(h, "p-text").await;
    let long = "ø".repeat(MAX_LINE_BYTES); // two bytes each: cut in half
    let batch = ProgressBatch::new(lease(&j), 1)
        .with_progress(0.5, "naïve \u{1F680} message\twith tab")
        .unwrap()
        .with_line(0, long)
        .with_line(0, "quote ' and \" and \\ and %");
    assert!(record(h, batch).await);
    let p = progress(h, &j.id).await.unwrap();
    assert_eq!(p.logs[0].line, "ø".repeat(MAX_LINE_BYTES / 2));
    assert_eq!(p.logs[1].line, "quote ' and \" and \\ and %");
    assert_eq!(
        p.message.as_deref(),
        Some("naïve \u{1F680} message with tab")
    );
}

pub async fn operator_retry_keeps_progress_and_numbering_goes_on(h: &Harness) {
    let j = running(h, "p-retry").await;
    let batch = ProgressBatch::new(lease(&j), 1)
        .with_progress(0.4, "failed at 40%")
        .unwrap()
        .with_line(0, "before the failure");
    assert!(record(h, batch).await);
    let failed = Outcome::Failed {
        error: "boom".into(),
        retry_in_ms: None,
        discard: true,
    };
    assert!(h.report(&j, failed).await);
    h.store.retry_job(&j.id).await.unwrap();
    let kept = progress(h, &j.id).await.expect("kept by the retry");
    assert_eq!((kept.fraction, kept.lines_total), (Some(0.4), 1));
    let again = h.claim_id("w-again", "p-retry", &j.id).await;
    assert!(
        record(
            h,
            ProgressBatch::new(lease(&again), 1).with_line(0, "after")
        )
        .await
    );
    let p = progress(h, &j.id).await.unwrap();
    let seqs: Vec<(i64, &str)> = p.logs.iter().map(|l| (l.seq, l.line.as_str())).collect();
    assert_eq!(seqs, [(1, "before the failure"), (2, "after")]);
}

pub async fn prune_and_bulk_delete_remove_a_jobs_progress(h: &Harness) {
    let mut said = Vec::new();
    for name in ["p-old", "p-deleted", "p-live"] {
        let j = running(h, name).await;
        let batch = ProgressBatch::new(lease(&j), 1)
            .with_progress(0.9, name)
            .unwrap()
            .with_line(0, name);
        assert!(record(h, batch).await);
        said.push(j);
    }
    let (old, deleted, live) = (&said[0], &said[1], &said[2]);
    assert!(h.report(old, Outcome::Completed).await);
    assert!(h.report(deleted, Outcome::Completed).await);
    // A job that never said anything is pruned in the same batch.
    let quiet = running(h, "p-quiet").await;
    assert!(h.report(&quiet, Outcome::Completed).await);

    let batch = h
        .store
        .act_on_jobs(BulkAction::Delete, std::slice::from_ref(&deleted.id))
        .await
        .unwrap();
    assert_eq!(batch.changed, 1);
    assert_eq!(progress(h, &deleted.id).await, None, "deleted with its job");
    assert!(progress(h, &old.id).await.is_some());

    h.advance(10);
    let report = h
        .store
        .prune(&PruneRequest {
            completed_older_than: Some(Duration::from_millis(5)),
            failed_older_than: None,
            cancelled_older_than: None,
            batch_size: 100,
        })
        .await
        .unwrap();
    assert_eq!(report.deleted, 2);
    assert_eq!(progress(h, &old.id).await, None, "pruned with its job");
    assert_eq!(progress(h, &quiet.id).await, None);
    let p = progress(h, &live.id)
        .await
        .expect("a running job keeps its own");
    assert_eq!((p.message.as_deref(), p.logs.len()), (Some("p-live"), 1));
}
