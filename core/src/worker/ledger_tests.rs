//! The ledger's rules, without a runtime: each counting rule on its own, then
//! random walks of claims, attempts, reports, losses and shutdown that check
//! the invariants after every step and that a shutdown always finishes.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use tokio::time::Instant;

use super::*;
use crate::requests::Outcome;
use crate::worker::PrefetchPolicy;

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
        in_transaction: None,
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
    let mut ledger = Ledger::<()>::new(4, PrefetchPolicy::Fixed(0));
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
    let mut ledger = Ledger::<()>::new(2, PrefetchPolicy::Fixed(0));
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
    let mut ledger = Ledger::<()>::new(8, PrefetchPolicy::Fixed(0));
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
    let mut ledger = Ledger::<u32>::new(4, PrefetchPolicy::Fixed(4));
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
    let mut ledger = Ledger::<()>::new(2, PrefetchPolicy::Fixed(0));
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
    let mut ledger = Ledger::<()>::new(2, PrefetchPolicy::Fixed(2));
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
    let mut inline = Ledger::<()>::new(10, PrefetchPolicy::Fixed(0));
    assert_eq!(inline.mode(), CallMode::Inline);
    inline.begin_claim();
    assert!(!inline.may_call(), "one call at a time inline");
    let mut overlapped = Ledger::<()>::new(10, PrefetchPolicy::Fixed(100));
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

#[test]
fn the_adaptive_allowance_grows_with_full_claims_of_fast_jobs_and_drops_when_a_claim_is_short() {
    let mut ahead = Ahead::new(10, PrefetchPolicy::Adaptive { max: 100 });
    assert_eq!(
        ahead.now(),
        0,
        "nothing ahead before a claim shows a backlog"
    );
    // Each full claim after the slots turned over: to the slots, doubling, capped.
    let mut seen = Vec::new();
    for _ in 0..6 {
        ahead.after_claim(10, 10, 100);
        seen.push(ahead.now());
    }
    assert_eq!(seen, [10, 20, 40, 80, 100, 100]);
    ahead.after_claim(0, 0, 100);
    assert_eq!(
        ahead.now(),
        100,
        "a claim that asked for nothing says nothing"
    );
    ahead.after_claim(50, 49, 100);
    assert_eq!(ahead.now(), 0, "a short claim: the queue ran dry");
    ahead.after_claim(3, 3, 3);
    assert_eq!(
        ahead.now(),
        10,
        "a full claim, however small, shows a backlog"
    );

    let mut small = Ahead::new(10, PrefetchPolicy::Adaptive { max: 4 });
    small.after_claim(10, 10, 10);
    assert_eq!(small.now(), 4, "the cap wins over the slots");

    let mut fixed = Ahead::new(10, PrefetchPolicy::Fixed(5));
    assert_eq!(fixed.now(), 5);
    fixed.after_claim(15, 0, 0);
    fixed.after_claim(15, 15, 100);
    assert_eq!(fixed.now(), 5, "a fixed prefetch never moves");
}

#[test]
fn the_adaptive_allowance_grows_only_while_a_quarter_of_what_is_held_turns_over() {
    let mut ahead = Ahead::new(8, PrefetchPolicy::Adaptive { max: 500 });
    // Long jobs: a backlog, but one or two end between claims.
    for finished in [0, 1, 1, 0, 1] {
        ahead.after_claim(1, 1, finished);
    }
    assert_eq!(ahead.now(), 0, "slow jobs are never claimed ahead");
    ahead.after_claim(8, 8, 2);
    assert_eq!(ahead.now(), 8, "a quarter of the slots ended");
    ahead.after_claim(8, 8, 1);
    assert_eq!(ahead.now(), 8, "too few ended for 8 ahead: it stays");
    ahead.after_claim(8, 8, 2);
    assert_eq!(ahead.now(), 16);
    ahead.after_claim(16, 16, 3);
    assert_eq!(ahead.now(), 16, "a quarter of 16 is 4");
    ahead.after_claim(16, 16, 4);
    assert_eq!(ahead.now(), 32);
    ahead.after_claim(16, 15, 1_000);
    assert_eq!(ahead.now(), 0, "however fast, a short claim drops it");
}

