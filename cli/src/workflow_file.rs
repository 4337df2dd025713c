//! The files `duraq workflows enqueue` and `append` read: a workflow
//! `{"name", "idempotencyKey"?, "steps": [...]}` and a steps file
//! `{"idempotencyKey"?, "steps": [...]}`, each step one object of [`STEP_KEYS`]
//! and the enqueue options with their flags' spellings and units
//! (`"runIn": "5m"`, `"timeout": "30s"`, `"runAt"` in RFC 3339), parsed by the
//! flags' own parser ([`crate::options`]). The keys and their types are
//! documented in `docs/workflows.md`, and a test holds the two lists equal.
//!
//! The file is strict because a key it ignored would change what runs: a step
//! with `"depends_on"` would run at once. An unknown key anywhere, a key of the
//! wrong type and an unreadable file are `invalid-workflow-file` naming the key
//! and the step; an option's bad value has its flag's code
//! (`invalid-duration`, …), a built-in job's bad args `invalid-args`; all are
//! found before the database is opened.

use std::path::Path;

use anyhow::Result;
use duraq_core::{DependencyFailure, NewJob, Workflow, WorkflowAppend};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::CliError;
use crate::options::{enqueue_options, JobOptions, Spelling};

/// The code of a file that is no workflow or steps file.
pub const INVALID: &str = "invalid-workflow-file";

/// The keys of a step besides the enqueue options ([`JobOptions`]'s).
pub const STEP_KEYS: &[&str] = &[
    "step",
    "job",
    "args",
    "after",
    "onDependencyFailure",
    "idempotencyKey",
];

/// The text of a workflow or steps file (`-`: standard input):
/// `file-not-found` or `file-unreadable` naming the path.
pub fn read_file(file: &Path) -> Result<String> {
    if file.as_os_str() == "-" {
        return std::io::read_to_string(std::io::stdin())
            .map_err(|e| CliError::new("file-unreadable", format!("standard input: {e}")).into());
    }
    std::fs::read_to_string(file).map_err(|e| crate::error::file_error(file, &e).into())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WorkflowFile {
    name: String,
    #[serde(default)]
    idempotency_key: Option<String>,
    steps: Vec<Map<String, Value>>,
}

/// The workflow a file describes, checked as a whole: every error before any
/// store call.
pub fn parse_workflow(text: &str) -> Result<Workflow> {
    let file: WorkflowFile = serde_json::from_str(text)
        .map_err(|e| invalid(format!("the workflow file is not a workflow: {e}")))?;
    let mut workflow = Workflow::new(file.name);
    if let Some(key) = file.idempotency_key {
        workflow = workflow.idempotency_key(key);
    }
    for (n, fields) in file.steps.into_iter().enumerate() {
        let (step, job, after) = parse_step(n, fields)?;
        workflow = workflow.step_after(step, job, after);
    }
    Ok(workflow)
}

/// Step `n` (from 0) of a file → its name, its job and the steps it waits for.
pub(crate) fn parse_step(
    n: usize,
    mut fields: Map<String, Value>,
) -> Result<(String, NewJob, Vec<String>)> {
    let text = |fields: &mut Map<String, Value>, key: &str, step: &str| match fields.remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(format!("{step}: {key:?} must be a string"))),
    };
    let at = format!("step {}", n + 1);
    let step = text(&mut fields, "step", &at)?
        .ok_or_else(|| invalid(format!("{at} needs a string \"step\"")))?;
    let at = format!("step {step:?}");
    if let Some(key) = fields
        .keys()
        .find(|k| !STEP_KEYS.contains(&k.as_str()) && !option_keys().contains(&k.as_str()))
    {
        return Err(invalid(format!("{at}: unknown key {key:?}{}", hint(key))));
    }
    let job = text(&mut fields, "job", &at)?
        .ok_or_else(|| invalid(format!("{at} needs a string \"job\"")))?;
    let args = fields.remove("args").unwrap_or(Value::Array(vec![]));
    crate::builtin::check_args(&job, &args)
        .map_err(|m| CliError::new("invalid-args", format!("{at}: args: {m}")))?;
    let after: Vec<String> = match fields.remove("after") {
        None => Vec::new(),
        Some(v) => serde_json::from_value(v)
            .map_err(|_| invalid(format!("{at}: \"after\" is a list of step names")))?,
    };
    let policy = text(&mut fields, "onDependencyFailure", &at)?
        .map(|p| p.parse::<DependencyFailure>())
        .transpose()
        .map_err(|_| {
            invalid(format!(
                "{at}: \"onDependencyFailure\" is \"cancel\" or \"run\""
            ))
        })?;
    let idempotency_key = text(&mut fields, "idempotencyKey", &at)?;
    let flags: JobOptions =
        serde_json::from_value(Value::Object(fields)).map_err(|e| invalid(format!("{at}: {e}")))?;
    let mut options = enqueue_options(&flags, Spelling::Json)
        .map_err(|e| CliError::new(e.error.code, format!("{at}: {}", e.error.message)))?;
    options.on_dependency_failure = policy;
    options.idempotency_key = idempotency_key;
    let job = NewJob::new(&job, args, options).map_err(|e| {
        let code = e.code().as_str();
        CliError::new(
            code,
            format!("{at}: {}", duraq_core::inspect::error_chain(&e)),
        )
    })?;
    Ok((step, job, after))
}

