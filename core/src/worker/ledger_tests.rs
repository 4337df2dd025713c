//! The ledger's rules, without a runtime: each counting rule on its own, then
//! random walks of claims, attempts, reports, losses and shutdown that check
//! the invariants after every step and that a shutdown always finishes.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use tokio::time::Instant;

use super::*;
use crate::requests::Outcome;

fn job(n: usize) -> Job {
    let mut job = crate::transitions::new_job_row(
        &crate::NewJob::new("n", json!([]), crate::EnqueueOptions::new()).unwrap(),
        0,
    );
    job.id = format!("job-{n}");
    job.status = crate::JobStatus::HandedOff;
    job.handoff_id = Some(format!("h-{n}"));
    job
}

fn jobs(from: usize, n: usize) -> Vec<Job> {
    (from..from + n).map(job).collect()
}

fn report(job: &Job) -> Report {
    Report {
        lease: job.lease().unwrap(),
        outcome: Outcome::Completed,
        job_name: job.job_name.clone(),
        queue: job.queue.clone(),
        attempt: 1,
        retries_left: true,
        duration: Duration::ZERO,
        aborted_after_cancel: false,
        started: true,
    }
}

fn hold(ledger: &mut Ledger<()>, jobs: Vec<Job>, asked: usize) -> Vec<Job> {
    ledger
        .hold(jobs, asked, || ((), ()))
        .into_iter()
        .map(|(j, ())| j)
        .collect()
}

#[test]
fn free_counts_claims_in_flight_and_gives_back_reported_jobs() {
    let mut ledger = Ledger::<()>::new(4, 0);
    assert_eq!(ledger.free(), 4);
    let asked = ledger.begin_claim();
    assert_eq!(
        (asked, ledger.free()),
        (4, 0),
        "asked-for jobs are spoken for"
    );
    ledger.claim_done(asked);
    let held = hold(&mut ledger, jobs(0, 3), asked);
    assert_eq!((ledger.held(), ledger.free()), (3, 1));
    ledger.received(report(&held[0]));
    ledger.received(report(&held[1]));
    let (batch, refill) = ledger.begin_report(true);
    // The short claim left no backlog: no refill, and the batch's two jobs
    // count as given back while it is in flight.
    assert_eq!((batch.len(), refill, ledger.free()), (2, 0, 3));
    let settled = ledger.report_done(batch, refill, &[true, false]);
    let accepted: Vec<bool> = settled.iter().map(|s| s.accepted).collect();
    assert_eq!(accepted, [true, false]);
    assert_eq!((ledger.held(), ledger.free()), (1, 3));
    ledger.check_invariants();
}

#[test]
fn refills_only_under_a_backlog_while_running() {
    let mut ledger = Ledger::<()>::new(2, 0);
    let asked = ledger.begin_claim();
    ledger.claim_done(asked);
    let held = hold(&mut ledger, jobs(0, 2), asked);
    ledger.received(report(&held[0]));
    let (batch, refill) = ledger.begin_report(false);
    assert_eq!(refill, 0, "a worker without handlers never refills");
    ledger.report_done(batch, refill, &[true]);
    ledger.received(report(&held[1]));
    let (batch, refill) = ledger.begin_report(true);
    assert_eq!(
        refill, 2,
        "the full claim left a backlog: refill both slots"
    );
    ledger.report_done(batch, refill, &[true]);
    hold(&mut ledger, jobs(2, 2), refill);
    ledger.begin_shutdown(Instant::now(), Vec::new());
    assert!(!ledger.may_claim());
    ledger.received(report(&job(2)));
    let (_, refill) = ledger.begin_report(true);
    assert_eq!(refill, 0, "no refill once shutdown began");
}

#[test]
fn a_failed_batch_goes_back_to_the_front_in_order() {
    let mut ledger = Ledger::<()>::new(8, 0);
    let asked = ledger.begin_claim();
    ledger.claim_done(asked);
    let held = hold(&mut ledger, jobs(0, 3), asked);
    ledger.received(report(&held[0]));
    ledger.received(report(&held[1]));
    let (batch, refill) = ledger.begin_report(true);
    ledger.received(report(&held[2]));
    ledger.report_failed(batch, refill);
    ledger.check_invariants();
    assert_eq!(ledger.held(), 3, "nothing is given up on a failed report");
    let (batch, _) = ledger.begin_report(true);
    let ids: Vec<&str> = batch.iter().map(|r| r.lease.job_id.as_str()).collect();
    assert_eq!(ids, ["job-0", "job-1", "job-2"]);
}

