//! Claim admission: the one order in which a claim decides on each candidate.
//!
//! A store walks its due jobs in claim order and, for each candidate, asks a
//! [`ClaimAdmission`] what to do with it. The order is the same on every store:
//!
//! 0. **Expiry.** A candidate whose expiry has passed ([`Job::is_expired`]) is
//!    never started: it ends `cancelled` ([`Admission::Expire`]), needing no read
//!    and taking no slot of the claim.
//! 1. **Sequence.** A candidate of a sequence ([`Job::sequence_key`]) is
//!    taken only in its turn: it is the earliest job standing in the
//!    sequence's way ([`Job::blocks_its_sequence`], by `createdAtMs` then id)
//!    and no job of the sequence runs (counting what this claim took).
//!    Otherwise it stays as it is. Every rule of a sequence follows from this
//!    one: a failed job that holds keeps the jobs behind it waiting, and a
//!    completion, a cancel or a delete moves the turn on.
//! 2. **Cap.** A candidate holding a concurrency key (its own, else its queue's
//!    cap in the claim's config, see [`reservation_for`]) whose cost does not
//!    fit under the cap beside the reservations, counting those this claim has
//!    taken, is skipped: it stays as it is and never blocks the jobs behind it.
//!    (A job costing more than a queue's cap fits when the key holds nothing.)
//! 3. **Rate.** A candidate whose rate key is saturated stays queued, due when
//!    the key allows ([`RateWindow::try_start`]); if another claim is deciding on
//!    that key at this moment (PostgreSQL takes turns on the key's row) it is left
//!    for the next claim.
//! 4. **Reserve.** Otherwise it is taken: as many units of its key's
//!    reservations and logged starts of its rate key as it costs
//!    ([`Job::cost`], 1 by default).
//!
//! The admission never reads anything itself. Before [`ClaimAdmission::decide`]
//! the store answers what [`ClaimAdmission::missing`] asks for (a key's current
//! reservation count, a rate key's window), read inside the claim's transaction so
//! that it is exact: SQLite holds the one write lock, PostgreSQL locks the key's
//! row. Reads are asked once per key per claim; later answers come from what the
//! admission has counted since.

use std::collections::HashMap;

use crate::job::Job;
use crate::rate::{RateLimit, RateWindow};
use crate::requests::ClaimRequest;
use crate::transitions::reservation_for;

/// What a store must read before the admission can decide on a candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdmissionRead {
    /// The number of reservations the concurrency key holds now (0 when the key
    /// has no row); answer with [`ClaimAdmission::know_active`].
    Active {
        /// The concurrency key.
        key: String,
        /// Its cap as this claim sees it (a store that creates the key's row
        /// records it).
        max: i64,
    },
    /// The newest `limit.max` logged starts of the rate key; answer with
    /// [`ClaimAdmission::know_window`].
    Window(RateLimit),
    /// Where the sequence of this key stands; answer with
    /// [`ClaimAdmission::know_sequence`].
    Sequence(String),
}

/// Where a sequence stands as a claim reads it ([`AdmissionRead::Sequence`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SequenceHead {
    /// The `(createdAtMs, id)` of the earliest job standing in the
    /// sequence's way ([`Job::blocks_its_sequence`]), if any.
    pub first: Option<(i64, String)>,
    /// Whether a job of the sequence is running (`handed_off`).
    pub running: bool,
}

impl SequenceHead {
    fn is_turn_of(&self, job: &Job) -> bool {
        !self.running
            && self
                .first
                .as_ref()
                .is_some_and(|(at, id)| *at == job.created_at_ms && *id == job.id)
    }
}

/// The decision on one candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Claim it: take [`Job::cost`] units of `reservation` (key, cap) and log
    /// as many starts of `rate_start`.
    Take {
        /// The concurrency key and cap whose reservation the job takes.
        reservation: Option<(String, i64)>,
        /// The rate limit whose start the store logs at the claim's `now`.
        rate_start: Option<RateLimit>,
    },
    /// Its rate key is saturated: it stays queued, due at `due_at_ms`.
    Postpone {
        /// The job's new `scheduledAtMs`.
        due_at_ms: i64,
    },
    /// Its expiry has passed: cancel it (`lastError` [`Job::EXPIRED`]).
    Expire,
    /// Leave it as it is: this claim does not take it, and writes nothing of
    /// it. A store treats every reason alike, so a new reason is core's alone.
    Leave(LeaveReason),
}

/// Why a claim leaves a candidate as it is ([`Admission::Leave`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaveReason {
    /// Its concurrency key is at its cap.
    AtCap,
    /// Another claim is deciding on its rate key right now; the next claim
    /// will.
    RateKeyBusy,
    /// It is not its sequence's turn.
    NotItsTurn,
}

