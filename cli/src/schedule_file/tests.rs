//! The schedule file's parsing: what a good file declares, and for each kind of
//! mistake its code and the line it is reported at.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use duraq_core::worker::PeriodicSchedule;
use duraq_core::{PeriodicJob, Registry};
use duraq_mailer::{MailDeliverJob, MemoryBackend};

use super::{parse, ScheduleError, INVALID};
use crate::builtin::{register_builtins, Builtins};

fn builtins() -> Registry {
    let mut registry = Registry::new();
    register_builtins(&mut registry, &Builtins::new()).unwrap();
    registry
}

fn parse_with(text: &str, registry: &Registry) -> Result<Vec<PeriodicJob>, ScheduleError> {
    parse("jobs.toml", text, registry, &mut HashMap::new())
}

/// The code and line of the one error `text` has.
fn fails(text: &str) -> (&'static str, usize) {
    let err = parse_with(text, &builtins()).expect_err(text);
    assert_eq!(err.file, "jobs.toml");
    let (line, _) = err.at.unwrap_or_else(|| panic!("no line: {err}"));
    assert!(
        err.to_string().starts_with(&format!("jobs.toml:{line}:")),
        "{err}"
    );
    (err.code, line)
}

const NOOP: &str = "[[job]]\nname = \"tick\"\njob = \"duraq.noop\"\n";

#[test]
fn a_file_declares_every_and_cron_jobs_with_their_options() {
    let text = r#"
[[job]]
name = "ping-hook"
job = "duraq.http"
every = "5m"
args = { url = "https://example.com/hook", method = "POST", headers = { X-Token = "t" } }
queue = "hooks"
max_retries = 3
priority = 10
timeout = "30s"

[[job]]
name = "standup"
job = "duraq.sleep"
cron = "0 9 * * mon-fri"
zone = "Europe/Oslo"
args = { ms = 5 }
concurrency_key = "standup"
max_concurrency = 1
rate_key = "standup"
rate = "2/1m"
"#;
    let jobs = parse_with(text, &builtins()).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].name(), "ping-hook");
    assert_eq!(jobs[0].job_name(), "duraq.http");
    assert_eq!(
        jobs[0].schedule(),
        &PeriodicSchedule::Every(Duration::from_secs(300))
    );
    let tick = jobs[0].tick_job(300_000).unwrap();
    assert_eq!(tick.queue().as_str(), "hooks");
    assert_eq!(tick.max_retries(), 3);
    assert_eq!(tick.args()["url"], "https://example.com/hook");
    assert_eq!(tick.args()["headers"]["X-Token"], "t");
    assert_eq!(tick.scheduled_at_ms(), Some(300_000));

    assert_eq!(
        jobs[1].schedule().to_string(),
        "0 9 * * mon-fri (Europe/Oslo)"
    );
    let tick = jobs[1].tick_job(0).unwrap();
    assert_eq!(tick.args(), &serde_json::json!({ "ms": 5 }));
    assert_eq!(tick.queue().as_str(), "default");
}

#[test]
fn a_cron_prefix_names_the_zone_and_args_default_to_an_empty_list() {
    let text =
        "[[job]]\nname = \"n\"\njob = \"duraq.noop\"\ncron = \"CRON_TZ=Asia/Kolkata 30 6 * * *\"\n";
    let jobs = parse_with(text, &builtins()).unwrap();
    assert_eq!(jobs[0].schedule().to_string(), "30 6 * * * (Asia/Kolkata)");
    assert_eq!(jobs[0].tick_job(0).unwrap().args(), &serde_json::json!([]));
}

#[test]
fn toml_mistakes_are_reported_at_their_line() {
    // Not TOML: an unterminated string.
    assert_eq!(fails(&format!("{NOOP}every = \"1s\n")), (INVALID, 4));
    // An unknown key in an entry, and at the top level.
    assert_eq!(
        fails(&format!("{NOOP}every = \"1s\"\nevry = \"2s\"\n")),
        (INVALID, 5)
    );
    assert_eq!(fails("\n[jobs]\nname = \"x\"\n").0, INVALID);
    // A value of the wrong type.
    assert_eq!(
        fails(&format!("{NOOP}every = \"1s\"\nmax_retries = \"3\"\n")),
        (INVALID, 5)
    );
    // A missing `job`: reported at the entry.
    assert_eq!(
        fails("\n[[job]]\nname = \"x\"\nevery = \"1s\"\n").0,
        INVALID
    );
    // No entry at all.
    assert_eq!(fails("# nothing yet\n"), (INVALID, 1));
}

