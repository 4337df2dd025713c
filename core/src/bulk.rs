//! Operator actions on many jobs at once: retry, cancel, delete or run now a
//! list of ids or every job matching a filter, in bounded batches.
//!
//! The rule of which job an action changes is [`BulkAction::changes`]
//! (beside the store's other request types, in `requests`),
//! once; a store applies an action to one batch of ids in one transaction
//! ([`Operate::act_on_jobs`]), and [`run_bulk`] walks the selection in keyset
//! order, one batch at a time, so no transaction ever spans the whole set and
//! jobs enqueued meanwhile (newer than where the walk began) are not visited.
//! A job whose status forbids the action is skipped, never an error: under a
//! filter, what matched may have moved on by the time its batch is acted on.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::job::Job;
use crate::requests::{BulkAction, BulkBatch, JobCursor, JobFilter};
use crate::rules::SEARCH_CHUNK;
use crate::store::Operate;

/// Which jobs a bulk action is for.
// One selection per request: its size does not matter, a plain filter reads best.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BulkSelection {
    /// These jobs; every id must exist ([`run_bulk`] checks before it acts).
    Ids(Vec<String>),
    /// Every job matching the filter (its `after` and `limit` are ignored:
    /// the walk covers every match, a batch at a time; `scan_limit` bounds
    /// the rows each of its reads takes, by default the larger of the batch
    /// and [`crate::rules::SEARCH_CHUNK`]).
    Matching(JobFilter),
}

/// A bulk action to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkRequest {
    /// What to do.
    pub action: BulkAction,
    /// To which jobs.
    pub selection: BulkSelection,
    /// Count what would change and change nothing.
    pub dry_run: bool,
    /// Jobs per transaction (min 1).
    pub batch_size: usize,
    /// The instant a dry run judges jobs at (a run-now skips a job due by
    /// then); [`BulkRequest::new`] takes the wall clock. A real run judges
    /// each batch at the store's clock, in its transaction.
    pub now_ms: i64,
}

impl BulkRequest {
    /// The default batch: 500 jobs per transaction.
    pub const DEFAULT_BATCH: usize = 500;

    /// `action` on `selection`, not a dry run, default batches.
    pub fn new(action: BulkAction, selection: BulkSelection) -> Self {
        Self {
            action,
            selection,
            dry_run: false,
            batch_size: Self::DEFAULT_BATCH,
            now_ms: crate::SystemClock.now_ms(),
        }
    }
}

/// How a bulk action went (so far, when given to the progress callback).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BulkReport {
    /// Jobs selected.
    pub matched: u64,
    /// Jobs changed (in a dry run: that would change).
    pub changed: u64,
    /// Jobs left alone: their status forbids the action, or they were gone
    /// when their batch was acted on.
    pub skipped: u64,
    /// Transactions made (0 in a dry run).
    pub batches: u64,
    /// The first few matched ids, in walk order (at most [`BulkReport::SAMPLE`]).
    pub sample: Vec<String>,
}

impl BulkReport {
    /// How many ids [`BulkReport::sample`] keeps.
    pub const SAMPLE: usize = 5;

    fn saw(&mut self, ids: &[String]) {
        self.matched += ids.len() as u64;
        let room = Self::SAMPLE.saturating_sub(self.sample.len());
        self.sample.extend(ids.iter().take(room).cloned());
    }

    fn add(&mut self, batch: BulkBatch) {
        self.changed += batch.changed;
        self.skipped += batch.skipped + batch.missing;
        self.batches += 1;
    }
}

/// Runs `req` against `store`, calling `progress` after every batch.
///
/// Errors: `job-not-found` for an id of [`BulkSelection::Ids`] with no job
/// (nothing is changed then); a store error stops the walk (the batches before
/// it stay done, each was its own transaction).
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use duraq_core::prelude::*;
/// use duraq_core::JobStatus;
/// use duraq_core::inspect::{run_bulk, BulkAction, BulkRequest, BulkSelection, JobFilter};
/// use duraq_core::{EnqueueOptions, NewJob};
/// let store = duraq_core::MemoryStore::new();
/// let job = NewJob::new("report", serde_json::json!([]), EnqueueOptions::new()).unwrap();
/// store.enqueue(job).await.unwrap();
/// let req = BulkRequest::new(
///     BulkAction::Cancel,
///     BulkSelection::Matching(JobFilter { statuses: vec![JobStatus::Queued], ..JobFilter::default() }),
/// );
/// let report = run_bulk(&store, &req, &mut |_| {}).await.unwrap();
/// assert_eq!((report.matched, report.changed, report.skipped), (1, 1, 0));
/// # });
/// ```
pub async fn run_bulk<S: Operate + ?Sized>(
    store: &S,
    req: &BulkRequest,
    progress: &mut (dyn FnMut(&BulkReport) + Send),
) -> Result<BulkReport> {
    let batch = req.batch_size.max(1);
    let mut report = BulkReport::default();
    match &req.selection {
        BulkSelection::Ids(ids) => {
            let mut unique: Vec<String> = Vec::with_capacity(ids.len());
            let mut jobs = Vec::with_capacity(ids.len());
            for id in ids {
                if unique.contains(id) {
                    continue;
                }
                let job = store
                    .get_job(id)
                    .await?
                    .ok_or_else(|| Error::job_not_found(id))?;
                unique.push(job.id.clone());
                jobs.push(job);
            }
            if req.dry_run {
                report.saw(&unique);
                tally_dry(&mut report, req, &jobs);
                progress(&report);
                return Ok(report);
            }
            for chunk in unique.chunks(batch) {
                report.saw(chunk);
                report.add(store.act_on_jobs(req.action, chunk).await?);
                progress(&report);
            }
        }
        BulkSelection::Matching(filter) => {
            let mut walk = JobFilter {
                after: None,
                limit: Some(batch),
                scan_limit: Some(filter.scan_limit.unwrap_or(batch.max(SEARCH_CHUNK))),
                ..filter.clone()
            };
            loop {
                let page = store.search_jobs(&walk).await?;
                let more = page.jobs.len() >= batch || page.resume.is_some();
                walk.after = match (page.jobs.last(), page.resume) {
                    (_, Some(resume)) => Some(resume),
                    (Some(last), None) => Some(JobCursor::after(last)),
                    (None, None) => None,
                };
                if !page.jobs.is_empty() {
                    let ids: Vec<String> = page.jobs.iter().map(|j| j.id.clone()).collect();
                    report.saw(&ids);
                    if req.dry_run {
                        tally_dry(&mut report, req, &page.jobs);
                    } else {
                        report.add(store.act_on_jobs(req.action, &ids).await?);
                    }
                    progress(&report);
                }
                if !more {
                    break;
                }
            }
        }
    }
    Ok(report)
}

fn tally_dry(report: &mut BulkReport, req: &BulkRequest, jobs: &[Job]) {
    let applies = jobs
        .iter()
        .filter(|j| req.action.changes(j, req.now_ms))
        .count() as u64;
    report.changed += applies;
    report.skipped += jobs.len() as u64 - applies;
}