/// One claim's admission state: the reservations and rate windows it has read
/// and what it has taken since (see the module docs).
///
/// ```
/// use duraq_core::driver::rules::{Admission, AdmissionRead, ClaimAdmission, LeaveReason};
/// use duraq_core::driver::transitions::new_job_row;
/// use duraq_core::{EnqueueOptions, NewJob};
/// use duraq_core::driver::ClaimRequest;
///
/// let capped = EnqueueOptions::new().concurrency("acct:1", 1);
/// let job = new_job_row(&NewJob::new("sync", serde_json::json!([]), capped).unwrap(), 0);
/// let req = ClaimRequest { job_names: vec!["sync".into()], limit: 10, ..ClaimRequest::default() };
/// let mut admission = ClaimAdmission::new(&req, 0);
/// assert_eq!(admission.missing(&job), Some(AdmissionRead::Active { key: "acct:1".into(), max: 1 }));
/// admission.know_active("acct:1", 0);
/// assert!(matches!(admission.decide(&job), Admission::Take { .. }));
/// assert_eq!(admission.decide(&job), Admission::Leave(LeaveReason::AtCap)); // the one reservation is taken
/// ```
#[derive(Debug)]
pub struct ClaimAdmission<'r> {
    req: &'r ClaimRequest,
    now_ms: i64,
    /// Reservations per key: as read, plus those taken by this claim.
    active: HashMap<String, i64>,
    /// Rate windows as read (`None`: another claim holds the key), plus the
    /// starts of this claim.
    windows: HashMap<String, Option<RateWindow>>,
    /// Sequences as read, marked running once this claim takes one's job.
    sequences: HashMap<String, SequenceHead>,
    taken: usize,
}

impl<'r> ClaimAdmission<'r> {
    /// The admission of one claim of `req` at the claim's clock reading `now_ms`.
    pub fn new(req: &'r ClaimRequest, now_ms: i64) -> Self {
        Self {
            req,
            now_ms,
            active: HashMap::new(),
            windows: HashMap::new(),
            sequences: HashMap::new(),
            taken: 0,
        }
    }

    /// Whether the claim has taken `req.limit` jobs: the store stops walking.
    pub fn is_full(&self) -> bool {
        self.taken >= self.req.limit
    }

    /// How many jobs the claim has taken so far.
    pub fn taken(&self) -> usize {
        self.taken
    }

    /// What the store must read (and pass to `know_*`) before
    /// [`ClaimAdmission::decide`] can answer for `job`; `None` when nothing.
    /// Ask again after each answer: a candidate may need both reads, and the
    /// window only once the cap has room (a capped-out candidate needs no window).
    pub fn missing(&self, job: &Job) -> Option<AdmissionRead> {
        if job.is_expired(self.now_ms) {
            return None;
        }
        if let Some(key) = &job.sequence_key {
            match self.sequences.get(key) {
                None => return Some(AdmissionRead::Sequence(key.clone())),
                Some(head) if !head.is_turn_of(job) => return None,
                Some(_) => {}
            }
        }
        if let Some((key, max)) = reservation_for(job, &self.req.queue_config) {
            match self.active.get(&key) {
                None => return Some(AdmissionRead::Active { key, max }),
                Some(active) if !fits(*active, job.cost, max) => return None,
                Some(_) => {}
            }
        }
        let limit = job.rate_limit()?;
        (!self.windows.contains_key(&limit.key)).then_some(AdmissionRead::Window(limit))
    }

    /// The store's answer to [`AdmissionRead::Active`].
    pub fn know_active(&mut self, key: &str, active: i64) {
        self.active.insert(key.to_owned(), active);
    }

    /// The store's answer to [`AdmissionRead::Sequence`].
    pub fn know_sequence(&mut self, key: &str, head: SequenceHead) {
        self.sequences.insert(key.to_owned(), head);
    }

    /// The store's answer to [`AdmissionRead::Window`]: the window, or `None`
    /// when another claim is deciding on the key right now.
    pub fn know_window(&mut self, key: &str, window: Option<RateWindow>) {
        self.windows.insert(key.to_owned(), window);
    }

