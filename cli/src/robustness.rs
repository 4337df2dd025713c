//! No input makes the program panic (`SECURITY.md`): random values through every
//! parser of the command line and every display path of a stored job.
//!
//! The parsers are driven through clap itself (`Cli::try_parse_from`), so a
//! value takes the same road as one typed by a user: clap, then
//! [`crate::parse`], then core's validation. The display paths get jobs (and
//! workers, and unhandled-job warnings) whose every field is arbitrary, as an
//! old or hostile database may hold them.

use clap::Parser;
use duraq_core::{AttemptError, Job, JobStatus, NewJob};
use proptest::prelude::*;
use serde_json::Value;

use crate::args::{Cli, Command};
use crate::display::utc;
use crate::job_view::{job_detail, jobs_table};

/// Printable text plus the characters attackers and typos bring.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9a-z:+\\-. TZ]{0,40}",
        "[0-9]{1,25}[a-z]{0,6}",
        Just("\u{1b}[2J".to_string()),
        Just("9223372036854775s".to_string()),
        Just("10001y".to_string()),
    ]
}

fn opt_ms() -> impl Strategy<Value = Option<i64>> {
    proptest::option::of(any::<i64>())
}

fn job() -> impl Strategy<Value = Job> {
    let strings = (text(), text(), text(), proptest::option::of(text()));
    let numbers = (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>());
    let times = (opt_ms(), opt_ms(), opt_ms(), opt_ms(), opt_ms(), opt_ms());
    let keys = (
        proptest::option::of(text()),
        proptest::option::of(text()),
        proptest::option::of(text()),
    );
    let errors = proptest::collection::vec(
        (
            any::<i64>(),
            any::<i64>(),
            text(),
            proptest::option::of(text()),
        ),
        0..3,
    );
    (
        strings,
        numbers,
        times,
        keys,
        0..JobStatus::ALL.len(),
        errors,
    )
        .prop_map(
            |(
                (id, name, queue, last_error),
                (a, m, s, c),
                (h, done, f, x, o, t),
                (sk, ck, ik),
                st,
                errors,
            )| {
                let output = last_error_output(&sk);
                let (workflow_id, step, workflow_name) = (ik.clone(), ck.clone(), sk.clone());
                let sequence_key = ck.clone();
                let fairness_key = ik.clone();
                let awaiting_signal = ck.clone();
                let parent_id = sk.clone();
                Job {
                    id,
                    job_name: name.clone(),
                    args: Value::String(name),
                    queue,
                    status: JobStatus::ALL[st],
                    attempts: a,
                    max_retries: m,
                    scheduled_at_ms: s,
                    created_at_ms: c,
                    handed_off_at_ms: h,
                    completed_at_ms: done,
                    failed_at_ms: f,
                    cancelled_at_ms: x,
                    orphaned_at_ms: o,
                    last_error,
                    errors: errors
                        .into_iter()
                        .map(|(attempt, at_ms, error, worker_id)| AttemptError {
                            attempt,
                            at_ms,
                            error,
                            worker_id,
                        })
                        .collect(),
                    worker_id: sk.clone(),
                    handoff_id: ck.clone(),
                    schedule_key: sk,
                    schedule_order: t,
                    concurrency_key: ck,
                    max_concurrency: t,
                    idempotency_key: ik.clone(),
                    timeout_ms: h,
                    priority: a,
                    rate_key: ik,
                    rate_max: t,
                    rate_period_ms: t,
                    trace_parent: None,
                    depends_on: Vec::new(),
                    open_dependencies: a,
                    output,
                    workflow_id,
                    step,
                    workflow_name,
                    expires_at_ms: t,
                    cancel_reason: x.map(|_| duraq_core::CancelReason::Expired),
                    cost: a,
                    keep_completed: st % 2 == 0,
                    aged_steps: a,
                    sequence_key,
                    sequence_continues: st % 3 == 0,
                    fairness_key,
                    awaiting_signal,
                    parent_id,
                }
            },
        )
}

