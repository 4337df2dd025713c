//! `docs/schedule-keys.md` and `docs/idempotency.md` and `docs/counts.md` and `ARCHITECTURE.md` concurrency promises across real OS processes sharing one
//! SQLite file: eight processes replacing one schedule key leave exactly one
//! queued owner; eight idempotent enqueues of one scope make one job; counts stay
//! exact under concurrent producers; a worker SIGKILLed mid-job loses no job; a
//! paused queue is honoured by worker processes at their next claim.
//!
//! Every helper process opens the store (so schema creation races too), prints
//! `ready`, and blocks on stdin; the test releases all of them at once by writing
//! a line to each, so they really contend (no sleeps).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;

use duraq_core::inspect::JobFilter;
use duraq_core::{Clock, JobStatus, ManualClock, ScheduleKey, Store, SystemClock};
use duraq_store_sqlite::{SqliteOptions, SqliteStore};
use serde_json::Value;

const PROCESSES: usize = 8;

struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Proc {
    fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read child stdout");
        line.trim_end().to_owned()
    }
}

/// Starts `n` helpers with `args(i)` and returns once every one said `ready`.
fn spawn_ready(db: &Path, n: usize, args: impl Fn(usize) -> Vec<String>) -> Vec<Proc> {
    let mut procs: Vec<Proc> = (0..n)
        .map(|i| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_duraq-test-proc"))
                .arg(db)
                .args(args(i))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn duraq-test-proc");
            let stdin = child.stdin.take().unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            Proc {
                child,
                stdin,
                stdout,
            }
        })
        .collect();
    for p in &mut procs {
        assert_eq!(p.line(), "ready", "helper failed to open the store");
    }
    procs
}

/// Opens the barrier for every helper at once.
fn release(procs: &mut [Proc]) {
    for p in procs.iter_mut() {
        writeln!(p.stdin, "go")
            .and_then(|_| p.stdin.flush())
            .expect("release helper");
    }
}

/// Each helper's JSON answer, after it exited successfully.
fn results(procs: Vec<Proc>) -> Vec<Value> {
    procs
        .into_iter()
        .map(|mut p| {
            let line = p.line();
            let status = p.child.wait().expect("wait helper");
            assert!(status.success(), "helper failed: {status} ({line})");
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("bad helper output {line:?}: {e}"))
        })
        .collect()
}

fn open(db: &Path, clock: Arc<dyn Clock>) -> Arc<dyn Store> {
    Arc::new(SqliteStore::open_with_clock(db, SqliteOptions::default(), clock).expect("open store"))
}

#[test]
fn concurrent_replacements_leave_one_owner() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.db");
    let mut procs = spawn_ready(&db, PROCESSES, |i| {
        vec!["replace".into(), "event:42:reminder".into(), i.to_string()]
    });
    release(&mut procs);
    let answers = results(procs);
    duraq_tests::block_on(async {
        let store = open(&db, Arc::new(SystemClock));
        let jobs = store.search_jobs(&JobFilter::default()).await.unwrap().jobs;
        assert_eq!(jobs.len(), PROCESSES, "every replacement inserted its job");
        let queued: Vec<_> = jobs
            .iter()
            .filter(|j| j.status == JobStatus::Queued)
            .collect();
        assert_eq!(queued.len(), 1, "exactly one queued owner");
        assert_eq!(
            jobs.iter()
                .filter(|j| j.status == JobStatus::Cancelled)
                .count(),
            PROCESSES - 1
        );
        let key = ScheduleKey::new("event:42:reminder").unwrap();
        let owner = store
            .get_scheduled(&key, false)
            .await
            .unwrap()
            .current_job
            .expect("an owner");
        assert_eq!(owner.id, queued[0].id);
        let mut orders: Vec<i64> = jobs.iter().map(|j| j.schedule_order.unwrap()).collect();
        orders.sort();
        assert_eq!(
            orders,
            (1..=PROCESSES as i64).collect::<Vec<_>>(),
            "replacements serialized"
        );
        assert_eq!(
            owner.schedule_order,
            Some(PROCESSES as i64),
            "the last replacement owns the key"
        );
        // The answers form one chain: each previous owner was replaced exactly once.
        let firsts = answers
            .iter()
            .filter(|a| a["previousJobId"].is_null())
            .count();
        assert_eq!(firsts, 1);
        let mut previous: Vec<&str> = answers
            .iter()
            .filter_map(|a| a["previousJobId"].as_str())
            .collect();
        previous.sort();
        previous.dedup();
        assert_eq!(previous.len(), PROCESSES - 1);
        assert!(!previous.contains(&owner.id.as_str()));
        assert!(answers
            .iter()
            .all(|a| a["previousStatus"].is_null() || a["previousStatus"] == "queued"));
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!(
            (snap.counts.queued, snap.counts.cancelled, snap.total),
            (1, PROCESSES as i64 - 1, PROCESSES as i64)
        );
    });
}