#[test]
fn an_adaptive_worker_claims_ahead_only_under_a_backlog_of_fast_jobs() {
    let mut ledger = Ledger::<()>::new(2, PrefetchPolicy::Adaptive { max: 6 });
    // Idle at first: a claim asks for the slots alone, inline.
    assert_eq!(ledger.mode(), CallMode::Inline);
    let asked = ledger.begin_claim();
    assert_eq!(asked, 2);
    ledger.claim_done(asked);
    let first = hold(&mut ledger, jobs(0, 2), asked);
    assert_eq!(ledger.ahead(), 0, "full, but nothing had ended yet");
    // Both end; their report refills the slots: a full refill of fast jobs.
    for j in &first {
        ledger.received(report(j));
    }
    let (batch, refill) = ledger.begin_report(true);
    assert_eq!(refill, 2);
    ledger.report_done(batch, refill, &[true; 2]);
    let mut held = hold(&mut ledger, jobs(2, 2), refill);
    assert_eq!((ledger.ahead(), ledger.free()), (2, 2));
    assert_eq!(
        ledger.mode(),
        CallMode::Overlapped,
        "jobs ahead: overlapped"
    );
    // One more ends: a quarter of the slots, so the next full claim doubles.
    ledger.received(report(&held[0]));
    let asked = ledger.begin_claim();
    assert_eq!(asked, 2);
    ledger.claim_done(asked);
    held.extend(hold(&mut ledger, jobs(4, 2), asked));
    assert_eq!(ledger.ahead(), 4);
    ledger.received(report(&held[1]));
    let asked = ledger.begin_claim();
    ledger.claim_done(asked);
    held.extend(hold(&mut ledger, jobs(6, asked), asked));
    assert_eq!((ledger.ahead(), ledger.held()), (6, 6), "capped");
    ledger.check_invariants();
    // The queue runs dry: nothing ahead any more, and what is held beyond the
    // slots blocks claims until it has been reported.
    let (batch, refill) = ledger.begin_report(true);
    assert_eq!(
        (batch.len(), refill),
        (2, 4),
        "a backlog: the batch refills"
    );
    ledger.report_done(batch, refill, &[true; 2]);
    hold(&mut ledger, jobs(8, 1), refill);
    assert_eq!((ledger.ahead(), ledger.held(), ledger.free()), (0, 5, 0));
    assert_eq!(
        ledger.mode(),
        CallMode::Inline,
        "nothing ahead: inline again"
    );
    for j in &held[2..5] {
        ledger.received(report(j));
    }
    let (batch, refill) = ledger.begin_report(true);
    assert_eq!(refill, 0, "no backlog, no refill");
    ledger.report_done(batch, refill, &[true; 3]);
    assert_eq!(
        (ledger.held(), ledger.free()),
        (2, 0),
        "the slots' worth held"
    );
    ledger.received(report(&held[5]));
    let (batch, refill) = ledger.begin_report(true);
    ledger.report_done(batch, refill, &[true]);
    assert_eq!((ledger.held(), ledger.free()), (1, 1));
    ledger.check_invariants();
}

#[test]
fn an_adaptive_worker_back_to_inline_waits_for_the_call_still_in_flight() {
    let mut ledger = Ledger::<()>::new(2, PrefetchPolicy::Adaptive { max: 4 });
    let asked = ledger.begin_claim();
    ledger.claim_done(asked);
    let first = hold(&mut ledger, jobs(0, 2), asked);
    ledger.received(report(&first[0]));
    let (batch, refill) = ledger.begin_report(true);
    ledger.report_done(batch, refill, &[true]);
    let second = hold(&mut ledger, jobs(2, refill), refill);
    assert_eq!(ledger.mode(), CallMode::Overlapped);
    // Two calls in flight: a report (without a refill here) and a claim.
    ledger.received(report(&first[1]));
    ledger.received(report(&second[0]));
    let (batch, report_refill) = ledger.begin_report(false);
    let asked = ledger.begin_claim();
    assert_eq!(asked, 4);
    assert!(!ledger.may_call());
    // The claim comes back short: inline again, and the report still in
    // flight is the one call inline allows.
    ledger.claim_done(asked);
    hold(&mut ledger, Vec::new(), asked);
    assert_eq!(ledger.mode(), CallMode::Inline);
    assert!(!ledger.may_call(), "the report still in flight");
    ledger.check_invariants();
    ledger.report_done(batch, report_refill, &[true, true]);
    assert!(ledger.may_call());
    ledger.check_invariants();
}

#[test]
fn adaptive_up_to_nothing_is_no_prefetch() {
    let ledger = Ledger::<()>::new(4, PrefetchPolicy::Adaptive { max: 0 });
    assert_eq!(ledger.mode(), CallMode::Inline);
    assert_eq!(ledger.free(), 4);
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
    /// Half the time a full claim (a backlog), otherwise a short one.
    fn deliver(&mut self, asked: usize, got: u8) {
        let n = if got >= 128 {
            asked
        } else {
            asked * usize::from(got) / 128
        };
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
        prefetch in prop_oneof![
            Just(PrefetchPolicy::Fixed(0)),
            (1usize..6).prop_map(PrefetchPolicy::Fixed),
            (0usize..12).prop_map(|max| PrefetchPolicy::Adaptive { max }),
        ],
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
