//! `docs/cli.md` tells scripts what each command answers with `--json`, in its
//! `| command | answer |` table. This test reads that table and, for every
//! row, runs the commands it names against a temporary SQLite file and
//! checks that the top-level keys of the real answer are the documented ones,
//! so the page cannot drift from the program. A row is either checked or
//! listed in [`NOT_RUN`] with the reason; a new row is neither until someone
//! decides, and fails the test.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{bin, parse_one, signal, wait_exit, wait_for, Db};
use serde_json::Value;

/// Rows whose answer is not one JSON object this test can get from a
/// temporary SQLite file.
const NOT_RUN: [(&str, &str); 2] = [
    ("web", "serves until stopped; nothing on stdout"),
    (
        "completions <SHELL> / man",
        "a script or a roff page, not JSON",
    ),
];

/// `(command cell without backticks, documented top-level keys)`, in table order.
fn documented() -> Vec<(String, BTreeSet<String>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
    let text = std::fs::read_to_string(&path).expect("docs/cli.md");
    let mut lines = text
        .lines()
        .skip_while(|l| l.trim() != "| command | answer |");
    assert!(
        lines.next().is_some(),
        "docs/cli.md has no `| command | answer |` table"
    );
    lines
        .skip(1) // |---|---|
        .take_while(|l| l.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').splitn(2, '|').collect();
            let command = cells[0].trim().replace('`', "");
            let keys = first_object(cells[1])
                .map(top_level_keys)
                .unwrap_or_default();
            (command, keys)
        })
        .collect()
}

/// The first backticked span of `cell` that is an object (`{…}`).
fn first_object(cell: &str) -> Option<&str> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .find(|span| span.starts_with('{'))
}

/// The keys of the outermost object in the page's shorthand: `{"a","b":[…],
/// "c":{…}}` has `a`, `b` and `c`; a quoted string right after a `:` is a
/// value, and nested objects and arrays are skipped.
fn top_level_keys(shape: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut depth = 0usize;
    let mut chars = shape.chars().peekable();
    let mut after_colon = false;
    while let Some(c) = chars.next() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            '"' => {
                let mut s = String::new();
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                    s.push(c);
                }
                if depth == 1 && !after_colon {
                    keys.insert(s);
                }
            }
            _ => {}
        }
        if !c.is_whitespace() {
            after_colon = c == ':';
        }
    }
    keys
}

fn keys_of(answer: &Value) -> BTreeSet<String> {
    answer
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {answer}"))
        .keys()
        .cloned()
        .collect()
}