#[test]
fn concurrent_idempotent_enqueues_make_one_job() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.db");
    let mut procs = spawn_ready(&db, PROCESSES, |_| {
        vec!["enqueue-idem".into(), "order-7:receipt".into()]
    });
    release(&mut procs);
    let answers = results(procs);
    let created: Vec<_> = answers
        .iter()
        .filter(|a| a["outcome"] == "created")
        .collect();
    assert_eq!(created.len(), 1, "one process created the job: {answers:?}");
    let id = created[0]["jobId"].as_str().unwrap();
    for a in &answers {
        assert_eq!(a["jobId"], id, "every process got the same job");
        assert!(
            a["outcome"] == "created" || a["outcome"] == "replayed",
            "{a}"
        );
    }
    duraq_tests::block_on(async {
        let store = open(&db, Arc::new(SystemClock));
        let jobs = store.search_jobs(&JobFilter::default()).await.unwrap().jobs;
        assert_eq!(jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), [id]);
        assert_eq!(store.count_snapshot().await.unwrap().total, 1);
    });
}

#[test]
fn counts_stay_exact_with_concurrent_producers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.db");
    let per_process = 25;
    let r0 = duraq_tests::block_on(async {
        open(&db, Arc::new(SystemClock))
            .count_snapshot()
            .await
            .unwrap()
            .revision
    });
    let mut procs = spawn_ready(&db, PROCESSES, |_| {
        vec!["enqueue-many".into(), per_process.to_string()]
    });
    release(&mut procs);
    let answers = results(procs);
    let mut ids: Vec<&str> = answers
        .iter()
        .flat_map(|a| a.as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    ids.sort();
    ids.dedup();
    let expected = (PROCESSES * per_process) as i64;
    assert_eq!(ids.len() as i64, expected);
    duraq_tests::block_on(async {
        let store = open(&db, Arc::new(SystemClock));
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!((snap.counts.queued, snap.total), (expected, expected));
        assert_eq!(
            store
                .search_jobs(&JobFilter::default())
                .await
                .unwrap()
                .jobs
                .len() as i64,
            expected
        );
        assert_eq!(
            snap.revision - r0,
            expected,
            "one revision per committed enqueue"
        );
    });
}

#[test]
fn sigkilled_worker_loses_no_job() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.db");
    let id = duraq_tests::block_on(async {
        let store = open(&db, Arc::new(SystemClock));
        let job =
            duraq_core::NewJob::new("work", serde_json::json!([]), Default::default()).unwrap();
        store.enqueue(job).await.unwrap().job_id().to_owned()
    });
    let mut procs = spawn_ready(&db, 1, |_| vec!["claim-and-hang".into(), "work".into()]);
    release(&mut procs);
    let mut worker = procs.pop().unwrap();
    let claimed: Value = serde_json::from_str(&worker.line()).expect("claimed jobs");
    assert_eq!(claimed[0]["id"], id.as_str(), "the helper holds the job");
    worker.child.kill().expect("SIGKILL the worker");
    assert!(!worker.child.wait().unwrap().success());
    duraq_tests::block_on(async {
        // A live process two minutes later finds the lease stale and recovers it.
        let clock = ManualClock::new(SystemClock.now_ms() + 120_000);
        let store = open(&db, Arc::new(clock));
        assert_eq!(
            store.get_job(&id).await.unwrap().unwrap().status,
            JobStatus::HandedOff
        );
        assert_eq!(
            store.recover_stale(60_000).await.unwrap(),
            std::slice::from_ref(&id)
        );
        let job = store.get_job(&id).await.unwrap().unwrap();
        assert_eq!((job.status, job.attempts), (JobStatus::Queued, 1));
        assert!(job.last_error.is_some());
    });
}

