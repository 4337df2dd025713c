//! The program under hostile and mistaken input, second pass (`SECURITY.md`):
//! usage errors in the `--json` form, impossible UTC offsets, a bulk action
//! interrupted by its database, and secrets masked only where they occur whole.
//! Each case is a regression test of a finding in the second hardening issue.

mod common;

use common::{parse_one, run_with_url, Db};
use serde_json::Value;

/// The one JSON error object a failed `--json` command prints on stderr.
fn json_error(out: &std::process::Output) -> Value {
    assert!(out.stdout.is_empty(), "nothing on stdout: {out:?}");
    parse_one(&out.stderr)
}

#[test]
fn usage_errors_honour_json() {
    let db = Db::new();
    for args in [
        &["--json", "jobs", "show"][..],
        &["jobs", "show", "--json"],
        &["--json", "jobs", "list", "--no-such-flag"],
        &["--json", "no-such-command"],
        &["--json", "enqueue", "x", "--priority", "high"],
    ] {
        let out = db.run(args);
        assert_eq!(out.status.code(), Some(2), "duraq {args:?}: {out:?}");
        let err = json_error(&out);
        assert_eq!(err["error"]["code"], "usage", "{args:?}: {err}");
        assert!(err["error"]["message"].is_string(), "{err}");
    }
    // Without --json a usage error stays clap's text, and help is not an error.
    let text = db.run(&["jobs", "show"]);
    assert_eq!(text.status.code(), Some(2));
    assert!(!text.stderr.starts_with(b"{"), "{text:?}");
    assert_eq!(db.run(&["--json", "jobs", "--help"]).status.code(), Some(0));
}

#[test]
fn an_offset_beyond_a_day_is_invalid_time() {
    let db = Db::new();
    for at in [
        "1970-01-01T00:00:00-25:00",
        "1970-01-01T00:00:00+24:00",
        "2026-01-01T12:00:00+25:59",
    ] {
        db.fails(&["enqueue", "duraq.noop", "--run-at", at], "invalid-time");
        db.fails(&["jobs", "list", "--created-before", at], "invalid-time");
    }
    let ok = db.json(&[
        "enqueue",
        "duraq.noop",
        "--run-at",
        "2026-01-01T00:00:00+23:59",
    ]);
    assert!(ok["jobId"].is_string(), "{ok}");
}

#[test]
fn an_interrupted_bulk_action_says_how_far_it_got_and_reruns_safely() {
    let db = Db::new();
    let ids: Vec<String> = (0..3).map(|_| db.enqueue(&["duraq.noop"])).collect();
    // A real failure of the database on the second batch: a trigger aborts it.
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    conn.execute_batch(&format!(
        "CREATE TRIGGER stop_here BEFORE UPDATE ON duraq_jobs WHEN OLD.id = '{}' \
         BEGIN SELECT RAISE(ABORT, 'stopped by the test'); END;",
        ids[1]
    ))
    .unwrap();
    let mut args = vec!["--json", "jobs", "cancel", "--batch-size", "1"];
    args.extend(ids.iter().map(String::as_str));
    let out = db.run(&args);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = json_error(&out);
    assert_eq!(err["error"]["code"], "backend-error", "{err}");
    let progress = &err["error"]["progress"];
    assert_eq!(progress["batchesCommitted"], 1, "{err}");
    assert_eq!(progress["changed"], 1, "{err}");
    assert_eq!(progress["matched"], 1, "{err}");
    assert_eq!(progress["skipped"], 0, "{err}");
    assert_eq!(db.status(&ids[0]), "cancelled");
    assert_eq!(db.status(&ids[1]), "queued");
    // The text form keeps the error's code, and still changes nothing more.
    let text = db.run(&args[1..]);
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(stderr.starts_with("error[backend-error]:"), "{stderr}");
    assert_eq!(db.status(&ids[1]), "queued");

    conn.execute_batch("DROP TRIGGER stop_here").unwrap();
    let rerun = db.json(&args[1..]);
    assert_eq!(
        (&rerun["matched"], &rerun["changed"], &rerun["skipped"]),
        (&Value::from(3), &Value::from(2), &Value::from(1)),
        "{rerun}"
    );
}

#[test]
fn a_short_secret_masks_only_itself_not_letters_of_other_words() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("sqlite:{}", dir.path().join("missing.db").display());
    let out = std::process::Command::new(common::bin())
        .args(["--database", &missing, "jobs", "list"])
        .env("DURAQ_WEB_TOKEN", "e")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error[database-not-found]:"), "{stderr}");
    assert!(!stderr.contains("***"), "nothing garbled: {stderr}");
    // A secret long enough to be one is still masked where it occurs whole.
    let secret = "hunter2-hunter2-hunter2";
    let url = format!("postgres://duraq:{secret}@127.0.0.1:1/none");
    let out = run_with_url(&url, &["jobs", "list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(!stderr.contains(secret), "{stderr}");
}