/// The enqueue option keys of a step: [`JobOptions`]'s, as serde reads them.
pub(crate) fn option_keys() -> &'static [&'static str] {
    crate::options::serde_fields::<JobOptions>()
}

/// A pointer to the key meant by a common mistake.
fn hint(key: &str) -> String {
    let meant = match key {
        "depends_on" | "dependsOn" | "needs" | "waitFor" => "after",
        "runInMs" | "delay" | "run_in" => "runIn",
        "scheduledAtMs" | "run_at" | "scheduledAt" => "runAt",
        "timeoutMs" => "timeout",
        "name" => "step",
        k => {
            let camel = Spelling::Json.name(k);
            return if camel != k && option_keys().contains(&camel.as_str()) {
                format!(" (did you mean {camel:?}?)")
            } else {
                " (a step's keys are in docs/workflows.md)".to_owned()
            };
        }
    };
    format!(" (did you mean {meant:?}?)")
}

pub(crate) fn invalid(message: String) -> anyhow::Error {
    CliError::new(INVALID, message).into()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AppendFile {
    #[serde(default)]
    idempotency_key: Option<String>,
    steps: Vec<Map<String, Value>>,
}

/// A steps file, checked, before the workflow it adds to is known (the id
/// on the command line may be a prefix, resolved in the database).
pub struct Steps {
    idempotency_key: Option<String>,
    steps: Vec<(String, NewJob, Vec<String>)>,
}

impl Steps {
    /// The steps added to workflow `workflow_id`.
    pub fn append_to(self, workflow_id: &str) -> WorkflowAppend {
        let mut append = Workflow::append_to(workflow_id);
        if let Some(key) = self.idempotency_key {
            append = append.idempotency_key(key);
        }
        for (step, job, after) in self.steps {
            append = append.step_after(step, job, after);
        }
        append
    }
}

/// The steps a file adds to a workflow; every error of the file itself
/// before any store call.
pub fn parse_steps(text: &str) -> Result<Steps> {
    let file: AppendFile = serde_json::from_str(text)
        .map_err(|e| invalid(format!("the steps file is not a list of steps: {e}")))?;
    if file.steps.is_empty() {
        let message = "the steps file has no steps".to_owned();
        return Err(CliError::new("invalid-workflow", message).into());
    }
    let steps = (file.steps.into_iter().enumerate())
        .map(|(n, fields)| parse_step(n, fields))
        .collect::<Result<_>>()?;
    Ok(Steps {
        idempotency_key: file.idempotency_key,
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stable code of a refused file.
    fn code_of(result: Result<()>) -> String {
        let err = result.unwrap_err();
        match err.downcast_ref::<CliError>() {
            Some(e) => e.code.to_owned(),
            None => err
                .downcast_ref::<duraq_core::Error>()
                .map(|e| e.code().as_str().to_owned())
                .unwrap_or_default(),
        }
    }

    fn code(text: &str) -> String {
        code_of(parse_workflow(text).and_then(|w| Ok(w.build()?)).map(drop))
    }

    #[test]
    fn a_file_becomes_a_checked_workflow() {
        let plan = parse_workflow(
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
            code(
                r#"{"name": "w", "steps": [{"step": "a", "job": "j"}, {"step": "a", "job": "j"}]}"#
            ),
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
        code_of(parse_steps(text).map(drop))
    }

    #[test]
    fn a_file_becomes_steps_for_the_workflow() {
        let append = parse_steps(
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
            let err = parse_workflow(file).unwrap_err();
            let err = err.downcast_ref::<CliError>().unwrap();
            assert_eq!(err.code, INVALID, "{file}");
            assert!(err.message.contains(key), "{}", err.message);
        }
    }

    #[test]
    fn options_take_the_flags_spellings_and_units() {
        let plan = parse_workflow(
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
        let docs = include_str!("../../docs/workflows.md");
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
}
