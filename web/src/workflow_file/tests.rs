//! The workflow and steps files' unit tests: each mistake's code, the
//! options' spellings, and the documented keys.

use super::*;

fn parse_workflow_checked(text: &str) -> Result<Workflow, ValueError> {
    parse_workflow(text, CHECK)
}

fn parse_steps_checked(text: &str) -> Result<Steps, ValueError> {
    parse_steps(text, CHECK)
}

/// The stable code of a refused file.
fn code_of(result: Result<(), String>) -> String {
    result.unwrap_err()
}

/// The built-in jobs' check, as the HTTP API runs it by default.
const CHECK: ArgsCheck = crate::builtin_args::check_args;

fn code(text: &str) -> String {
    let built = parse_workflow(text, CHECK).map_err(|e| e.code.to_owned());
    code_of(built.and_then(|w| {
        w.build()
            .map(drop)
            .map_err(|e| e.code().as_str().to_owned())
    }))
}

#[test]
fn a_file_becomes_a_checked_workflow() {
    let plan = parse_workflow_checked(
        r#"{"name": "onboard", "steps": [
            {"step": "signup", "job": "duraq.echo", "args": {"user": 7}},
            {"step": "summary", "job": "duraq.echo", "after": ["signup"],
             "onDependencyFailure": "run", "queue": "reports", "maxRetries": 2}
        ]}"#,
    )
    .unwrap()
    .build()
    .unwrap();
    let summary = &plan.jobs[1];
    assert_eq!(summary.queue().as_str(), "reports");
    assert_eq!(summary.max_retries(), 2);
    assert_eq!(summary.dependencies()[0].job_id, plan.steps["signup"]);
    assert_eq!(summary.dependencies()[0].on_failure.as_str(), "run");
}

#[test]
fn each_bad_file_has_its_code() {
    assert_eq!(code("[]"), INVALID);
    assert_eq!(code(r#"{"name": "w", "steps": [{"job": "j"}]}"#), INVALID);
    assert_eq!(
        code(r#"{"name": "w", "steps": [{"step": "a", "job": "j", "after": "b"}]}"#),
        INVALID
    );
    assert_eq!(
        code(
            r#"{"name": "w", "steps": [{"step": "a", "job": "j", "onDependencyFailure": "skip"}]}"#
        ),
        INVALID
    );
    assert_eq!(code(r#"{"name": "w", "steps": []}"#), "invalid-workflow");
    assert_eq!(
        code(r#"{"name": "w", "steps": [{"step": "a", "job": "j"}, {"step": "a", "job": "j"}]}"#),
        "duplicate-step"
    );
    assert_eq!(
        code(r#"{"name": "w", "steps": [{"step": "a", "job": "j", "after": ["x"]}]}"#),
        "dependency-not-found"
    );
    assert_eq!(
        code(
            r#"{"name": "w", "steps": [{"step": "a", "job": "j", "after": ["b"]}, {"step": "b", "job": "j", "after": ["a"]}]}"#
        ),
        "workflow-cycle"
    );
    assert_eq!(
        code(r#"{"name": "w", "steps": [{"step": "a", "job": "j", "maxRetries": -1}]}"#),
        "invalid-max-retries"
    );
}

fn append_code(text: &str) -> String {
    code_of(
        parse_steps(text, CHECK)
            .map(drop)
            .map_err(|e| e.code.to_owned()),
    )
}

#[test]
fn a_file_becomes_steps_for_the_workflow() {
    let append = parse_steps_checked(
        r#"{"idempotencyKey": "add-report", "steps": [
            {"step": "report", "job": "duraq.echo", "after": ["export"], "queue": "reports"}
        ]}"#,
    )
    .unwrap()
    .append_to("0193a0b0-0000-8000-8000-00000000000a");
    assert_eq!(append.workflow_id(), "0193a0b0-0000-8000-8000-00000000000a");
}

#[test]
fn each_bad_steps_file_has_its_code() {
    assert_eq!(append_code("[]"), INVALID);
    assert_eq!(append_code(r#"{"steps": []}"#), "invalid-workflow");
    assert_eq!(
        append_code(r#"{"name": "w", "steps": [{"step": "a", "job": "j"}]}"#),
        INVALID
    );
    assert_eq!(append_code(r#"{"steps": [{"job": "j"}]}"#), INVALID);
    assert_eq!(
        append_code(r#"{"steps": [{"step": "a", "job": "j", "after": "b"}]}"#),
        INVALID
    );
    assert_eq!(
        append_code(r#"{"steps": [{"step": "a", "job": "j", "maxRetries": -1}]}"#),
        "invalid-max-retries"
    );
}

#[test]
fn unknown_keys_are_refused_by_name_anywhere() {
    for (file, key) in [
        (
            r#"{"name": "w", "steps": [{"step": "a", "job": "j", "depends_on": ["b"]}]}"#,
            "depends_on",
        ),
        (
            r#"{"name": "w", "steps": [{"step": "a", "job": "j", "runInMs": 5}]}"#,
            "runInMs",
        ),
        (
            r#"{"name": "w", "steps": [{"step": "a", "job": "j", "max_retries": 2}]}"#,
            "max_retries",
        ),
        (
            r#"{"name": "w", "owner": "me", "steps": [{"step": "a", "job": "j"}]}"#,
            "owner",
        ),
    ] {
        let err = parse_workflow(file, CHECK).unwrap_err();
        assert_eq!(err.code, INVALID, "{file}");
        assert!(err.message.contains(key), "{}", err.message);
    }
}

#[test]
fn options_take_the_flags_spellings_and_units() {
    let plan = parse_workflow_checked(
        r#"{"name": "w", "steps": [
            {"step": "a", "job": "j", "runIn": "5m", "timeout": "30s", "maxRetries": 2,
             "rate": "10/s", "rateKey": "r", "priority": 5}
        ]}"#,
    )
    .unwrap()
    .build()
    .unwrap();
    let a = &plan.jobs[0];
    assert_eq!((a.max_retries(), a.timeout_ms()), (2, Some(30_000)));
    assert_eq!(
        code(r#"{"name": "w", "steps": [{"step": "a", "job": "j", "runIn": "-5m"}]}"#),
        "invalid-duration"
    );
    assert_eq!(
        code(r#"{"name": "w", "steps": [{"step": "a", "job": "j", "runAt": "soon"}]}"#),
        "invalid-time"
    );
    assert_eq!(
        code(
            r#"{"name": "w", "steps": [{"step": "a", "job": "duraq.sleep", "args": {"ms": "fast"}}]}"#
        ),
        "invalid-args"
    );
}

/// `docs/workflows.md` lists a step's every key, and only those.
#[test]
fn the_docs_list_every_step_key() {
    let docs = include_str!("../../../docs/workflows.md");
    let table = docs.split("| key | type | meaning |").nth(1).unwrap();
    let mut documented: Vec<&str> = (table.lines().skip(2))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .collect();
    let mut parsed: Vec<&str> = STEP_KEYS.iter().chain(option_keys()).copied().collect();
    documented.sort_unstable();
    parsed.sort_unstable();
    assert_eq!(documented, parsed);
}