#[test]
fn periodic_ticks_from_three_processes_are_enqueued_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.db");
    let period_ms: i64 = 100;
    let mut procs = spawn_ready(&db, 3, |_| {
        vec!["periodic".into(), period_ms.to_string(), "1500".into()]
    });
    release(&mut procs);
    let created: u64 = results(procs)
        .iter()
        .map(|a| a["created"].as_u64().expect("created count"))
        .sum();
    duraq_tests::block_on(async {
        let store = open(&db, Arc::new(SystemClock));
        let filter = JobFilter {
            job_name: Some("tick".into()),
            ..JobFilter::default()
        };
        let jobs = store.search_jobs(&filter).await.unwrap().jobs;
        let mut ticks: Vec<i64> = jobs
            .iter()
            .map(|j| {
                let key = j.idempotency_key.as_deref().expect("a periodic key");
                let tick = key
                    .strip_prefix("periodic:beat:")
                    .expect("periodic key shape");
                let tick: i64 = tick.parse().expect("tick time");
                assert_eq!(j.scheduled_at_ms, tick, "a tick runs at its own time");
                tick
            })
            .collect();
        ticks.sort();
        let before = ticks.len();
        ticks.dedup();
        assert_eq!(ticks.len(), before, "a tick was enqueued twice");
        assert_eq!(created, before as u64, "every created tick is one row");
        // 1.5 s at 100 ms ticks is 15; a loaded machine (CI building other
        // crates meanwhile) has been seen to start the schedulers late, so the
        // bound only asks for enough ticks that the checks above and below
        // mean something.
        assert!(before >= 5, "1.5 s at 100 ms ticks, got {before}");
        assert!(
            ticks.windows(2).all(|w| w[1] - w[0] == period_ms),
            "no tick was skipped: {ticks:?}"
        );
    });
}

