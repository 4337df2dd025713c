//! `docs/workflows.md` from the command line: `enqueue --after`, the pending
//! count, `jobs show` of a dependent, `duraq.echo`'s output, `workflows
//! enqueue` and `workflows append` with their refusals (each writing nothing)
//! and their keyed replays, run by a real `duraq worker` process on a real
//! SQLite file.

mod common;

use std::time::Duration;

use common::{signal, wait_exit, Db};

const LONG: Duration = Duration::from_secs(30);

#[test]
fn a_dependent_waits_then_reads_as_done_and_bad_edges_write_nothing() {
    let db = Db::new();
    let first = db.enqueue(&["duraq.echo", "--args", r#"{"rows":3}"#]);
    let second = db.enqueue(&[
        "duraq.echo",
        "--after",
        &first,
        "--on-dependency-failure",
        "run",
    ]);
    let job = db.job(&second);
    assert_eq!(job["status"], "pending");
    assert_eq!(job["openDependencies"], 1);
    assert_eq!(job["dependsOn"][0]["jobId"], first.as_str());
    assert_eq!(job["dependsOn"][0]["onFailure"], "run");
    assert_eq!(db.counts()["counts"]["pending"], 1);
    let human = String::from_utf8(db.run(&["jobs", "show", &second]).stdout).unwrap();
    assert!(human.contains(&format!("{first} (run)")), "{human}");

    db.fails(
        &[
            "enqueue",
            "x",
            "--after",
            "0190a0b0-0000-7000-8000-000000000000",
        ],
        "dependency-not-found",
    );
    db.fails(
        &[
            "enqueue",
            "x",
            "--after",
            &first,
            "--on-dependency-failure",
            "skip",
        ],
        "invalid-dependency-policy",
    );

    let mut worker = db.spawn_worker(&[]);
    db.wait_job(&second, LONG, |j| j["status"] == "completed");
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, LONG).success());
    assert_eq!(db.job(&first)["output"], serde_json::json!({"rows": 3}));
    assert_eq!(db.counts()["counts"]["pending"], 0);
}

#[test]
fn a_workflow_file_is_inserted_whole_or_not_at_all() {
    let db = Db::new();
    db.json(&["migrate"]);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let good = write(
        "onboard.json",
        r#"{"name": "onboard", "idempotencyKey": "user-7", "steps": [
            {"step": "summary", "job": "duraq.echo", "after": ["welcome", "storage"], "args": ["summary"]},
            {"step": "signup", "job": "duraq.echo", "args": {"user": 7}},
            {"step": "welcome", "job": "duraq.echo", "after": ["signup"], "queue": "mail"},
            {"step": "storage", "job": "duraq.echo", "after": ["signup"]}
        ]}"#,
    );
    for (file, code) in [
        (
            r#"{"name": "w", "steps": [{"step": "a", "job": "j", "after": ["b"]}, {"step": "b", "job": "j", "after": ["a"]}]}"#,
            "workflow-cycle",
        ),
        (
            r#"{"name": "w", "steps": [{"step": "a", "job": "j"}, {"step": "a", "job": "j"}]}"#,
            "duplicate-step",
        ),
        (
            r#"{"name": "w", "steps": [{"step": "a", "job": "j", "after": ["ghost"]}]}"#,
            "dependency-not-found",
        ),
        (r#"{"name": "w", "steps": []}"#, "invalid-workflow"),
        (
            r#"{"name": "w", "steps": [{"step": "a"}]}"#,
            "invalid-workflow-file",
        ),
    ] {
        db.fails(&["workflows", "enqueue", &write("bad.json", file)], code);
    }

    let first = db.json(&["workflows", "enqueue", &good]);
    assert_eq!(first["replayed"], false);
    let jobs = &first["jobs"];
    assert_eq!(db.status(jobs["signup"].as_str().unwrap()), "queued");
    assert_eq!(db.status(jobs["summary"].as_str().unwrap()), "pending");
    assert_eq!(db.job(jobs["welcome"].as_str().unwrap())["queue"], "mail");
    let again = db.json(&["workflows", "enqueue", &good]);
    assert_eq!(
        (&again["jobs"], &again["workflowId"]),
        (jobs, &first["workflowId"])
    );
    assert_eq!(again["replayed"], true);
    assert_eq!(db.counts()["total"], 4, "a replay adds nothing");

    let mut worker = db.spawn_worker(&["--queues", "default,mail"]);
    let summary = jobs["summary"].as_str().unwrap();
    let done = db.wait_job(summary, LONG, |j| j["status"] == "completed");
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, LONG).success());
    assert_eq!(done["output"], serde_json::json!(["summary"]));
    let id = first["workflowId"].as_str().unwrap();
    let shown = db.json(&["workflows", "show", id]);
    assert_eq!(
        (shown["total"].clone(), shown["counts"]["completed"].clone()),
        (4.into(), 4.into())
    );
    let summary_step = shown["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "summary")
        .unwrap();
    assert_eq!(
        summary_step["dependsOn"],
        serde_json::json!(["welcome", "storage"])
    );
    assert_eq!(summary_step["outputBytes"], 11);
    let human = String::from_utf8(db.run(&["workflows", "show", id]).stdout).unwrap();
    assert!(human.contains("welcome, storage"), "{human}");
    db.fails(
        &["workflows", "show", "no-such-workflow"],
        "workflow-not-found",
    );
}