/// A tenants folder with one migration and one migrated tenant, then
/// `tenants pending`.
fn tenants_answer(dir: &Path) -> Value {
    std::fs::create_dir(dir.join("migrations")).unwrap();
    std::fs::write(
        dir.join("migrations/1_accounts.sql"),
        "-- duraq:databases: projectTenant\nCREATE TABLE accounts(id INTEGER);\n",
    )
    .unwrap();
    std::fs::write(dir.join("acme.db"), b"").unwrap();
    std::fs::write(
        dir.join("tenants.json"),
        r#"{"tenants":[{"name":"acme","database":"sqlite:acme.db"}]}"#,
    )
    .unwrap();
    let tenants = |command: &str| {
        let out = Command::new(bin())
            .current_dir(dir)
            .env_remove("DURAQ_DATABASE_URL")
            .args([
                "tenants",
                command,
                "projectTenant",
                "--tenants",
                "tenants.json",
            ])
            .args(["--migrations", "migrations", "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "tenants {command}: {out:?}");
        out
    };
    // A tenant without a ledger fails the preflight: migrate it first.
    tenants("migrate");
    parse_one(&tenants("pending").stdout)
}

/// `duraq worker --json` until it stops: started, seen registered, then SIGTERM.
fn worker_answer(db: &Db) -> Value {
    let mut worker = db.spawn_worker(&["--json"]);
    wait_for(Duration::from_secs(60), "the worker to register", || {
        let w = db.json(&["workers"]);
        (!w["workers"].as_array().unwrap().is_empty()).then_some(())
    });
    signal(&worker, libc::SIGTERM);
    let status = wait_exit(&mut worker, Duration::from_secs(60));
    let out = worker.wait_with_output().unwrap();
    assert!(status.success(), "{out:?}");
    parse_one(&out.stdout)
}

/// The real `--json` answers for a documented command cell.
fn answers(db: &Db, command: &str) -> Vec<Value> {
    let id = || db.enqueue(&["duraq.noop"]);
    match command {
        "migrate" => vec![db.json(&["migrate"])],
        "enqueue" => vec![db.json(&["enqueue", "duraq.noop"])],
        "schedule replace" => vec![db.json(&["schedule", "replace", "k", "x", "--run-in", "1h"])],
        "schedule cancel / wake" => vec![
            db.json(&["schedule", "wake", "k"]),
            db.json(&["schedule", "cancel", "k"]),
            db.json(&["schedule", "cancel", "nobody"]),
        ],
        "schedule get" => vec![
            db.json(&["schedule", "get", "k"]),
            db.json(&["schedule", "get", "k", "--include-latest-terminal"]),
        ],
        "jobs list" => vec![
            db.json(&["jobs", "list"]),
            db.json(&["jobs", "list", "--limit", "1"]),
        ],
        "jobs show" => vec![db.json(&["jobs", "show", &id()])],
        "jobs wait" => {
            let job = id();
            db.json(&["jobs", "cancel", &job]);
            // A cancelled job exits 1 (`job-cancelled`) with the job on stdout.
            let out = db.run(&["jobs", "wait", &job, "--json"]);
            assert_eq!(out.status.code(), Some(1), "{out:?}");
            vec![parse_one(&out.stdout)]
        }
        "jobs signal" => {
            let job = id();
            vec![db.json(&["jobs", "signal", &job, "go", "--payload", "1"])]
        }
        "jobs retry / cancel" => {
            let job = id();
            vec![
                db.json(&["jobs", "cancel", &job]),
                db.json(&["jobs", "retry", &job]),
            ]
        }
        "jobs retry / cancel / delete (several ids or a filter), jobs run-now" => {
            let (a, b) = (id(), id());
            vec![
                db.json(&["jobs", "run-now", &a, &b]),
                db.json(&["jobs", "run-now", "--status", "queued", "--dry-run"]),
                db.json(&["jobs", "cancel", &a, &b]),
                db.json(&["jobs", "retry", "--status", "cancelled", "--dry-run"]),
                db.json(&["jobs", "delete", "--status", "cancelled,queued"]),
            ]
        }
        "jobs prune" => vec![db.json(&["jobs", "prune", "--completed-older-than", "1d"])],
        "jobs prune --dry-run" => {
            vec![db.json(&["jobs", "prune", "--dry-run", "--cancelled-older-than", "0s"])]
        }
        "counts" => vec![db.json(&["counts"])],
        "queues" => vec![db.json(&["queues"])],
        "workers" => vec![db.json(&["workers"])],
        "stats" => vec![
            db.json(&["stats"]),
            db.json(&["stats", "--since", "7d", "--queue", "mail"]),
        ],
        "queues pause / resume" => vec![
            db.json(&["queues", "pause", "mail"]),
            db.json(&["queues", "resume", "mail"]),
        ],
        "worker (when it stops)" => vec![worker_answer(db)],
        "tenants pending" => vec![tenants_answer(db.dir.path())],
        "workflows enqueue FILE" => {
            let file = db.dir.path().join("flow.json");
            let flow = r#"{"name": "w", "steps": [{"step": "a", "job": "duraq.echo"},
                {"step": "b", "job": "duraq.echo", "after": ["a"]}]}"#;
            std::fs::write(&file, flow).unwrap();
            vec![db.json(&["workflows", "enqueue", file.to_str().unwrap()])]
        }
        "workflows list" => {
            let file = db.dir.path().join("flow.json");
            std::fs::write(
                &file,
                r#"{"name": "w", "steps": [{"step": "a", "job": "duraq.echo"}]}"#,
            )
            .unwrap();
            db.json(&["workflows", "enqueue", file.to_str().unwrap()]);
            vec![
                db.json(&["workflows", "list"]),
                db.json(&["workflows", "list", "--limit", "1"]),
            ]
        }
        "workflows append W FILE" => {
            let file = db.dir.path().join("flow.json");
            let flow = r#"{"name": "w", "steps": [{"step": "a", "job": "duraq.echo"}]}"#;
            std::fs::write(&file, flow).unwrap();
            let flow = db.json(&["workflows", "enqueue", file.to_str().unwrap()]);
            let more = db.dir.path().join("more.json");
            let steps = r#"{"steps": [{"step": "b", "job": "duraq.echo", "after": ["a"]}]}"#;
            std::fs::write(&more, steps).unwrap();
            let id = flow["workflowId"].as_str().unwrap();
            vec![db.json(&["workflows", "append", id, more.to_str().unwrap()])]
        }
        "workflows show W" | "workflows cancel W / retry W" => {
            let file = db.dir.path().join("flow.json");
            std::fs::write(
                &file,
                r#"{"name": "w", "steps": [{"step": "a", "job": "duraq.echo"}]}"#,
            )
            .unwrap();
            let flow = db.json(&["workflows", "enqueue", file.to_str().unwrap()]);
            let id = flow["workflowId"].as_str().unwrap().to_owned();
            if command == "workflows show W" {
                vec![db.json(&["workflows", "show", &id])]
            } else {
                vec![
                    db.json(&["workflows", "cancel", &id]),
                    db.json(&["workflows", "retry", &id]),
                ]
            }
        }
        other => panic!(
            "docs/cli.md documents `{other}`: teach this test to run it (or add it to NOT_RUN)"
        ),
    }
}

