//! The workflow file `duraq workflows enqueue` reads and `POST
//! /api/v1/workflows` takes, `{"name", "idempotencyKey"?, "steps": [...]}`,
//! and the steps file of `duraq workflows append`, `{"idempotencyKey"?,
//! "steps": [...]}`: each step one object of [`STEP_KEYS`] and the enqueue
//! options with their flags' spellings and units (`"runIn": "5m"`,
//! `"timeout": "30s"`, `"runAt"` in RFC 3339), read by the one parser of
//! options ([`crate::job_options`]). The keys and their types are documented
//! in `docs/workflows.md`, and a test holds the two lists equal.
//!
//! Why here: the `duraq` program and the HTTP API read the same file, and
//! this is the lowest crate both reach (beside [`crate::job_options`]), so a
//! file means the same, and is refused with the same code, wherever it is sent.
//!
//! The file is strict because a key it ignored would change what runs: a step
//! with `"depends_on"` would run at once. An unknown key anywhere, a key of the
//! wrong type and text that is no such file are [`INVALID`] naming the key
//! and the step; an option's bad value has its flag's code
//! (`invalid-duration`, …), a built-in job's bad args `invalid-args` (by the
//! caller's [`ArgsCheck`]); all are found before any store call. The checks
//! of the workflow as a whole (duplicate steps, cycles) are core's
//! ([`Workflow::build`]).

use duraq_core::{DependencyFailure, NewJob, Workflow, WorkflowAppend};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::builtin_args::ArgsCheck;
use crate::job_options::values::ValueError;
use crate::job_options::{enqueue_options, serde_fields, JobOptions, Spelling};

/// The code of a text that is no workflow or steps file.
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

/// The keys of a workflow file around its steps (`name`, `steps`, …), as
/// serde reads them.
pub fn workflow_keys() -> &'static [&'static str] {
    serde_fields::<WorkflowFile>()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WorkflowFile {
    name: String,
    #[serde(default)]
    idempotency_key: Option<String>,
    steps: Vec<Map<String, Value>>,
}

/// The workflow a file's text describes, every step checked (`check` reads
/// the built-in jobs' args): every error before any store call.
pub fn parse_workflow(text: &str, check: ArgsCheck) -> Result<Workflow, ValueError> {
    let file: WorkflowFile = serde_json::from_str(text).map_err(not_a_workflow)?;
    workflow(file, check)
}

/// [`parse_workflow`] of a file already read as JSON (an HTTP request's body).
pub fn workflow_from_json(value: Value, check: ArgsCheck) -> Result<Workflow, ValueError> {
    let file: WorkflowFile = serde_json::from_value(value).map_err(not_a_workflow)?;
    workflow(file, check)
}

fn not_a_workflow(e: serde_json::Error) -> ValueError {
    invalid(format!("the workflow file is not a workflow: {e}"))
}

fn workflow(file: WorkflowFile, check: ArgsCheck) -> Result<Workflow, ValueError> {
    let mut workflow = Workflow::new(file.name);
    if let Some(key) = file.idempotency_key {
        workflow = workflow.idempotency_key(key);
    }
    for (n, fields) in file.steps.into_iter().enumerate() {
        let (step, job, after) = parse_step(n, fields, check)?;
        workflow = workflow.step_after(step, job, after);
    }
    Ok(workflow)
}

/// Step `n` (from 0) of a file → its name, its job and the steps it waits for.
pub fn parse_step(
    n: usize,
    mut fields: Map<String, Value>,
    check: ArgsCheck,
) -> Result<(String, NewJob, Vec<String>), ValueError> {
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
    check(&job, &args).map_err(|m| ValueError::new("invalid-args", format!("{at}: args: {m}")))?;
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
        .map_err(|e| ValueError::new(e.error.code, format!("{at}: {}", e.error.message)))?;
    options.on_dependency_failure = policy;
    options.idempotency_key = idempotency_key;
    let job = NewJob::new(&job, args, options).map_err(|e| {
        let chain = duraq_core::inspect::error_chain(&e);
        ValueError::new(e.code().as_str(), format!("{at}: {chain}"))
    })?;
    Ok((step, job, after))
}

/// The enqueue option keys of a step: [`JobOptions`]'s, as serde reads them.
pub fn option_keys() -> &'static [&'static str] {
    serde_fields::<JobOptions>()
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

/// An [`INVALID`] refusal.
pub fn invalid(message: String) -> ValueError {
    ValueError::new(INVALID, message)
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
pub fn parse_steps(text: &str, check: ArgsCheck) -> Result<Steps, ValueError> {
    let file: AppendFile = serde_json::from_str(text)
        .map_err(|e| invalid(format!("the steps file is not a list of steps: {e}")))?;
    if file.steps.is_empty() {
        let message = "the steps file has no steps".to_owned();
        return Err(ValueError::new("invalid-workflow", message));
    }
    let steps = (file.steps.into_iter().enumerate())
        .map(|(n, fields)| parse_step(n, fields, check))
        .collect::<Result<_, _>>()?;
    Ok(Steps {
        idempotency_key: file.idempotency_key,
        steps,
    })
}

#[cfg(test)]
mod tests;