#[test]
fn schedule_mistakes_are_reported_at_their_key() {
    assert_eq!(
        fails(&format!("{NOOP}every = \"1s\"\ncron = \"* * * * *\"\n")),
        (INVALID, 5),
        "both every and cron"
    );
    assert_eq!(
        fails(&format!("# header\n{NOOP}queue = \"q\"\n")).0,
        INVALID,
        "neither every nor cron"
    );
    assert_eq!(
        fails(&format!("{NOOP}every = \"5 parsecs\"\n")),
        ("invalid-duration", 4)
    );
    assert_eq!(
        fails(&format!("{NOOP}every = \"0s\"\n")),
        ("invalid-duration", 4)
    );
    assert_eq!(
        fails(&format!("{NOOP}cron = \"61 * * * *\"\n")),
        ("invalid-cron", 4)
    );
    assert_eq!(
        fails(&format!("{NOOP}cron = \"0 9 * * *\"\nzone = \"Oslo\"\n")),
        ("invalid-time-zone", 5)
    );
    assert_eq!(
        fails(&format!(
            "{NOOP}cron = \"CRON_TZ=Mars/Olympus 0 9 * * *\"\n"
        )),
        ("invalid-time-zone", 4)
    );
    assert_eq!(
        fails(&format!(
            "{NOOP}cron = \"CRON_TZ=Europe/Oslo 0 9 * * *\"\nzone = \"Europe/Oslo\"\n"
        )),
        (INVALID, 5),
        "a zone given twice"
    );
    assert_eq!(
        fails(&format!("{NOOP}every = \"1h\"\nzone = \"Europe/Oslo\"\n")),
        (INVALID, 5),
        "a zone on an interval"
    );
    assert_eq!(
        fails("[[job]]\nname = \" \"\njob = \"duraq.noop\"\nevery = \"1s\"\n"),
        (INVALID, 2)
    );
}

#[test]
fn a_job_this_worker_does_not_run_is_refused() {
    let text = "[[job]]\nname = \"x\"\njob = \"app.report\"\nevery = \"1h\"\n";
    assert_eq!(fails(text), (INVALID, 3));
    // Without a mail backend, mail is not a job this worker runs.
    let mail = "[[job]]\nname = \"m\"\njob = \"duraq.mail.deliver\"\nevery = \"1d\"\n";
    assert_eq!(fails(mail), (INVALID, 3));
}

#[test]
fn args_a_built_in_refuses_are_refused() {
    let sleep = "[[job]]\nname = \"s\"\njob = \"duraq.sleep\"\nevery = \"1s\"\n";
    assert_eq!(
        fails(&format!("{sleep}args = {{ ms = -1 }}\n")),
        ("invalid-args", 5)
    );
    assert_eq!(fails(sleep).0, "invalid-args", "no args at all");
    let http = "[[job]]\nname = \"h\"\njob = \"duraq.http\"\nevery = \"1s\"\n";
    for args in [
        "{ url = \"ftp://example.com\" }",
        "{ url = \"https://example.com\", method = \"NOT A METHOD\" }",
        "{ url = \"https://example.com\", headers = [1] }",
        "{ method = \"GET\" }",
    ] {
        assert_eq!(
            fails(&format!("{http}args = {args}\n")),
            ("invalid-args", 5),
            "{args}"
        );
    }
    assert_eq!(
        fails(&format!("{NOOP}every = \"1s\"\nargs = {{ x = nan }}\n")),
        ("invalid-args", 5),
        "NaN has no JSON form"
    );
}

#[test]
fn mail_needs_a_payload_delivered_at_least_once() {
    let registry = Registry::new()
        .register(MailDeliverJob::new(Arc::new(MemoryBackend::new())))
        .unwrap();
    let mail = "[[job]]\nname = \"m\"\njob = \"duraq.mail.deliver\"\nevery = \"1d\"\n";
    let good =
        r#"args = { payload = { subject = "Daily", to = ["ops@example.com"], text = "hi" } }"#;
    let jobs = parse_with(&format!("{mail}{good}\n"), &registry).unwrap();
    assert_eq!(jobs[0].job_name(), "duraq.mail.deliver");
    let no_body = r#"args = { payload = { subject = "Daily", to = ["ops@example.com"] } }"#;
    let err = parse_with(&format!("{mail}{no_body}\n"), &registry).unwrap_err();
    assert_eq!((err.code, err.at.map(|a| a.0)), ("invalid-args", Some(5)));
}

#[test]
fn option_mistakes_are_reported_at_their_key() {
    let every = format!("{NOOP}every = \"1s\"\n");
    for (line, code) in [
        ("queue = \"\"", "invalid-queue"),
        ("queue = \"a,b\"", "invalid-queue"),
        ("max_retries = -1", "invalid-max-retries"),
        ("priority = 500", "invalid-priority"),
        ("timeout = \"soon\"", "invalid-duration"),
        ("timeout = \"0s\"", "invalid-timeout"),
        ("rate = \"lots\"", "invalid-rate-limit"),
        ("rate_key = \"partner\"", "invalid-rate-limit"),
        ("max_concurrency = 2", "invalid-concurrency"),
    ] {
        assert_eq!(fails(&format!("{every}{line}\n")), (code, 5), "{line}");
    }
}

#[test]
fn a_name_used_twice_is_refused_at_its_second_use_across_files() {
    let twice = format!(
        "{NOOP}every = \"1s\"\n\n[[job]]\nname = \"tick\"\njob = \"duraq.noop\"\nevery = \"2s\"\n"
    );
    assert_eq!(fails(&twice), (INVALID, 7));

    let registry = builtins();
    let mut seen = HashMap::new();
    let one = format!("{NOOP}every = \"1s\"\n");
    parse("a.toml", &one, &registry, &mut seen).unwrap();
    let err = parse("b.toml", &one, &registry, &mut seen).unwrap_err();
    assert_eq!((err.code, err.at), (INVALID, Some((2, 8))));
    assert!(err.message.contains("a.toml:2"), "{err}");
}