#[test]
fn a_lease_loss_is_news_once_and_for_the_same_lease_only() {
    let mut ledger = Ledger::<u32>::new(4, 4);
    let mut n = 0;
    let asked = ledger.begin_claim();
    ledger.claim_done(asked);
    ledger.hold(jobs(0, 3), asked, || {
        n += 1;
        (n, ())
    });
    let lease = job(0).lease().unwrap();
    let other = Lease {
        handoff_id: "h-other".into(),
        ..lease.clone()
    };
    assert!(matches!(
        ledger.lose(&other, LeaseLoss::Lost, |_| false),
        Lost::Known
    ));
    assert!(matches!(
        ledger.lose(&lease, LeaseLoss::Cancelled, |_| false),
        Lost::Running(1)
    ));
    assert!(!ledger.is_live("job-0"));
    assert!(matches!(
        ledger.lose(&lease, LeaseLoss::Cancelled, |_| false),
        Lost::Known
    ));
    // A job still waiting for a slot never starts and is let go.
    let waiting = job(1).lease().unwrap();
    assert!(matches!(
        ledger.lose(&waiting, LeaseLoss::Lost, |_| true),
        Lost::Unstarted
    ));
    assert_eq!(ledger.held(), 2);
    let live: Vec<String> = ledger.live_leases().into_iter().map(|l| l.job_id).collect();
    assert_eq!(live, ["job-2"]);
    // The cancelled job's report carries what was learned.
    ledger.received(report(&job(0)));
    let (batch, refill) = ledger.begin_report(true);
    let settled = ledger.report_done(batch, refill, &[false]);
    assert_eq!(settled[0].loss, Some(LeaseLoss::Cancelled));
}

#[test]
fn over_delivered_and_unleased_jobs_are_not_held() {
    let mut ledger = Ledger::<()>::new(2, 0);
    let asked = ledger.begin_claim();
    ledger.claim_done(asked);
    let mut delivered = jobs(0, 3);
    delivered[1].handoff_id = None;
    let started: Vec<String> = hold(&mut ledger, delivered, asked)
        .into_iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(started, ["job-0"]);
    assert_eq!(ledger.held(), 1);
    ledger.check_invariants();
}

#[test]
fn shutdown_drains_then_abandons_then_gives_up() {
    let mut ledger = Ledger::<()>::new(2, 2);
    let asked = ledger.begin_claim();
    ledger.claim_done(asked);
    let held = hold(&mut ledger, jobs(0, 4), asked);
    let t0 = Instant::now();
    assert_eq!(ledger.deadline_passed(t0, Duration::ZERO), None);
    // Two were waiting for a slot: they go back unstarted with the next batch.
    let unstarted = held[2..].iter().filter_map(Report::unstarted).collect();
    ledger.begin_shutdown(t0 + Duration::from_secs(30), unstarted);
    assert_eq!(ledger.deadline(), Some(t0 + Duration::from_secs(30)));
    assert!(ledger.batch_ready());
    let (batch, refill) = ledger.begin_report(true);
    assert_eq!((batch.len(), refill), (2, 0));
    assert!(batch.iter().all(|r| !r.started));
    ledger.report_done(batch, refill, &[true, true]);
    assert!(!ledger.is_finished(), "two attempts still run");
    let t1 = t0 + Duration::from_secs(30);
    assert_eq!(
        ledger.deadline_passed(t1, Duration::from_secs(5)),
        Some(Expiry::AbortAttempts)
    );
    assert_eq!(
        ledger.phase(),
        Phase::Abandoning {
            until: t1 + Duration::from_secs(5)
        }
    );
    ledger.received(report(&held[0]));
    let (batch, refill) = ledger.begin_report(true);
    ledger.report_done(batch, refill, &[true]);
    assert_eq!(
        ledger.deadline_passed(t1 + Duration::from_secs(5), Duration::ZERO),
        Some(Expiry::GiveUp { outstanding: 1 })
    );
    ledger.received(report(&held[1]));
    let (batch, refill) = ledger.begin_report(true);
    ledger.report_done(batch, refill, &[true]);
    assert!(ledger.is_finished());
}

