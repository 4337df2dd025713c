//! One claim's decisions, driven by core over a store's [`AdmissionReads`]:
//! each candidate is read for, decided on and turned into what the store must
//! write, in the one order of [`crate::rules::ClaimAdmission`].
//!
//! What stays the store's is the walk and the writes. Which candidates come in
//! which order is an index walk only the store can plan (SQLite pages through
//! its claim index under the one write lock; PostgreSQL reads batches
//! `FOR UPDATE SKIP LOCKED` as large as the slots still free), and how the
//! [`ClaimPlan`] is written is its speed (PostgreSQL writes every claimed row
//! in one statement of [`crate::transitions::CLAIM_CHANGES`]). So a claim is a
//! plan that the store executes: it hands each candidate to
//! [`Claim::consider`] until [`Claim::is_full`], then writes
//! [`Claim::finish`]'s plan in the claim's transaction.
//!
//! Nothing is written while the plan is made, and nothing need be: the
//! admission counts the reservations and rate starts it has taken since it
//! read each key, so a later candidate of the same key is decided as if the
//! earlier one were written.

use crate::error::Result;
use crate::job::Job;
use crate::new_job::new_job_id;
use crate::rate::{RateLimit, RateWindow};
use crate::requests::ClaimRequest;
use crate::rules::{Admission, AdmissionRead, ClaimAdmission};
use crate::transitions;

/// A store's two reads for a claim's admission, each made inside the claim's
/// transaction so that the answer stays exact until it commits.
///
/// Async without a `Send` bound, as [`super::EnqueueSteps`] is: a store whose
/// reads never wait runs [`Claim::consider`] through [`super::run_ready`].
#[allow(async_fn_in_trait)]
pub trait AdmissionReads {
    /// The reservations concurrency key `key` holds now (0 without a row).
    /// A store with concurrent claimers locks the key's row until the claim
    /// commits (PostgreSQL creates it, recording cap `max`, to have a row to
    /// lock).
    async fn active_reservations(&mut self, key: &str, max: i64) -> Result<i64>;

    /// The newest `limit.max` logged starts of rate key `limit.key`, or `None`
    /// when another claim is deciding on that key right now (its jobs are left
    /// for the next claim).
    async fn rate_window(&mut self, limit: &RateLimit) -> Result<Option<RateWindow>>;

    /// Where sequence `key` stands: its earliest job standing in its way
    /// ([`Job::blocks_its_sequence`], by `createdAtMs` then id) and whether
    /// one of its jobs runs. A plain read: a claim takes only the earliest
    /// such job, whose row it holds, so two claims cannot both start one.
    async fn sequence_head(&mut self, key: &str) -> Result<crate::rules::SequenceHead>;
}

/// A claimed job and the reservation it takes.
#[derive(Clone, Debug, PartialEq)]
pub struct Taken {
    /// The row after [`transitions::claim`]: `handed_off` under a fresh lease.
    pub job: Job,
    /// The concurrency key and cap of its reservation: the key's count goes
    /// up by the job's [`Job::cost`] and the row records the key (see
    /// [`transitions::reservation_for`]).
    pub reservation: Option<(String, i64)>,
}

/// What one claim writes, in its transaction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClaimPlan {
    /// The claimed jobs, in claim order.
    pub taken: Vec<Taken>,
    /// Candidates whose rate key is saturated: their rows with the later
    /// `scheduled_at_ms` they stay queued until.
    pub postponed: Vec<Job>,
    /// One logged start per unit of cost ([`Job::cost`]) of each claimed job
    /// with a rate limit, at the claim's clock reading.
    pub rate_starts: Vec<RateLimit>,
    /// Candidates the claim moved out of `queued` without taking them (an
    /// expired job, cancelled by [`transitions::expire`]). A store writes
    /// each as any transition out of `queued`, giving back what
    /// [`crate::rules::give_back`] says (the schedule key, the dependents),
    /// so a new way for a claim to move a row is core's alone.
    pub moved: Vec<Job>,
}