/// An output that holds whatever text the generator drew (control
/// characters included), or none.
fn last_error_output(text: &Option<String>) -> Option<Value> {
    text.as_ref().map(|t| serde_json::json!({ "text": t }))
}

/// Runs the semantic parsing of an `enqueue` command line, as `enqueue::run`
/// does before it opens a store.
fn parse_enqueue(argv: &[String]) {
    let Ok(cli) = Cli::try_parse_from(argv) else {
        return; // clap's own usage error: exit 2, no panic
    };
    let _ = crate::db::Database::parse(&cli.database, cli.schema.as_deref());
    if let Command::Enqueue(a) = cli.command {
        if let Ok((args, opts)) = crate::options::job_options(&a.job) {
            let _ = NewJob::new(&a.name, args, opts);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn enqueue_flags_never_panic(
        flag in prop_oneof![
            Just("--run-in"), Just("--run-at"), Just("--timeout"), Just("--args"),
            Just("--queue"), Just("--max-retries"), Just("--concurrency-key"),
        ],
        value in text(),
        database in text(),
    ) {
        let argv: Vec<String> = ["duraq", "--database", &database, "enqueue", "duraq.noop", flag, &value]
            .iter().map(|s| s.to_string()).collect();
        parse_enqueue(&argv);
        let with_cap: Vec<String> = ["duraq", "enqueue", "n", "--concurrency-key", &value, "--max-concurrency", "2"]
            .iter().map(|s| s.to_string()).collect();
        parse_enqueue(&with_cap);
    }

    #[test]
    fn parsers_never_panic(value in text()) {
        let _ = crate::parse::duration_ms("--x", &value);
        let _ = duraq_web::job_options::values::delay_ms("--x", &value);
        let _ = crate::parse::rfc3339_ms("--x", &value);
        let _ = crate::parse::json_args(Some(&value));
        let _ = crate::db::Database::parse(&value, None);
        let _ = crate::db::Database::parse("postgres://h/db", Some(&value));
        let _ = crate::db::password(&value);
        let _ = duraq_core::QueueName::new(&value);
        let _ = duraq_core::ScheduleKey::new(value.clone());
        let _ = duraq_core::IdempotencyKey::new(value.clone());
    }

    #[test]
    fn any_job_displays_without_panic_or_raw_control_characters(job in job(), now in any::<i64>()) {
        for shown in [jobs_table(std::slice::from_ref(&job), now), job_detail(&job, now)] {
            prop_assert!(
                !shown.chars().any(|c| c.is_control() && c != '\n'),
                "{shown:?}"
            );
        }
        let _ = utc(job.scheduled_at_ms);
        let _ = serde_json::to_string(&job);
    }

    #[test]
    fn any_worker_and_unhandled_group_displays_without_raw_control_characters(
        (id, host, queue, name) in (text(), text(), text(), text()),
        (pid, slots, due) in (any::<u32>(), any::<u64>(), any::<u64>()),
        (started, beat, now, stale) in (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>()),
        every_queue in any::<bool>(),
    ) {
        let info = duraq_core::driver::WorkerInfo {
            worker_id: id.clone(),
            host,
            pid,
            queues: (!every_queue).then(|| vec![queue.clone()]),
            job_names: vec![name.clone()],
            slots,
        };
        let running = vec![duraq_core::inspect::RunningJob { id, job_name: name.clone() }];
        let record = duraq_core::inspect::WorkerRecord::new(info, started, beat, now, stale, running);
        let group = duraq_core::inspect::DueJobGroup {
            queue,
            job_name: name,
            due,
            oldest_scheduled_at_ms: started,
        };
        let shown = [
            crate::workers::render(std::slice::from_ref(&record), true, now),
            crate::queues::warnings(std::slice::from_ref(&group)),
        ];
        for shown in shown {
            prop_assert!(!shown.chars().any(|c| c.is_control() && c != '\n'), "{shown:?}");
        }
    }
}
