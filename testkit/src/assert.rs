//! What collecting mode is for: reading back, as the application's own types,
//! the jobs it enqueued, and asserting on them with a message that shows what
//! was there instead. "Enqueued" means `queued` now: due or scheduled for
//! later, not yet run (a job that ran, or was cancelled, is no longer
//! enqueued), in the order they were enqueued.

use std::fmt::Write as _;
use std::future::Future;
use std::panic::Location;

use duraq_core::inspect::JobFilter;
use duraq_core::{Job, JobArgs, JobStatus};

use crate::{Error, TestKit};

/// A queued job of type `T`: its decoded args and its row (queue,
/// `scheduled_at_ms`, retries, keys, …).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Enqueued<T> {
    /// The args, decoded into the application's type.
    pub args: T,
    /// The job row as stored.
    pub job: Job,
}

impl TestKit {
    /// The args of every queued job of `T`'s name, in enqueue order.
    ///
    /// Errors: `invalid-args` when a queued row does not decode into `T`
    /// (naming the job and serde's message), the store's.
    pub async fn enqueued<T: JobArgs>(&self) -> Result<Vec<T>, Error> {
        let jobs = self.enqueued_jobs::<T>().await?;
        Ok(jobs.into_iter().map(|e| e.args).collect())
    }

    /// Every queued job of `T`'s name with its row, in enqueue order.
    ///
    /// Errors: as [`TestKit::enqueued`].
    pub async fn enqueued_jobs<T: JobArgs>(&self) -> Result<Vec<Enqueued<T>>, Error> {
        let rows = self.queued(Some(T::NAME)).await?;
        rows.into_iter()
            .map(|job| {
                let args = serde_json::from_value(job.args.clone()).map_err(|e| {
                    duraq_core::Error::invalid(
                        duraq_core::ErrorCode::InvalidArgs,
                        format!("queued job {} ({}): {e}", job.id, T::NAME),
                    )
                })?;
                Ok(Enqueued { args, job })
            })
            .collect()
    }

    /// Panics unless a queued job of `T` has args for which `matches` is
    /// true; the message lists the queued jobs of `T` (args, queue, when due)
    /// and how many of other names are queued, after the place of the call.
    #[track_caller]
    pub fn assert_enqueued<'a, T: JobArgs>(
        &'a self,
        matches: impl Fn(&T) -> bool + Send + Sync + 'a,
    ) -> impl Future<Output = ()> + Send + 'a {
        let caller = Location::caller();
        async move {
            self.enqueued_matching::<T>(caller, |e| matches(&e.args))
                .await
        }
    }

    /// As [`TestKit::assert_enqueued`], with the row too, to check the queue,
    /// the due time or the options:
    /// `kit.assert_enqueued_job::<T>(|e| e.job.queue == "mail")`.
    #[track_caller]
    pub fn assert_enqueued_job<'a, T: JobArgs>(
        &'a self,
        matches: impl Fn(&Enqueued<T>) -> bool + Send + Sync + 'a,
    ) -> impl Future<Output = ()> + Send + 'a {
        let caller = Location::caller();
        async move { self.enqueued_matching::<T>(caller, matches).await }
    }

    async fn enqueued_matching<T: JobArgs>(
        &self,
        caller: &'static Location<'static>,
        matches: impl Fn(&Enqueued<T>) -> bool + Send + Sync,
    ) {
        let jobs = match self.enqueued_jobs::<T>().await {
            Ok(jobs) => jobs,
            Err(e) => fail(
                caller,
                format!(
                    "assert_enqueued::<{}>: reading the queue failed: {e}",
                    T::NAME
                ),
            ),
        };
        if !jobs.iter().any(matches) {
            let listing = self.listing(T::NAME).await;
            fail(
                caller,
                format!(
                    "assert_enqueued::<{}>: no queued job matches; {listing}",
                    T::NAME
                ),
            );
        }
    }

    /// Panics if any job of `T`'s name is queued; the message lists them,
    /// after the place of the call.
    #[track_caller]
    pub fn assert_not_enqueued<T: JobArgs>(&self) -> impl Future<Output = ()> + Send + '_ {
        let caller = Location::caller();
        async move {
            let rows = match self.queued(Some(T::NAME)).await {
                Ok(rows) => rows,
                Err(e) => fail(
                    caller,
                    format!(
                        "assert_not_enqueued::<{}>: reading the queue failed: {e}",
                        T::NAME
                    ),
                ),
            };
            if !rows.is_empty() {
                let listing = self.listing(T::NAME).await;
                fail(
                    caller,
                    format!("assert_not_enqueued::<{}>: {listing}", T::NAME),
                );
            }
        }
    }

    /// Queued jobs (of `name`, or all), oldest first.
    async fn queued(&self, name: Option<&str>) -> Result<Vec<Job>, Error> {
        let mut filter = JobFilter {
            statuses: vec![JobStatus::Queued],
            job_name: name.map(str::to_owned),
            limit: Some(500),
            ..JobFilter::default()
        };
        let mut jobs = Vec::new();
        loop {
            let page = self.kit.base.search_jobs(&filter).await?;
            let last = page.jobs.last().map(duraq_core::inspect::JobCursor::after);
            let full = page.jobs.len() == filter.limit.unwrap_or(0);
            jobs.extend(page.jobs);
            filter.after = match (page.resume, last) {
                (Some(resume), _) => Some(resume),
                (None, Some(last)) if full => Some(last),
                _ => break,
            };
        }
        // Search lists newest first; a test reads enqueue order.
        jobs.reverse();
        Ok(jobs)
    }

    /// "queued <name>: [args, queue, due]…; other queued: name ×n, …".
    async fn listing(&self, name: &str) -> String {
        let all = match self.queued(None).await {
            Ok(all) => all,
            Err(e) => return format!("(listing the queue failed: {e})"),
        };
        let now = duraq_core::Clock::now_ms(self.clock());
        let mut out = String::new();
        let mine: Vec<&Job> = all.iter().filter(|j| j.job_name == name).collect();
        if mine.is_empty() {
            let _ = write!(out, "no {name} job is queued");
        } else {
            let _ = write!(out, "queued {name} jobs ({}):", mine.len());
            for job in mine {
                let due = match job.scheduled_at_ms - now {
                    d if d <= 0 => "due now".to_owned(),
                    d => format!("due in {d} ms"),
                };
                let _ = write!(out, "\n  {} queue={} {due}", job.args, job.queue);
            }
        }
        let mut others = std::collections::BTreeMap::<&str, usize>::new();
        for job in all.iter().filter(|j| j.job_name != name) {
            *others.entry(job.job_name.as_str()).or_default() += 1;
        }
        if !others.is_empty() {
            let list: Vec<String> = others.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
            let _ = write!(out, "\n  other queued jobs: {}", list.join(", "));
        }
        out
    }
}

/// Fails an assertion at `caller`, the test's line that called it. An async
/// function cannot be `#[track_caller]` (the caller is gone by the time it
/// runs), so the assertions take the location when called, and the panic
/// says it as a panic at that line would: in the printed
/// `thread '…' panicked at FILE:LINE:COL:` line, and at the start of its
/// message, which is what a test that catches it reads.
fn fail(caller: &'static Location<'static>, message: String) -> ! {
    let message = format!("{caller}: {message}");
    let thread = std::thread::current();
    eprintln!(
        "\nthread '{}' panicked at {caller}:\n{message}",
        thread.name().unwrap_or("<unnamed>")
    );
    std::panic::resume_unwind(Box::new(message))
}