    /// The decision on `job`, counted as taken when it is [`Admission::Take`].
    ///
    /// # Panics
    /// When [`ClaimAdmission::missing`] still asks for a read (a store bug): in
    /// debug builds at once, in release builds when the unread key is looked up.
    pub fn decide(&mut self, job: &Job) -> Admission {
        debug_assert!(
            self.missing(job).is_none(),
            "decide() before the store answered missing()"
        );
        if job.is_expired(self.now_ms) {
            return Admission::Expire;
        }
        if let Some(key) = &job.sequence_key {
            if !self.sequences[key].is_turn_of(job) {
                return Admission::Leave(LeaveReason::NotItsTurn);
            }
        }
        let reservation = reservation_for(job, &self.req.queue_config);
        if let Some((key, max)) = &reservation {
            if !fits(self.active[key], job.cost, *max) {
                return Admission::Leave(LeaveReason::AtCap);
            }
        }
        let rate_start = job.rate_limit();
        if let Some(limit) = &rate_start {
            match self.windows.get_mut(&limit.key).expect("window read") {
                None => return Admission::Leave(LeaveReason::RateKeyBusy),
                Some(window) => {
                    if let Err(due_at_ms) = window.try_start(limit, self.now_ms, job.cost) {
                        return Admission::Postpone { due_at_ms };
                    }
                }
            }
        }
        if let Some((key, _)) = &reservation {
            *self.active.get_mut(key).expect("read above") += job.cost;
        }
        if let Some(key) = &job.sequence_key {
            self.sequences.get_mut(key).expect("read above").running = true;
        }
        self.taken += 1;
        Admission::Take {
            reservation,
            rate_start,
        }
    }
}