/// One claim in the making (see the module docs).
///
/// ```
/// use duraq_core::driver::rules::SequenceHead;
/// use duraq_core::driver::steps::{run_ready, AdmissionReads, Claim};
/// use duraq_core::driver::transitions::new_job_row;
/// use duraq_core::driver::{ClaimRequest, RateWindow};
/// use duraq_core::{EnqueueOptions, JobStatus, NewJob, RateLimit, Result};
///
/// /// A store with no reservations and no logged starts.
/// struct Empty;
/// impl AdmissionReads for Empty {
///     async fn active_reservations(&mut self, _: &str, _: i64) -> Result<i64> { Ok(0) }
///     async fn rate_window(&mut self, _: &RateLimit) -> Result<Option<RateWindow>> {
///         Ok(Some(RateWindow::new(Vec::new())))
///     }
///     async fn sequence_head(&mut self, _: &str) -> Result<SequenceHead> {
///         Ok(SequenceHead::default())
///     }
/// }
///
/// let capped = EnqueueOptions::new().concurrency("acct:1", 1);
/// let job = new_job_row(&NewJob::new("sync", serde_json::json!([]), capped).unwrap(), 0);
/// let req = ClaimRequest { worker_id: "w".into(), job_names: vec!["sync".into()], limit: 5,
///     ..ClaimRequest::default() };
/// let mut claim = Claim::new(&req, 10);
/// for candidate in [job.clone(), job] {
///     run_ready(claim.consider(candidate, &mut Empty)).unwrap();
/// }
/// let plan = claim.finish();
/// assert_eq!(plan.taken.len(), 1, "the second candidate finds the key at its cap");
/// assert_eq!(plan.taken[0].job.status, JobStatus::HandedOff);
/// ```
#[derive(Debug)]
pub struct Claim<'r> {
    admission: ClaimAdmission<'r>,
    worker_id: &'r str,
    now_ms: i64,
    limit: usize,
    plan: ClaimPlan,
}

impl<'r> Claim<'r> {
    /// A claim of `req` at the claim's clock reading `now_ms`.
    pub fn new(req: &'r ClaimRequest, now_ms: i64) -> Self {
        Self {
            admission: ClaimAdmission::new(req, now_ms),
            worker_id: &req.worker_id,
            now_ms,
            limit: req.limit,
            plan: ClaimPlan::default(),
        }
    }

    /// Whether the claim holds `req.limit` jobs: the store stops walking.
    pub fn is_full(&self) -> bool {
        self.admission.is_full()
    }

    /// How many more jobs the claim can take.
    pub fn free(&self) -> usize {
        self.limit.saturating_sub(self.plan.taken.len())
    }

    /// How many jobs the claim has taken so far.
    pub fn taken(&self) -> usize {
        self.plan.taken.len()
    }

    /// Decides on `candidate`, the next due job in claim order, after asking
    /// `reads` for what the decision needs: it is taken, postponed to when its
    /// rate key allows, cancelled when it has expired, or left as it is.
    pub async fn consider(
        &mut self,
        mut candidate: Job,
        reads: &mut impl AdmissionReads,
    ) -> Result<()> {
        while let Some(read) = self.admission.missing(&candidate) {
            match read {
                AdmissionRead::Active { key, max } => {
                    let active = reads.active_reservations(&key, max).await?;
                    self.admission.know_active(&key, active);
                }
                AdmissionRead::Window(limit) => {
                    let window = reads.rate_window(&limit).await?;
                    self.admission.know_window(&limit.key, window);
                }
                AdmissionRead::Sequence(key) => {
                    let head = reads.sequence_head(&key).await?;
                    self.admission.know_sequence(&key, head);
                }
            }
        }
        match self.admission.decide(&candidate) {
            Admission::Take {
                reservation,
                rate_start,
            } => {
                let units = usize::try_from(candidate.cost).unwrap_or(1);
                let starts = rate_start.map(|limit| std::iter::repeat_n(limit, units));
                self.plan.rate_starts.extend(starts.into_iter().flatten());
                transitions::claim(&mut candidate, self.worker_id, new_job_id(), self.now_ms);
                self.plan.taken.push(Taken {
                    job: candidate,
                    reservation,
                });
            }
            Admission::Postpone { due_at_ms } => {
                candidate.scheduled_at_ms = due_at_ms;
                self.plan.postponed.push(candidate);
            }
            Admission::Expire => {
                transitions::expire(&mut candidate, self.now_ms);
                self.plan.moved.push(candidate);
            }
            Admission::Leave(_) => {}
        }
        Ok(())
    }

