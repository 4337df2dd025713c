//! Concurrency promises across real OS processes sharing one PostgreSQL
//! schema: eight processes replacing one schedule key leave exactly one queued
//! owner; eight idempotent first enqueues of one scope make one job; a worker
//! SIGKILLed mid-job loses no job; four worker processes draining 10,000 jobs run
//! each exactly once (counted per id from what every handler saw) and lose none.
//!
//! The helper processes are this test binary itself, re-run with
//! `DURAQ_PG_CHILD=<action>`: each opens the store (so schema creation races too),
//! prints `ready`, blocks until the parent writes a line to every helper's stdin
//! (a start barrier, no sleeps), acts, and prints one JSON line.

mod postgres {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
    use std::sync::Arc;

    use duraq_core::driver::ClaimRequest;
    use duraq_core::inspect::JobFilter;
    use duraq_core::prelude::*;
    use duraq_core::{
        Clock, EnqueueOptions, JobStatus, ManualClock, NewJob, Registry, ScheduleKey, SystemClock,
        Worker,
    };
    use duraq_store_postgres::{PostgresOptions, PostgresStore};
    use serde_json::{json, Value};

    const PROCESSES: usize = 8;
    const TEST_NAME: &str = "postgres::multiprocess_promises";

    fn url() -> String {
        std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()).expect(
            "DATABASE_URL is not set: run `cargo xtask test-all`, or `cargo xtask pg` and export its URL",
        )
    }

    fn options(schema: &str) -> PostgresOptions {
        PostgresOptions {
            schema: Some(schema.to_owned()),
            pool_size: 2,
            ..PostgresOptions::default()
        }
    }

    /// Marks helper lines: the test harness prints on the same stdout.
    const MARK: &str = "@@duraq@@";

    fn say(line: &str) {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{MARK}{line}")
            .and_then(|_| out.flush())
            .expect("stdout");
    }

    /// The helper side: one action, one JSON line.
    async fn child(action: &str, schema: &str) {
        let store = PostgresStore::connect(&url(), options(schema))
            .await
            .expect("helper opens the store");
        say("ready");
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .expect("barrier");
        let result = match action {
            "replace" => {
                let key = ScheduleKey::new("event:42:reminder").unwrap();
                let job = NewJob::new("remind", json!([std::process::id()]), EnqueueOptions::new())
                    .unwrap();
                let out = store
                    .replace_scheduled(&key, job, duraq_core::RunningOwner::KeepRunning)
                    .await
                    .expect("replace");
                json!({"jobId": out.job_id})
            }
            "idem" => {
                let job = NewJob::new(
                    "once",
                    json!([1]),
                    EnqueueOptions::new().idempotency_key("scope"),
                )
                .unwrap();
                json!({"jobId": store.enqueue(job).await.expect("enqueue").job_id()})
            }
            "claim-and-hang" => {
                let req = ClaimRequest {
                    worker_id: format!("victim-{}", std::process::id()),
                    job_names: vec!["victim-job".into()],
                    limit: 1,
                    ..ClaimRequest::default()
                };
                let claimed = store.claim(&req).await.expect("claim");
                say(&json!({"jobId": claimed.first().map(|j| j.id.clone())}).to_string());
                // Blocks until the parent SIGKILLs us mid-job.
                std::io::stdin().lock().read_line(&mut line).expect("hang");
                json!(null)
            }
            "drain" => {
                let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
                let record = seen.clone();
                let registry = Registry::new()
                    .register_fn("drain-job", move |ctx, _args| {
                        let record = record.clone();
                        async move {
                            record.lock().unwrap().push(ctx.job_id().to_owned());
                            Ok(())
                        }
                    })
                    .unwrap();
                let store: Arc<dyn Store> = Arc::new(store);
                let worker = Worker::builder(store, registry)
                    .concurrency(64)
                    .build()
                    .unwrap();
                // Runs until the parent writes a second line (it saw every job completed).
                let stop = tokio::task::spawn_blocking(|| {
                    let mut line = String::new();
                    let _ = std::io::stdin().lock().read_line(&mut line);
                });
                worker
                    .run(async move {
                        let _ = stop.await;
                    })
                    .await
                    .expect("worker");
                let seen = seen.lock().unwrap().clone();
                json!({"ran": seen})
            }
            other => panic!("unknown helper action {other}"),
        };
        say(&result.to_string());
    }

    struct Proc {
        child: Child,
        stdin: ChildStdin,
        stdout: BufReader<ChildStdout>,
    }

    impl Proc {
        fn spawn(action: &str, schema: &str) -> Self {
            let mut child = Command::new(std::env::current_exe().expect("test binary"))
                .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
                .env("DURAQ_PG_CHILD", action)
                .env("DURAQ_PG_SCHEMA", schema)
                .env("DATABASE_URL", url())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn helper");
            let stdin = child.stdin.take().unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            Self {
                child,
                stdin,
                stdout,
            }
        }

        /// The next line that is ours (the test harness prints its own lines too).
        fn line(&mut self) -> String {
            loop {
                let mut line = String::new();
                let n = self.stdout.read_line(&mut line).expect("helper stdout");
                assert!(n > 0, "helper exited early");
                if let Some(at) = line.find(MARK) {
                    return line[at + MARK.len()..].trim_end().to_owned();
                }
            }
        }

        fn go(&mut self) {
            writeln!(self.stdin, "go")
                .and_then(|_| self.stdin.flush())
                .expect("release helper");
        }

        fn json(&mut self) -> Value {
            serde_json::from_str(&self.line()).expect("helper JSON")
        }
    }

    fn run_all(action: &str, schema: &str) -> Vec<Value> {
        let mut procs: Vec<Proc> = (0..PROCESSES)
            .map(|_| Proc::spawn(action, schema))
            .collect();
        for p in &mut procs {
            assert_eq!(p.line(), "ready");
        }
        procs.iter_mut().for_each(Proc::go);
        procs
            .into_iter()
            .map(|mut p| {
                let value = p.json();
                assert!(p.child.wait().expect("wait helper").success());
                value
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn multiprocess_promises() {
        if let Ok(action) = std::env::var("DURAQ_PG_CHILD") {
            return child(&action, &std::env::var("DURAQ_PG_SCHEMA").expect("schema")).await;
        }
        let schema = format!("duraq_mp_{}_{}", std::process::id(), SystemClock.now_ms());
        let results = tokio::task::block_in_place(|| run_all("replace", &schema));
        let store = PostgresStore::connect(&url(), options(&schema))
            .await
            .unwrap();
        let jobs = store.search_jobs(&JobFilter::default()).await.unwrap().jobs;
        assert_eq!(jobs.len(), PROCESSES);
        assert_eq!(
            jobs.iter()
                .filter(|j| j.status == JobStatus::Queued)
                .count(),
            1,
            "one owner"
        );
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
            .expect("owner");
        assert!(results.iter().any(|r| r["jobId"] == owner.id.as_str()));

        let results = tokio::task::block_in_place(|| run_all("idem", &schema));
        let ids: std::collections::BTreeSet<String> = results
            .iter()
            .map(|r| r["jobId"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ids.len(), 1, "one job per idempotency scope: {ids:?}");

        let victim = store
            .enqueue(NewJob::new("victim-job", json!([]), EnqueueOptions::new()).unwrap())
            .await;
        let victim = victim.unwrap().job_id().to_owned();
        let mut worker = Proc::spawn("claim-and-hang", &schema);
        tokio::task::block_in_place(|| {
            assert_eq!(worker.line(), "ready");
            worker.go();
            assert_eq!(worker.json()["jobId"], victim.as_str());
            worker.child.kill().expect("SIGKILL");
            worker.child.wait().expect("reap");
        });
        let later = ManualClock::new(SystemClock.now_ms() + 120_000);
        let recovering =
            PostgresStore::connect_with_clock(&url(), options(&schema), Arc::new(later))
                .await
                .unwrap();
        assert_eq!(
            recovering.recover_stale(60_000).await.unwrap(),
            [victim.as_str()]
        );
        let job = recovering.get_job(&victim).await.unwrap().unwrap();
        assert_eq!(
            (job.status, job.attempts),
            (JobStatus::Queued, 1),
            "the job survived its worker"
        );

        drain_with_four_workers(&schema).await;
    }

    /// Four worker processes drain 10,000 jobs: each ran exactly once, none lost.
    async fn drain_with_four_workers(schema: &str) {
        const JOBS: usize = 10_000;
        let store = PostgresStore::connect(&url(), options(schema))
            .await
            .unwrap();
        let mut ids = Vec::with_capacity(JOBS);
        for chunk in 0..JOBS / 1_000 {
            let batch: Vec<NewJob> = (0..1_000)
                .map(|i| {
                    NewJob::new(
                        "drain-job",
                        json!([chunk * 1_000 + i]),
                        EnqueueOptions::new(),
                    )
                    .unwrap()
                })
                .collect();
            let out = store.enqueue_batch(batch).await.unwrap();
            ids.extend(out.into_iter().map(|o| o.job_id().to_owned()));
        }
        let mut workers: Vec<Proc> = (0..4).map(|_| Proc::spawn("drain", schema)).collect();
        tokio::task::block_in_place(|| {
            for w in &mut workers {
                assert_eq!(w.line(), "ready");
            }
            workers.iter_mut().for_each(Proc::go);
        });
        // Poll the snapshot (bounded) until every job is completed.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
        loop {
            let snap = store.count_snapshot().await.unwrap();
            if snap.counts.completed == JOBS as i64 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "drain stalled: {snap:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let ran: Vec<Value> = tokio::task::block_in_place(|| {
            workers.iter_mut().for_each(Proc::go);
            workers
                .into_iter()
                .map(|mut w| {
                    let value = w.json();
                    assert!(w.child.wait().expect("wait worker").success());
                    value
                })
                .collect()
        });
        let mut per_id: std::collections::HashMap<String, usize> = Default::default();
        for report in &ran {
            for id in report["ran"].as_array().expect("ran list") {
                *per_id.entry(id.as_str().unwrap().to_owned()).or_default() += 1;
            }
        }
        assert_eq!(per_id.len(), JOBS, "every job ran");
        assert!(per_id.values().all(|n| *n == 1), "a job ran twice");
        assert!(
            ids.iter().all(|id| per_id.contains_key(id)),
            "a job was lost"
        );
        assert!(
            ran.iter()
                .filter(|r| !r["ran"].as_array().unwrap().is_empty())
                .count()
                >= 2,
            "the work was shared between processes"
        );
        let jobs = store
            .search_jobs(&JobFilter {
                job_name: Some("drain-job".into()),
                ..JobFilter::default()
            })
            .await
            .unwrap()
            .jobs;
        assert_eq!(jobs.len(), JOBS);
        assert!(jobs
            .iter()
            .all(|j| j.status == JobStatus::Completed && j.attempts == 1));
    }
}