/// Whether a job costing `cost` fits under `max` beside `active` units: it
/// does when the sum is within the cap, or when the key holds nothing (a job
/// costing more than its queue's cap then runs alone rather than never).
fn fits(active: i64, cost: i64, max: i64) -> bool {
    active == 0 || active.saturating_add(cost) <= max
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::new_job::NewJob;
    use crate::options::EnqueueOptions;
    use crate::requests::QueueConfig;
    use crate::transitions::new_job_row;
    use std::time::Duration;

    fn request(limit: usize) -> ClaimRequest {
        ClaimRequest {
            worker_id: "w".into(),
            job_names: vec!["j".into()],
            limit,
            ..ClaimRequest::default()
        }
    }

    fn job(opts: EnqueueOptions) -> Job {
        new_job_row(&NewJob::new("j", serde_json::json!([]), opts).unwrap(), 0)
    }

    fn answer(admission: &mut ClaimAdmission<'_>, job: &Job, active: i64, starts: Vec<i64>) {
        while let Some(read) = admission.missing(job) {
            match read {
                AdmissionRead::Active { key, .. } => admission.know_active(&key, active),
                AdmissionRead::Window(limit) => {
                    admission.know_window(&limit.key, Some(RateWindow::new(starts.clone())))
                }
                AdmissionRead::Sequence(key) => {
                    admission.know_sequence(&key, SequenceHead::default())
                }
            }
        }
    }

    fn both() -> EnqueueOptions {
        EnqueueOptions::new()
            .concurrency("c", 2)
            .rate_limit("r", 1, Duration::from_secs(1))
    }

    #[test]
    fn a_plain_job_needs_no_read_and_is_taken() {
        let req = request(1);
        let mut a = ClaimAdmission::new(&req, 5);
        let j = job(EnqueueOptions::new());
        assert_eq!(a.missing(&j), None);
        assert!(matches!(
            a.decide(&j),
            Admission::Take {
                reservation: None,
                rate_start: None
            }
        ));
        assert!(a.is_full());
    }

    #[test]
    fn the_cap_is_checked_before_the_rate_window_is_read() {
        let req = request(10);
        let mut a = ClaimAdmission::new(&req, 5_000);
        let j = job(both());
        assert_eq!(
            a.missing(&j),
            Some(AdmissionRead::Active {
                key: "c".into(),
                max: 2
            })
        );
        a.know_active("c", 2);
        // At its cap: no window needed, and the rate key logs no start.
        assert_eq!(a.missing(&j), None);
        assert_eq!(a.decide(&j), Admission::Leave(LeaveReason::AtCap));
    }

    #[test]
    fn a_saturated_rate_key_postpones_without_taking_a_reservation() {
        let req = request(10);
        let mut a = ClaimAdmission::new(&req, 5_000);
        let j = job(both());
        answer(&mut a, &j, 0, vec![]);
        assert!(matches!(a.decide(&j), Admission::Take { .. }));
        // The rate key (1 per second) is now full; the cap (2) is not.
        assert_eq!(a.decide(&j), Admission::Postpone { due_at_ms: 6_000 });
        assert_eq!(a.active["c"], 1, "a postponed job takes no reservation");
        assert_eq!(a.taken(), 1);
    }

    #[test]
    fn an_expired_job_is_expired_before_any_read_and_takes_no_slot() {
        let req = request(1);
        let mut a = ClaimAdmission::new(&req, 5_000);
        let mut j = job(both());
        j.expires_at_ms = Some(5_000);
        assert_eq!(a.missing(&j), None);
        assert_eq!(a.decide(&j), Admission::Expire);
        assert!(!a.is_full());
        j.expires_at_ms = Some(5_001);
        assert!(a.missing(&j).is_some(), "not yet expired: read as usual");
    }

    #[test]
    fn a_cost_takes_that_many_units_of_the_cap_and_the_rate() {
        let req = request(10);
        let mut a = ClaimAdmission::new(&req, 5_000);
        let heavy = job(EnqueueOptions::new().concurrency("c", 2).cost(2));
        answer(&mut a, &heavy, 1, vec![]);
        assert_eq!(
            a.decide(&heavy),
            Admission::Leave(LeaveReason::AtCap),
            "1 + 2 is over the cap of 2"
        );
        let mut b = ClaimAdmission::new(&req, 5_000);
        let light = job(EnqueueOptions::new().rate_limit("r", 3, Duration::from_secs(1)));
        let heavy = job(EnqueueOptions::new()
            .rate_limit("r", 3, Duration::from_secs(1))
            .cost(2));
        answer(&mut b, &heavy, 0, vec![4_500]);
        assert!(
            matches!(b.decide(&heavy), Admission::Take { .. }),
            "1 + 2 starts fit 3"
        );
        assert_eq!(b.decide(&light), Admission::Postpone { due_at_ms: 5_500 });
    }

    #[test]
    fn a_job_costing_more_than_its_queue_cap_runs_alone() {
        let mut req = request(10);
        let config = QueueConfig {
            max_concurrent: Some(2),
            ..QueueConfig::default()
        };
        req.queue_config.insert("default".into(), config);
        let key = crate::keys::queue_concurrency_key("default");
        let heavy = job(EnqueueOptions::new().cost(5));
        let mut busy = ClaimAdmission::new(&req, 0);
        busy.know_active(&key, 1);
        assert_eq!(busy.decide(&heavy), Admission::Leave(LeaveReason::AtCap));
        let mut idle = ClaimAdmission::new(&req, 0);
        idle.know_active(&key, 0);
        assert!(matches!(idle.decide(&heavy), Admission::Take { .. }));
        let plain = job(EnqueueOptions::new());
        assert_eq!(
            idle.decide(&plain),
            Admission::Leave(LeaveReason::AtCap),
            "5 of 2 taken"
        );
    }

    #[test]
    fn only_the_first_job_of_a_sequence_is_taken_and_only_while_none_runs() {
        let req = request(10);
        let mut a = ClaimAdmission::new(&req, 0);
        let first = job(EnqueueOptions::new().sequence("s"));
        let mut second = job(EnqueueOptions::new().sequence("s"));
        second.created_at_ms = 1;
        assert_eq!(a.missing(&first), Some(AdmissionRead::Sequence("s".into())));
        let head = SequenceHead {
            first: Some((first.created_at_ms, first.id.clone())),
            running: false,
        };
        a.know_sequence("s", head.clone());
        assert_eq!(
            a.missing(&second),
            None,
            "not its turn: nothing more to read"
        );
        assert_eq!(a.decide(&second), Admission::Leave(LeaveReason::NotItsTurn));
        assert!(matches!(a.decide(&first), Admission::Take { .. }));
        assert_eq!(
            a.decide(&first),
            Admission::Leave(LeaveReason::NotItsTurn),
            "now running"
        );
        let mut b = ClaimAdmission::new(&req, 0);
        b.know_sequence(
            "s",
            SequenceHead {
                running: true,
                ..head
            },
        );
        assert_eq!(b.decide(&first), Admission::Leave(LeaveReason::NotItsTurn));
    }

    #[test]
    fn a_busy_rate_key_leaves_its_jobs_for_the_next_claim() {
        let req = request(10);
        let mut a = ClaimAdmission::new(&req, 0);
        let j = job(EnqueueOptions::new().rate_limit("r", 5, Duration::from_secs(1)));
        a.know_window("r", None);
        assert_eq!(a.decide(&j), Admission::Leave(LeaveReason::RateKeyBusy));
    }

    #[test]
    fn a_queue_cap_from_the_claim_config_applies_to_unkeyed_jobs() {
        let mut req = request(10);
        req.queue_config.insert(
            "default".into(),
            QueueConfig {
                max_concurrent: Some(1),
                ..QueueConfig::default()
            },
        );
        let mut a = ClaimAdmission::new(&req, 0);
        let j = job(EnqueueOptions::new());
        let key = crate::keys::queue_concurrency_key("default");
        assert_eq!(
            a.missing(&j),
            Some(AdmissionRead::Active {
                key: key.clone(),
                max: 1
            })
        );
        a.know_active(&key, 0);
        assert_eq!(
            a.decide(&j),
            Admission::Take {
                reservation: Some((key, 1)),
                rate_start: None
            }
        );
        assert_eq!(a.decide(&j), Admission::Leave(LeaveReason::AtCap));
    }
}