#[test]
fn the_call_modes() {
    let mut inline = Ledger::<()>::new(10, 0);
    assert_eq!(inline.mode(), CallMode::Inline);
    inline.begin_claim();
    assert!(!inline.may_call(), "one call at a time inline");
    let mut overlapped = Ledger::<()>::new(10, 100);
    assert_eq!(overlapped.mode(), CallMode::Overlapped);
    let asked = overlapped.begin_claim();
    assert!(overlapped.may_call());
    overlapped.claim_done(asked);
    let held = hold(&mut overlapped, jobs(0, 110), asked);
    overlapped.received(report(&held[0]));
    overlapped.begin_claim();
    // With a call in flight a second one waits for half the capacity's reports.
    assert!(!overlapped.batch_ready());
    for j in &held[1..55] {
        overlapped.received(report(j));
    }
    assert!(overlapped.batch_ready());
    overlapped.begin_report(true);
    assert!(!overlapped.may_call(), "two calls at most");
    overlapped.check_invariants();
}

/// One step of a random walk; indexes are taken modulo what exists.
#[derive(Clone, Debug)]
enum Step {
    Claim,
    Report,
    /// Finish call `i`: succeeded?, and how much of what it asked it got.
    Finish(usize, bool, u8),
    /// The attempt of running job `i` ends.
    End(usize),
    /// Running job `i`'s lease is lost; `true`: it was still waiting.
    Lose(usize, bool),
    Shutdown,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Claim),
        3 => Just(Step::Report),
        4 => (any::<usize>(), prop::bool::weighted(0.85), any::<u8>())
            .prop_map(|(i, ok, got)| Step::Finish(i, ok, got)),
        6 => any::<usize>().prop_map(Step::End),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, w)| Step::Lose(i, w)),
        1 => Just(Step::Shutdown),
    ]
}

enum Call {
    Claim(usize),
    Report(Vec<Report>, usize),
}

/// The world around the ledger: calls in flight, attempts running.
struct World {
    ledger: Ledger<()>,
    calls: Vec<Call>,
    running: Vec<Job>,
    next_id: usize,
}

impl World {
    fn deliver(&mut self, asked: usize, got: u8) {
        let n = asked * usize::from(got) / 255;
        let new = jobs(self.next_id, n);
        self.next_id += n;
        self.running.extend(hold(&mut self.ledger, new, asked));
    }

    fn apply(&mut self, step: Step) {
        match step {
            Step::Claim if self.ledger.may_call() && self.ledger.may_claim() => {
                let asked = self.ledger.begin_claim();
                self.calls.push(Call::Claim(asked));
            }
            Step::Report if self.ledger.may_call() && self.ledger.batch_ready() => {
                let (batch, refill) = self.ledger.begin_report(true);
                self.calls.push(Call::Report(batch, refill));
            }
            Step::Finish(i, ok, got) if !self.calls.is_empty() => {
                match self.calls.remove(i % self.calls.len()) {
                    Call::Claim(asked) => {
                        self.ledger.claim_done(asked);
                        if ok {
                            self.deliver(asked, got);
                        }
                    }
                    Call::Report(batch, asked) if ok => {
                        let results = vec![true; batch.len()];
                        self.ledger.report_done(batch, asked, &results);
                        if asked > 0 {
                            self.deliver(asked, got);
                        }
                    }
                    Call::Report(batch, asked) => self.ledger.report_failed(batch, asked),
                }
            }
            Step::End(i) if !self.running.is_empty() => {
                let job = self.running.remove(i % self.running.len());
                self.ledger.received(report(&job));
            }
            Step::Lose(i, waiting) if !self.running.is_empty() => {
                let at = i % self.running.len();
                let lease = self.running[at].lease().unwrap();
                if let Lost::Unstarted = self.ledger.lose(&lease, LeaseLoss::Lost, |_| waiting) {
                    self.running.remove(at);
                }
            }
            Step::Shutdown => self.ledger.begin_shutdown(Instant::now(), Vec::new()),
            _ => {}
        }
        self.ledger.check_invariants();
    }
}

proptest! {
    #[test]
    fn random_walks_keep_the_books_and_always_finish(
        slots in 1usize..6,
        prefetch in prop_oneof![Just(0usize), 1usize..6],
        steps in prop::collection::vec(step(), 0..120),
    ) {
        let mut world = World {
            ledger: Ledger::new(slots, prefetch),
            calls: Vec::new(),
            running: Vec::new(),
            next_id: 0,
        };
        for s in steps {
            world.apply(s);
        }
        // Shut down and let everything end: the ledger must come to rest.
        world.apply(Step::Shutdown);
        for _ in 0..10_000 {
            if world.ledger.is_finished() {
                break;
            }
            let s = if !world.running.is_empty() {
                Step::End(0)
            } else if !world.calls.is_empty() {
                Step::Finish(0, true, 255)
            } else {
                Step::Report
            };
            world.apply(s);
        }
        prop_assert!(world.ledger.is_finished());
        prop_assert!(!world.ledger.has_pending());
    }
}