    /// What the store writes for this claim.
    pub fn finish(self) -> ClaimPlan {
        self.plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobStatus;
    use crate::new_job::NewJob;
    use crate::options::EnqueueOptions;
    use crate::steps::run_ready;
    use crate::transitions::new_job_row;
    use std::collections::HashMap;
    use std::time::Duration;

    /// Reads from fixed answers, counting how often each key was read.
    #[derive(Default)]
    struct Fixed {
        active: HashMap<String, i64>,
        starts: HashMap<String, Vec<i64>>,
        busy: Vec<String>,
        reads: Vec<String>,
    }

    impl AdmissionReads for Fixed {
        async fn active_reservations(&mut self, key: &str, _max: i64) -> Result<i64> {
            self.reads.push(format!("active {key}"));
            Ok(self.active.get(key).copied().unwrap_or(0))
        }
        async fn rate_window(&mut self, limit: &RateLimit) -> Result<Option<RateWindow>> {
            self.reads.push(format!("window {}", limit.key));
            if self.busy.contains(&limit.key) {
                return Ok(None);
            }
            let starts = self.starts.get(&limit.key).cloned().unwrap_or_default();
            Ok(Some(RateWindow::new(starts)))
        }
        async fn sequence_head(&mut self, key: &str) -> Result<crate::rules::SequenceHead> {
            self.reads.push(format!("sequence {key}"));
            Ok(crate::rules::SequenceHead::default())
        }
    }

    fn request(limit: usize) -> ClaimRequest {
        ClaimRequest {
            worker_id: "w1".into(),
            job_names: vec!["j".into()],
            limit,
            ..ClaimRequest::default()
        }
    }

    fn job(opts: EnqueueOptions) -> Job {
        new_job_row(&NewJob::new("j", serde_json::json!([]), opts).unwrap(), 0)
    }

    fn plan_of(req: &ClaimRequest, now: i64, jobs: Vec<Job>, reads: &mut Fixed) -> ClaimPlan {
        let mut claim = Claim::new(req, now);
        for candidate in jobs {
            if claim.is_full() {
                break;
            }
            run_ready(claim.consider(candidate, reads)).unwrap();
        }
        claim.finish()
    }

    #[test]
    fn taken_jobs_are_handed_off_under_fresh_leases() {
        let req = request(2);
        let jobs = vec![job(EnqueueOptions::new()), job(EnqueueOptions::new())];
        let plan = plan_of(&req, 7, jobs, &mut Fixed::default());
        assert_eq!(plan.taken.len(), 2);
        for taken in &plan.taken {
            assert_eq!(taken.job.status, JobStatus::HandedOff);
            assert_eq!(taken.job.attempts, 1);
            assert_eq!(taken.job.worker_id.as_deref(), Some("w1"));
            assert_eq!(taken.job.handed_off_at_ms, Some(7));
        }
        assert_ne!(plan.taken[0].job.handoff_id, plan.taken[1].job.handoff_id);
    }

    #[test]
    fn each_key_is_read_once_per_claim_and_counted_after() {
        let req = request(10);
        let capped = || job(EnqueueOptions::new().concurrency("c", 2));
        let mut reads = Fixed::default();
        reads.active.insert("c".into(), 1);
        let plan = plan_of(&req, 0, vec![capped(), capped(), capped()], &mut reads);
        assert_eq!(reads.reads, vec!["active c"]);
        assert_eq!(
            plan.taken.len(),
            1,
            "one reservation was left under the cap of 2"
        );
        assert_eq!(plan.taken[0].reservation, Some(("c".into(), 2)));
        assert!(plan.postponed.is_empty());
    }

    #[test]
    fn a_saturated_rate_key_postpones_and_logs_no_start() {
        let req = request(10);
        let limited = || job(EnqueueOptions::new().rate_limit("r", 1, Duration::from_secs(1)));
        let mut reads = Fixed::default();
        let plan = plan_of(&req, 5_000, vec![limited(), limited()], &mut reads);
        assert_eq!(plan.taken.len(), 1);
        assert_eq!(plan.rate_starts.len(), 1, "one start per claimed job");
        assert_eq!(plan.postponed.len(), 1);
        assert_eq!(plan.postponed[0].scheduled_at_ms, 6_000);
        assert_eq!(plan.postponed[0].status, JobStatus::Queued);
    }

    #[test]
    fn an_expired_candidate_is_cancelled_and_the_next_one_taken() {
        let req = request(1);
        let mut expired = job(EnqueueOptions::new().concurrency("c", 1));
        expired.expires_at_ms = Some(7);
        let mut reads = Fixed::default();
        let plan = plan_of(
            &req,
            7,
            vec![expired, job(EnqueueOptions::new())],
            &mut reads,
        );
        assert!(reads.reads.is_empty(), "an expired candidate needs no read");
        assert_eq!(plan.taken.len(), 1);
        assert_eq!(plan.moved.len(), 1);
        let cancelled = &plan.moved[0];
        assert_eq!(cancelled.status, JobStatus::Cancelled);
        assert_eq!(cancelled.cancelled_at_ms, Some(7));
        let error = cancelled.last_error.as_deref().unwrap();
        assert_eq!(error, "expired: not started by 1970-01-01 00:00:00 UTC");
        assert_eq!(cancelled.attempts, 0);
    }

    #[test]
    fn a_busy_rate_key_leaves_its_jobs_unwritten() {
        let req = request(10);
        let limited = job(EnqueueOptions::new().rate_limit("r", 5, Duration::from_secs(1)));
        let mut reads = Fixed {
            busy: vec!["r".into()],
            ..Fixed::default()
        };
        let plan = plan_of(
            &req,
            0,
            vec![limited, job(EnqueueOptions::new())],
            &mut reads,
        );
        assert_eq!(plan.taken.len(), 1, "the unlimited job behind it is taken");
        assert!(plan.taken[0].job.rate_limit().is_none());
        assert!(plan.postponed.is_empty() && plan.rate_starts.is_empty());
    }
}