#[test]
fn the_documented_json_answers_have_the_documented_keys() {
    let db = Db::new();
    db.json(&["migrate"]);
    let rows = documented();
    assert!(rows.len() >= 10, "the table was read: {rows:?}");
    let mut checked = 0;
    for (command, keys) in &rows {
        if NOT_RUN.iter().any(|(c, _)| c == command) {
            continue;
        }
        assert!(!keys.is_empty(), "`{command}`: no documented object");
        for answer in answers(&db, command) {
            assert_eq!(&keys_of(&answer), keys, "`{command}` answered {answer}");
        }
        checked += 1;
    }
    for (skipped, _) in NOT_RUN {
        assert!(
            rows.iter().any(|(c, _)| c == skipped),
            "NOT_RUN names `{skipped}`, which docs/cli.md no longer documents"
        );
    }
    assert_eq!(checked + NOT_RUN.len(), rows.len());
}

#[test]
fn the_shorthand_reader_finds_top_level_keys() {
    let keys = |s: &str| top_level_keys(s).into_iter().collect::<Vec<_>>();
    assert_eq!(
        keys(r#"{"applied":[…],"version":N}"#),
        ["applied", "version"]
    );
    assert_eq!(
        keys(r#"{"counts":{"queued","handedOff"},"total","revision"}"#),
        ["counts", "revision", "total"]
    );
    assert_eq!(
        keys(r#"{"queues":[{"queue","counts":{…}}],"unhandled":[{"due"}]}"#),
        ["queues", "unhandled"]
    );
    assert_eq!(keys(r#"{"state":"alive","x"}"#), ["state", "x"]);
    assert_eq!(
        first_object("not JSON (`man --out DIR` prints `{\"pages\":[…]}`)"),
        Some("{\"pages\":[…]}")
    );
}
