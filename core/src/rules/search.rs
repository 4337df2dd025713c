//! The walk of one search request over a store's candidate rows, in chunks,
//! within the filter's scan budget.
//!
//! A store reads candidates (rows passing the indexed conditions, in list
//! order, after [`SearchScan::after`]) `chunk` rows at a time, feeds them, and
//! stops when [`SearchScan::next_chunk`] says so; the matching rule
//! ([`JobFilter::matches`]) and the budget are decided here, once.

use crate::job::Job;
use crate::search::{JobCursor, JobFilter, JobPage};

/// Candidate rows read per chunk when the filter has conditions no index serves.
pub const SEARCH_CHUNK: usize = 500;

/// One search request in progress.
///
/// ```
/// use duraq_core::driver::rules::SearchScan;
/// use duraq_core::inspect::JobFilter;
/// let filter = JobFilter { limit: Some(10), ..JobFilter::default() };
/// let mut scan = SearchScan::new(&filter);
/// assert_eq!(scan.next_chunk(), Some(10));
/// scan.feed(Vec::new()); // the store found no candidates
/// assert_eq!(scan.next_chunk(), None);
/// assert!(scan.finish().resume.is_none());
/// ```
#[derive(Debug)]
pub struct SearchScan<'a> {
    filter: &'a JobFilter,
    limit: usize,
    budget: usize,
    after: Option<JobCursor>,
    jobs: Vec<Job>,
    scanned: usize,
    exhausted: bool,
}

impl<'a> SearchScan<'a> {
    /// A fresh walk of `filter` from its `after` cursor.
    pub fn new(filter: &'a JobFilter) -> Self {
        Self {
            filter,
            limit: filter.limit.unwrap_or(usize::MAX),
            budget: filter.scan_budget(),
            after: filter.after.clone(),
            jobs: Vec::new(),
            scanned: 0,
            exhausted: false,
        }
    }

    /// Where the next chunk starts: candidates strictly after this cursor.
    pub fn after(&self) -> Option<&JobCursor> {
        self.after.as_ref()
    }

    /// How many candidate rows to read next, or `None` when the walk is over
    /// (enough matches, the budget spent, or no candidates left). Without
    /// residual conditions every candidate matches, so a chunk asks for just
    /// the matches still missing.
    pub fn next_chunk(&self) -> Option<usize> {
        if self.exhausted || self.jobs.len() >= self.limit || self.scanned >= self.budget {
            return None;
        }
        let missing = self.limit - self.jobs.len();
        let room = self.budget - self.scanned;
        let want = if self.filter.has_residual() {
            SEARCH_CHUNK
        } else {
            missing
        };
        Some(want.min(room).max(1))
    }

    /// The candidates of the chunk just read (at most what
    /// [`SearchScan::next_chunk`] asked for, in list order). Fewer than asked
    /// for means there are no more.
    pub fn feed(&mut self, rows: Vec<Job>) {
        let asked = self.next_chunk().unwrap_or(0);
        if rows.len() < asked {
            self.exhausted = true;
        }
        for job in rows {
            if self.jobs.len() >= self.limit || self.scanned >= self.budget {
                break;
            }
            self.scanned += 1;
            self.after = Some(JobCursor::after(&job));
            if self.filter.matches(&job) {
                self.jobs.push(job);
            }
        }
    }

    /// The whole walk over a synchronous reader: `read(after, n)` returns at
    /// most `n` candidates strictly after `after`, in list order.
    pub fn run<E>(
        filter: &'a JobFilter,
        mut read: impl FnMut(Option<&JobCursor>, usize) -> Result<Vec<Job>, E>,
    ) -> Result<JobPage, E> {
        let mut scan = Self::new(filter);
        while let Some(n) = scan.next_chunk() {
            let rows = read(scan.after(), n)?;
            scan.feed(rows);
        }
        Ok(scan.finish())
    }

    /// The page: `resume` is set when the budget ran out first.
    pub fn finish(self) -> JobPage {
        let stopped =
            !self.exhausted && self.jobs.len() < self.limit && self.scanned >= self.budget;
        JobPage {
            resume: if stopped { self.after } else { None },
            jobs: self.jobs,
            scanned: self.scanned,
        }
    }
}
