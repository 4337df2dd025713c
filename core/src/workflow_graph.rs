//! The graph checks shared by a new workflow ([`crate::Workflow::build`]) and
//! an append to an existing one ([`crate::WorkflowAppend::plan`]): step names
//! checked, each used once across the workflow, every `after` resolved to a
//! new step or an existing one, no cycle among the new steps, and the steps
//! turned into jobs in an order where each comes after the new steps it waits
//! for. Pure: nothing here reads or writes a store.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorCode, Result};
use crate::job::Dependency;
use crate::keys::{check_name, IdempotencyKey};
use crate::new_job::NewJob;

/// One step as described: its name, its job and the step names it waits for.
#[derive(Debug)]
pub(crate) struct StepSpec {
    pub(crate) step: String,
    pub(crate) job: NewJob,
    pub(crate) after: Vec<String>,
}

/// Checks `specs` and turns them into jobs of workflow `workflow_id` (named
/// `name`: `None` only for a workflow stored before names were), in an
/// order where each comes after the new steps it waits for; also returns each
/// step's job id. A step waits for another of `specs` by name, or for one of
/// the workflow's `existing` steps (step name → job id), whose names `specs`
/// may not take again. With `key` each step is keyed `<key>/<step>`; with
/// `derive_ids` a step's id is derived from (workflow id, step name), so two
/// inserts of one step of one workflow can never both succeed.
pub(crate) fn plan_steps(
    workflow_id: &str,
    name: Option<&str>,
    key: Option<&IdempotencyKey>,
    specs: Vec<StepSpec>,
    existing: &HashMap<String, String>,
    derive_ids: bool,
) -> Result<(Vec<NewJob>, BTreeMap<String, String>)> {
    let mut index: HashMap<String, usize> = HashMap::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        check_name(&spec.step, ErrorCode::InvalidWorkflow, "a step name")?;
        if existing.contains_key(&spec.step) {
            return Err(Error::invalid(
                ErrorCode::DuplicateStep,
                format!(
                    "workflow {workflow_id} already has a step named {:?}",
                    spec.step
                ),
            ));
        }
        if index.insert(spec.step.clone(), i).is_some() {
            return Err(Error::invalid(
                ErrorCode::DuplicateStep,
                format!("two steps are named {:?}", spec.step),
            ));
        }
    }
    let order = topological_order(&specs, &index, existing)?;
    let ids: Vec<String> = specs
        .iter()
        .map(|spec| {
            if derive_ids {
                step_id(workflow_id, &spec.step)
            } else {
                spec.job.id().to_owned()
            }
        })
        .collect();
    let mut slots: Vec<Option<StepSpec>> = specs.into_iter().map(Some).collect();
    let mut jobs = Vec::with_capacity(slots.len());
    let mut steps = BTreeMap::new();
    for i in order {
        let spec = slots[i].take().expect("each step is ordered once");
        let mut job = spec
            .job
            .with_id(ids[i].clone())
            .in_workflow(workflow_id, name, &spec.step);
        if let Some(key) = key {
            if job.idempotency_key().is_some() {
                return Err(Error::invalid(
                    ErrorCode::UnsupportedOption,
                    format!(
                        "step {:?} has an idempotency key of its own; a keyed workflow keys its steps",
                        spec.step
                    ),
                ));
            }
            job = job.with_idempotency_key(step_key(key, &spec.step)?);
        }
        let policy = job.dependency_policy();
        for dep in &spec.after {
            let job_id = match index.get(dep.as_str()) {
                Some(&d) => ids[d].clone(),
                None => existing[dep.as_str()].clone(),
            };
            job.add_dependency(Dependency {
                job_id,
                on_failure: policy,
            });
        }
        steps.insert(spec.step, job.id().to_owned());
        jobs.push(job);
    }
    Ok((jobs, steps))
}

/// The job id of step `step` of workflow `workflow_id` when derived: a keyed
/// workflow's steps and every appended step.
pub(crate) fn step_id(workflow_id: &str, step: &str) -> String {
    derived_id(&["step", workflow_id, step])
}

/// The idempotency key of step `step` under the workflow's (or append's) `key`.
pub(crate) fn step_key(key: &IdempotencyKey, step: &str) -> Result<IdempotencyKey> {
    IdempotencyKey::new(format!("{}/{step}", key.as_str()))
}

/// The steps in an order where each comes after every step it waits for
/// (Kahn's algorithm, ties in the order given), or the error naming what is
/// wrong: a name that is neither a step nor an `existing` one
/// (`dependency-not-found`), or a cycle. Edges to existing steps order nothing.
fn topological_order(
    steps: &[StepSpec],
    index: &HashMap<String, usize>,
    existing: &HashMap<String, String>,
) -> Result<Vec<usize>> {
    let mut waiting = vec![0usize; steps.len()];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); steps.len()];
    for (i, spec) in steps.iter().enumerate() {
        let mut seen = HashSet::new();
        for dep in &spec.after {
            let Some(&d) = index.get(dep.as_str()) else {
                if existing.contains_key(dep.as_str()) {
                    continue;
                }
                return Err(Error::invalid(
                    ErrorCode::DependencyNotFound,
                    format!(
                        "step {:?} waits for {dep:?}, which is no step of the workflow",
                        spec.step
                    ),
                ));
            };
            if seen.insert(d) {
                waiting[i] += 1;
                dependents[d].push(i);
            }
        }
    }
    let mut ready: VecDeque<usize> = (0..steps.len()).filter(|i| waiting[*i] == 0).collect();
    let mut order = Vec::with_capacity(steps.len());
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &d in &dependents[i] {
            waiting[d] -= 1;
            if waiting[d] == 0 {
                ready.push_back(d);
            }
        }
    }
    if order.len() < steps.len() {
        let stuck: Vec<&str> = (0..steps.len())
            .filter(|i| waiting[*i] > 0)
            .map(|i| steps[i].step.as_str())
            .collect();
        return Err(Error::invalid(
            ErrorCode::WorkflowCycle,
            format!("steps {stuck:?} wait for each other in a circle"),
        ));
    }
    Ok(order)
}

/// A UUID (version 8, RFC 9562's custom layout) from the SHA-256 of `parts`.
pub(crate) fn derived_id(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Uuid::new_v8(bytes).to_string()
}