/// Pausing across processes: two worker processes drain every queue; once the
/// test process pauses `mail`, neither claims a mail job (new ones wait, a job
/// already running finishes and reports) while `video` keeps flowing; resuming
/// wakes them and the waiting mail jobs run.
#[test]
fn workers_in_other_processes_honour_a_pause() {
    use std::time::{Duration, Instant};

    use duraq_core::{EnqueueOptions, NewJob, QueueName};

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.db");
    let store = open(&db, Arc::new(SystemClock));
    let mut procs = spawn_ready(&db, 2, |_| vec!["work".into()]);
    release(&mut procs);
    duraq_tests::block_on(async {
        let enqueue = |queue: &str, ms: u64| {
            let job = NewJob::new(
                "p",
                serde_json::json!([ms]),
                EnqueueOptions::new().queue(queue),
            );
            let store = store.clone();
            async move {
                store
                    .enqueue(job.unwrap())
                    .await
                    .unwrap()
                    .job_id()
                    .to_owned()
            }
        };
        let status = |id: String| {
            let store = store.clone();
            async move { store.get_job(&id).await.unwrap().unwrap().status }
        };
        // Waits (up to 10 s) until every job of `ids` is in `want`.
        let wait_for = |ids: Vec<String>, want: JobStatus| {
            let status = &status;
            async move {
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    let mut all = true;
                    for id in &ids {
                        all &= status(id.clone()).await == want;
                    }
                    if all {
                        return;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "jobs {ids:?} never reached {want}"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        let first = vec![enqueue("mail", 0).await, enqueue("video", 0).await];
        wait_for(first, JobStatus::Completed).await;

        // A long mail job is running when the pause lands.
        let running = enqueue("mail", 800).await;
        wait_for(vec![running.clone()], JobStatus::HandedOff).await;
        let mail = QueueName::new("mail").unwrap();
        assert!(store.pause_queue(&mail).await.unwrap());
        let mut waiting = Vec::new();
        let mut flowing = Vec::new();
        for _ in 0..5 {
            waiting.push(enqueue("mail", 0).await);
            flowing.push(enqueue("video", 0).await);
        }
        wait_for(flowing, JobStatus::Completed).await;
        wait_for(vec![running], JobStatus::Completed).await;
        // Claims after the pause skipped the mail jobs: a video job enqueued
        // after all of them is due later, so workers that honoured no pause
        // would have claimed the mail jobs first. Once it completed (twice over,
        // so both workers have claimed since), the paused jobs must still wait.
        for _ in 0..2 {
            let marker = enqueue("video", 0).await;
            wait_for(vec![marker], JobStatus::Completed).await;
        }
        for id in &waiting {
            assert_eq!(
                status(id.clone()).await,
                JobStatus::Queued,
                "{id} was claimed while paused"
            );
        }

        assert!(store.resume_queue(&mail).await.unwrap());
        wait_for(waiting.clone(), JobStatus::Completed).await;
        for id in &waiting {
            let job = store.get_job(id).await.unwrap().unwrap();
            assert!(job.worker_id.is_some(), "run by a helper process");
        }
    });
    for p in &mut procs {
        writeln!(p.stdin, "stop")
            .and_then(|_| p.stdin.flush())
            .unwrap();
    }
    let reports = results(procs);
    let completed: u64 = reports
        .iter()
        .map(|r| r["completed"].as_u64().unwrap())
        .sum();
    // The first two, the long one, five video jobs, two markers and the five
    // that waited.
    assert_eq!(completed, 2 + 1 + 5 + 2 + 5, "{reports:?}");
}

/// `docs/workflows.md`: a fan-in of 400 jobs into one summary while two worker
/// processes are SIGKILLed mid-run. The summary is released exactly when the
/// last dependency completes: never before (its open count always equals the
/// dependencies not yet completed, so none was counted twice or lost), and the
/// counts stay exact.
#[test]
fn a_fan_in_survives_sigkilled_workers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.db");
    let fan_in = 400;
    let summary = duraq_tests::block_on(async {
        let store = open(&db, Arc::new(SystemClock));
        let deps: Vec<duraq_core::NewJob> = (0..fan_in)
            .map(|_| {
                duraq_core::NewJob::new("p", serde_json::json!([20]), Default::default()).unwrap()
            })
            .collect();
        let opts = deps
            .iter()
            .fold(duraq_core::EnqueueOptions::new(), |o, d| o.after(d.id()));
        let summary = duraq_core::NewJob::new("s", serde_json::json!([]), opts).unwrap();
        let id = summary.id().to_owned();
        let mut batch = deps;
        batch.push(summary);
        store.enqueue_batch(batch).await.unwrap();
        id
    });
    let mut procs = spawn_ready(&db, 2, |_| vec!["work".into()]);
    release(&mut procs);
    let watcher = open(&db, Arc::new(SystemClock));
    duraq_tests::block_on(async {
        // Wait on the condition itself: a quarter of the fan-in completed.
        while watcher.count_snapshot().await.unwrap().counts.completed < fan_in / 4 {
            tokio::task::yield_now().await;
        }
    });
    for mut p in procs {
        p.child.kill().expect("SIGKILL the worker");
        assert!(!p.child.wait().unwrap().success());
    }
    duraq_tests::block_on(async {
        let later = ManualClock::new(SystemClock.now_ms() + 120_000);
        let store = open(&db, Arc::new(later.clone()));
        let open_now = |completed: i64| fan_in - completed;
        let snap = store.count_snapshot().await.unwrap();
        let row = store.get_job(&summary).await.unwrap().unwrap();
        assert_eq!(row.status, JobStatus::Pending);
        assert_eq!(row.open_dependencies, open_now(snap.counts.completed));
        store.recover_stale(60_000).await.unwrap();
        later.advance(3_600_000);
        loop {
            let req = duraq_core::driver::ClaimRequest {
                worker_id: "finisher".into(),
                job_names: vec!["p".into()],
                limit: 50,
                ..Default::default()
            };
            let claimed = store.claim(&req).await.unwrap();
            if claimed.is_empty() {
                break;
            }
            for job in claimed {
                let before = store.get_job(&summary).await.unwrap().unwrap();
                let completed = store.count_snapshot().await.unwrap().counts.completed;
                assert_eq!(before.status, JobStatus::Pending, "released early");
                assert_eq!(before.open_dependencies, open_now(completed));
                let lease = duraq_core::driver::Lease {
                    job_id: job.id.clone(),
                    handoff_id: job.handoff_id.clone().unwrap(),
                };
                let applied = store
                    .report_batch(vec![(lease, duraq_core::Outcome::Completed)])
                    .await
                    .unwrap();
                assert_eq!(applied, [true]);
            }
        }
        let row = store.get_job(&summary).await.unwrap().unwrap();
        assert_eq!((row.status, row.open_dependencies), (JobStatus::Queued, 0));
        let snap = store.count_snapshot().await.unwrap();
        assert_eq!(
            (
                snap.counts.completed,
                snap.counts.queued,
                snap.counts.pending,
                snap.total
            ),
            (fan_in, 1, 0, fan_in + 1)
        );
        let jobs = store.search_jobs(&JobFilter::default()).await.unwrap().jobs;
        assert_eq!(jobs.len() as i64, fan_in + 1);
    });
}