#[test]
fn a_workflow_is_retried_and_cancelled_as_a_whole() {
    let db = Db::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flow.json");
    // A request to a closed port fails at once, without retries.
    std::fs::write(
        &file,
        r#"{"name": "nightly", "steps": [
            {"step": "export", "job": "duraq.http", "maxRetries": 0,
             "args": {"url": "http://127.0.0.1:1/closed"}},
            {"step": "report", "job": "duraq.echo", "after": ["export"]}
        ]}"#,
    )
    .unwrap();
    let flow = db.json(&["workflows", "enqueue", file.to_str().unwrap()]);
    let (id, export, report) = (
        flow["workflowId"].as_str().unwrap(),
        flow["jobs"]["export"].as_str().unwrap(),
        flow["jobs"]["report"].as_str().unwrap(),
    );
    let mut worker = db.spawn_worker(&[]);
    db.wait_job(report, LONG, |j| j["status"] == "cancelled");
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, LONG).success());
    assert_eq!(db.status(export), "failed");

    let retried = db.json(&["workflows", "retry", id]);
    assert_eq!(
        (retried["action"].clone(), retried["changed"].clone()),
        ("retry".into(), 1.into())
    );
    assert_eq!(db.status(export), "queued");
    assert_eq!(
        db.status(report),
        "pending",
        "its dependency's retry gave it back"
    );

    let cancelled = db.json(&["workflows", "cancel", id]);
    assert_eq!(cancelled["action"], "cancel");
    assert_eq!(
        (db.status(export), db.status(report)),
        ("cancelled".into(), "cancelled".into())
    );
    let shown = db.json(&["workflows", "show", id]);
    assert_eq!(shown["counts"]["cancelled"], 2);
}

#[test]
fn workflows_are_listed_in_pages_with_their_state() {
    let db = Db::new();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("flow.json");
    std::fs::write(
        &file,
        r#"{"name": "nightly", "steps": [
            {"step": "export", "job": "duraq.echo"},
            {"step": "report", "job": "duraq.echo", "after": ["export"]}
        ]}"#,
    )
    .unwrap();
    let mut ids: Vec<String> = (0..3)
        .map(|_| {
            let flow = db.json(&["workflows", "enqueue", file.to_str().unwrap()]);
            flow["workflowId"].as_str().unwrap().to_owned()
        })
        .collect();
    ids.sort_by(|a, b| b.cmp(a));
    db.enqueue(&["duraq.noop"]);

    let all = db.json(&["workflows", "list"]);
    let listed: Vec<&str> = (all["workflows"].as_array().unwrap().iter())
        .map(|w| w["workflowId"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed, ids,
        "largest id first, the plain job not among them"
    );
    assert_eq!(all["next"], serde_json::Value::Null);
    let first = &all["workflows"][0];
    assert_eq!(
        (&first["state"], &first["steps"]),
        (&"active".into(), &2.into())
    );
    assert_eq!(
        (&first["counts"]["queued"], &first["counts"]["pending"]),
        (&1.into(), &1.into())
    );

    let page = db.json(&["workflows", "list", "--limit", "2"]);
    assert_eq!(page["workflows"].as_array().unwrap().len(), 2);
    assert_eq!(page["next"], ids[1].as_str());
    let rest = db.json(&["workflows", "list", "--limit", "2", "--before", &ids[1]]);
    assert_eq!(rest["workflows"][0]["workflowId"], ids[2].as_str());
    assert_eq!(rest["next"], serde_json::Value::Null);

    let mut worker = db.spawn_worker(&[]);
    for id in &ids {
        let shown = db.json(&["workflows", "show", id]);
        let report = (shown["steps"].as_array().unwrap().iter())
            .find(|s| s["step"] == "report")
            .and_then(|s| s["jobId"].as_str())
            .unwrap()
            .to_owned();
        db.wait_job(&report, LONG, |j| j["status"] == "completed");
    }
    signal(&worker, libc::SIGTERM);
    assert!(wait_exit(&mut worker, LONG).success());
    let done = db.json(&["workflows", "list"]);
    assert!((done["workflows"].as_array().unwrap().iter())
        .all(|w| w["state"] == "completed" && w["counts"]["completed"] == 2));
    let human = String::from_utf8(db.run(&["workflows", "list"]).stdout).unwrap();
    assert!(human.starts_with("WORKFLOW"), "{human}");
    assert!(human.contains("completed 2"), "{human}");

    db.fails(&["workflows", "list", "--limit", "0"], "invalid-limit");
}

