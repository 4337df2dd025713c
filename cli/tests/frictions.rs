//! What a new user ran into ("found when tried as a new user
//! would"), each through the real `duraq` binary on a real SQLite file,
//! judged by exit codes, error codes and JSON answers: an empty queue name
//! that paused `default`, queue names `--queues a,b` cannot express, `--rate
//! 100/s`, a message that named two flags for one mistake, `running` and
//! `handed_off` as one status, and `jobs prune --dry-run`.

mod common;

use std::time::Duration;

use common::{parse_one, signal, wait_exit, wait_for, Db};
use serde_json::Value;

const LONG: Duration = Duration::from_secs(60);

/// A database with one job in `default` and one in `mail`.
fn seeded() -> Db {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    db.enqueue(&["duraq.noop", "--queue", "mail"]);
    db
}

/// The `paused` flag of every queue `duraq queues` lists.
fn paused(db: &Db) -> Vec<(String, bool)> {
    db.json(&["queues"])["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["queue"].as_str().unwrap().to_owned(),
                q["paused"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// The error object of a command that must fail with exit 1 (`--json` form).
fn error_of(db: &Db, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = db.run(&all);
    assert_eq!(out.status.code(), Some(1), "duraq {args:?}: {out:?}");
    parse_one(&out.stderr)["error"].clone()
}

#[test]
fn an_empty_queue_name_given_explicitly_is_invalid_queue() {
    let db = seeded();
    let before = paused(&db);
    for blank in ["", "  "] {
        db.fails(&["queues", "pause", blank], "invalid-queue");
        db.fails(&["queues", "resume", blank], "invalid-queue");
        db.fails(
            &["enqueue", "duraq.noop", "--queue", blank],
            "invalid-queue",
        );
        db.fails(
            &["schedule", "replace", "k", "duraq.noop", "--queue", blank],
            "invalid-queue",
        );
        db.fails(&["jobs", "list", "--queue", blank], "invalid-queue");
        db.fails(&["worker", "--queues", blank], "invalid-queue");
    }
    for list in ["mail,", ",mail", "mail,,default"] {
        db.fails(&["worker", "--queues", list], "invalid-queue");
    }
    assert_eq!(paused(&db), before, "no queue was paused");
    assert!(before.iter().all(|(_, p)| !p), "{before:?}");
    // `default` is paused only when named.
    let named = db.json(&["queues", "pause", "default"]);
    assert_eq!(
        (&named["queue"], &named["changed"]),
        (&"default".into(), &true.into())
    );
    let jobs = db.json(&["jobs", "list", "--queue", " default "]);
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 1, "{jobs}");
}

#[test]
fn queue_names_with_a_comma_are_refused_everywhere() {
    let db = seeded();
    let before = paused(&db);
    for name in ["a,b", "mail,", " ,"] {
        db.fails(&["enqueue", "duraq.noop", "--queue", name], "invalid-queue");
        db.fails(
            &["schedule", "replace", "k", "duraq.noop", "--queue", name],
            "invalid-queue",
        );
        db.fails(&["queues", "pause", name], "invalid-queue");
        db.fails(&["queues", "resume", name], "invalid-queue");
        db.fails(&["jobs", "list", "--queue", name], "invalid-queue");
    }
    // A cap names a queue too (`--queue-cap` is not a list, the rule holds).
    db.fails(&["worker", "--queue-cap", "a,b=1"], "invalid-queue");
    assert_eq!(paused(&db), before);
    // Names that `--queues` can list are fine.
    db.enqueue(&["duraq.noop", "--queue", "mail:eu/1 b"]);
}

#[test]
fn a_rate_period_may_be_a_bare_unit() {
    let db = Db::new();
    for (i, (rate, max, period_ms)) in [
        ("100/s", 100, 1_000),
        ("100/1s", 100, 1_000),
        ("5/m", 5, 60_000),
        ("5 / min", 5, 60_000),
        ("1/h", 1, 3_600_000),
        ("2/d", 2, 86_400_000),
        ("7/10m", 7, 600_000),
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("key-{i}");
        let id = db.enqueue(&["duraq.noop", "--rate-key", &key, "--rate", rate]);
        let job = db.job(&id);
        assert_eq!(job["rateMax"], max, "{rate}: {job}");
        assert_eq!(job["ratePeriodMs"], period_ms, "{rate}: {job}");
    }
    for bad in ["100/soon", "100/", "100", "x/s", "0/s", "5/0s"] {
        db.fails(
            &["enqueue", "duraq.noop", "--rate-key", "k", "--rate", bad],
            "invalid-rate-limit",
        );
    }
}

/// The flags (`--name`) a message mentions, in order.
fn flags_in(message: &str) -> Vec<String> {
    let mut flags = Vec::new();
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        let flag: String = rest[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        if !flag.is_empty() {
            flags.push(format!("--{flag}"));
        }
        rest = &rest[at + 2 + flag.len()..];
    }
    flags
}

#[test]
fn a_validation_message_names_only_the_flag_that_is_wrong() {
    let db = seeded();
    let cases: [(&[&str], &str, &str); 6] = [
        (
            &["worker", "--concurrency", "0"],
            "invalid-worker-config",
            "--concurrency",
        ),
        (
            &["worker", "--concurrency", "999999999999"],
            "invalid-worker-config",
            "--concurrency",
        ),
        (
            &["worker", "--stale-after", "0s"],
            "invalid-worker-config",
            "--stale-after",
        ),
        (
            &["worker", "--prefetch", "10001"],
            "invalid-worker-config",
            "--prefetch",
        ),
        (
            &[
                "enqueue",
                "duraq.noop",
                "--concurrency-key",
                "k",
                "--max-concurrency",
                "0",
            ],
            "invalid-concurrency",
            "--max-concurrency",
        ),
        (
            &["enqueue", "duraq.noop", "--rate-key", "k", "--rate", "0/s"],
            "invalid-rate-limit",
            "--rate",
        ),
    ];
    for (args, code, flag) in cases {
        db.fails(args, code);
        let err = error_of(&db, args);
        assert_eq!(err["code"], code, "{args:?}: {err}");
        let message = err["message"].as_str().unwrap();
        assert_eq!(flags_in(message), [flag], "{args:?}: {message}");
    }
}

#[test]
fn running_and_handed_off_are_one_status() {
    let db = Db::new();
    let id = db.enqueue(&["duraq.sleep", "--args", r#"{"ms":600000}"#]);
    let queued = db.enqueue(&["duraq.noop", "--run-in", "1h"]);
    let mut worker = db.spawn_worker(&["--concurrency", "1"]);
    db.wait_job(&id, LONG, |j| j["status"] == "handed_off");
    let ids = |status: &str| -> Vec<String> {
        db.json(&["jobs", "list", "--status", status])["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids("running"), std::slice::from_ref(&id));
    assert_eq!(ids("handed_off"), std::slice::from_ref(&id));
    assert_eq!(ids("queued"), std::slice::from_ref(&queued));
    // JSON keeps `handed_off`.
    let listed = db.json(&["jobs", "list", "--status", "running"]);
    assert_eq!(listed["jobs"][0]["status"], "handed_off", "{listed}");
    assert_eq!(listed["total"], 1, "{listed}");
    // Tables say `running`: the STATUS column, and the counts header.
    let table = db.run(&["jobs", "list", "--status", "running"]);
    assert!(table.status.success(), "{table:?}");
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    let status_column = |line: &str| line.split_whitespace().nth(3).map(str::to_owned);
    let row = table
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{table}"));
    assert_eq!(status_column(row).as_deref(), Some("running"), "{table}");
    let counts = db.run(&["counts"]);
    let counts = String::from_utf8_lossy(&counts.stdout).into_owned();
    let header: Vec<&str> = counts.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header[1], "running", "{counts}");
    assert!(!counts.contains("handed_off"), "{counts}");
    for bogus in ["bogus", "Running", "handed-off", ""] {
        db.fails(&["jobs", "list", "--status", bogus], "invalid-status");
    }
    signal(&worker, libc::SIGKILL);
    wait_exit(&mut worker, LONG);
}

#[test]
fn prune_dry_run_counts_and_deletes_nothing() {
    let db = Db::new();
    db.enqueue(&["duraq.noop"]);
    for key in ["a", "b"] {
        db.json(&["schedule", "replace", key, "duraq.noop", "--run-in", "1h"]);
        let cancelled = db.json(&["schedule", "cancel", key]);
        assert_eq!(cancelled["outcome"], "cancelled", "{cancelled}");
    }
    let before = db.counts();
    assert_eq!(before["counts"]["cancelled"], 2, "{before}");
    let dry = |args: &[&str]| {
        let mut all = vec!["jobs", "prune", "--dry-run"];
        all.extend_from_slice(args);
        db.json(&all)
    };
    // Cancelled before "now" by the clock: wait until the store's ms moved on.
    let answer = wait_for(Duration::from_secs(10), "the cancels to age", || {
        let a = dry(&["--cancelled-older-than", "0s"]);
        (a["wouldDelete"] == 2).then_some(a)
    });
    assert_eq!(answer["dryRun"], true, "{answer}");
    assert_eq!(dry(&["--cancelled-older-than", "1d"])["wouldDelete"], 0);
    assert_eq!(dry(&["--completed-older-than", "0s"])["wouldDelete"], 0);
    let text = db.run(&["jobs", "prune", "--dry-run", "--cancelled-older-than", "0s"]);
    assert_eq!(text.status.code(), Some(0), "{text:?}");
    assert_eq!(
        db.counts(),
        before,
        "a dry run changes nothing, not even the revision"
    );
    // Without an age it is a usage error, as without --dry-run.
    assert_eq!(
        db.run(&["jobs", "prune", "--dry-run"]).status.code(),
        Some(2)
    );
    // The real prune deletes what the dry run counted.
    let done = db.json(&["jobs", "prune", "--cancelled-older-than", "0s"]);
    assert_eq!(done["deleted"], 2, "{done}");
    assert_eq!(db.counts()["total"], 1);
}

#[test]
fn pausing_a_queue_nobody_used_says_so() {
    let db = seeded();
    let typo = db.run(&["queues", "pause", "defualt", "--json"]);
    assert_eq!(typo.status.code(), Some(0), "{typo:?}");
    let answer = parse_one(&typo.stdout);
    assert_eq!(
        (&answer["paused"], &answer["known"]),
        (&true.into(), &false.into())
    );
    assert!(
        String::from_utf8_lossy(&typo.stderr).contains("defualt"),
        "the warning names the queue: {typo:?}"
    );
    // Now it is known (paused), and a queue holding jobs always was.
    assert_eq!(db.json(&["queues", "resume", "defualt"])["known"], true);
    let known = db.run(&["queues", "pause", "default", "--json"]);
    assert_eq!(parse_one(&known.stdout)["known"], true);
    assert!(known.stderr.is_empty(), "{known:?}");
}