#[test]
fn steps_are_appended_to_a_workflow_whole_or_not_at_all() {
    let db = Db::new();
    let write = |name: &str, text: &str| {
        let path = db.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let flow = r#"{"name": "nightly", "steps": [{"step": "export", "job": "duraq.echo"}]}"#;
    let flow = db.json(&["workflows", "enqueue", &write("flow.json", flow)]);
    let id = flow["workflowId"].as_str().unwrap();
    let more = write(
        "more.json",
        r#"{"idempotencyKey": "add-report", "steps": [
            {"step": "mail", "job": "duraq.echo", "after": ["report"], "queue": "mail"},
            {"step": "report", "job": "duraq.echo", "after": ["export"], "args": ["r"]}
        ]}"#,
    );
    Db::new().fails(&["workflows", "append", id, &more], "database-not-found");
    for (file, code) in [
        (
            r#"{"steps": [{"step": "export", "job": "j"}]}"#,
            "duplicate-step",
        ),
        (
            r#"{"steps": [{"step": "a", "job": "j"}, {"step": "a", "job": "j"}]}"#,
            "duplicate-step",
        ),
        (
            r#"{"steps": [{"step": "a", "job": "j"}, {"step": "b", "job": "j", "after": ["ghost"]}]}"#,
            "dependency-not-found",
        ),
        (
            r#"{"steps": [{"step": "a", "job": "j", "after": ["export", "b"]}, {"step": "b", "job": "j", "after": ["a"]}]}"#,
            "workflow-cycle",
        ),
        (r#"{"steps": []}"#, "invalid-workflow"),
    ] {
        db.fails(&["workflows", "append", id, &write("bad.json", file)], code);
    }
    db.fails(
        &["workflows", "append", "no-such-workflow", &more],
        "workflow-not-found",
    );

    let added = db.json(&["workflows", "append", id, &more]);
    assert_eq!(
        (&added["workflowId"], &added["replayed"]),
        (&flow["workflowId"], &false.into())
    );
    let report = db.job(added["jobs"]["report"].as_str().unwrap());
    assert_eq!(
        (&report["status"], &report["step"]),
        (&"pending".into(), &"report".into())
    );
    assert_eq!(report["workflowId"], id);
    assert_eq!(
        db.job(added["jobs"]["mail"].as_str().unwrap())["queue"],
        "mail"
    );
    let again = db.json(&["workflows", "append", id, &more]);
    assert_eq!(
        (&again["jobs"], &again["replayed"]),
        (&added["jobs"], &true.into())
    );
    assert_eq!(db.counts()["total"], 3, "a replay adds nothing");

    let late = r#"{"steps": [{"step": "late", "job": "duraq.echo", "after": ["export", "mail"]}]}"#;
    let late = db.json_with_stdin(&["workflows", "append", id, "-"], late);
    let shown = db.json(&["workflows", "show", id]);
    assert_eq!(shown["total"], 4);
    let late_step = shown["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["jobId"] == late["jobs"]["late"])
        .unwrap();
    assert_eq!(
        late_step["dependsOn"],
        serde_json::json!(["export", "mail"])
    );
}
