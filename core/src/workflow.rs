//! Workflows (`docs/workflows.md`): a named group of jobs inserted at once,
//! whose steps have names local to the workflow and wait for each other by
//! those names. A workflow is nothing a store must learn: [`Workflow::build`]
//! checks the graph (names, duplicates, unknown steps, cycles) before anything
//! is written, orders the steps so that each comes after the steps it waits
//! for, and turns the names into job-id dependencies; [`enqueue_workflow`] then
//! inserts them with one `enqueue_batch`, all or nothing.
//!
//! An idempotency key on the workflow makes its ids a function of the key (the
//! workflow's and each step's job id are derived from it), and gives every step
//! the idempotency key `<key>/<step>`: a retried request replays every step, so
//! it answers with the ids of the first.
//!
//! The graph checks are in `workflow_graph.rs`, shared with
//! `workflow_append.rs`, which adds steps to a workflow that already exists.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};
use crate::job::DependencyFailure;
use crate::keys::{check_name, IdempotencyKey};
use crate::new_job::{new_job_id, NewJob};
use crate::requests::EnqueueOutcome;
use crate::search::{JobCursor, JobFilter};
use crate::store::{Inspect, Producer};
use crate::workflow_graph::{derived_id, plan_steps, StepSpec};
use crate::workflow_list::{WorkflowListRequest, WorkflowState, WorkflowTally};
use crate::Job;

/// The step name of a batch's callback ([`Workflow::batch`]).
pub const BATCH_CALLBACK: &str = "callback";

/// A workflow being described: its name, an optional idempotency key, and its
/// steps in any order.
///
/// ```
/// use duraq_core::{EnqueueOptions, NewJob, Workflow};
/// use serde_json::json;
/// let job = |name: &str| NewJob::new(name, json!({"user": 7}), EnqueueOptions::new()).unwrap();
/// let plan = Workflow::new("onboard")
///     .step("signup", job("create_account"))
///     .step_after("welcome", job("send_welcome"), ["signup"])
///     .step_after("storage", job("provision_storage"), ["signup"])
///     .step_after("summary", job("summarize"), ["welcome", "storage"])
///     .build()
///     .unwrap();
/// assert_eq!(plan.jobs.len(), 4);
/// let summary = plan.jobs.iter().find(|j| j.id() == plan.steps["summary"]).unwrap();
/// assert_eq!(summary.dependencies().len(), 2);
///
/// let cycle = Workflow::new("loop")
///     .step_after("a", job("a"), ["b"])
///     .step_after("b", job("b"), ["a"])
///     .build()
///     .unwrap_err();
/// assert_eq!(cycle.code().as_str(), "workflow-cycle");
/// ```
#[derive(Debug)]
pub struct Workflow {
    name: String,
    idempotency_key: Option<String>,
    steps: Vec<StepSpec>,
}

/// A checked workflow, ready to insert: its id, its jobs in insertion order
/// (each after the steps it waits for), and each step's job id.
#[derive(Debug)]
pub struct WorkflowPlan {
    /// The workflow's id (derived from its idempotency key when it has one).
    pub workflow_id: String,
    /// The steps' jobs, each after every step it waits for.
    pub jobs: Vec<NewJob>,
    /// Step name → job id.
    pub steps: BTreeMap<String, String>,
}

/// What [`enqueue_workflow`] did. JSON `{"workflowId", "jobs": {step: id}, "replayed"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowOutcome {
    /// The workflow's id.
    pub workflow_id: String,
    /// Step name → job id.
    pub jobs: BTreeMap<String, String>,
    /// Whether every step was a replay of an earlier request with the same key.
    pub replayed: bool,
}

impl Workflow {
    /// A workflow named `name` (1–255 characters, no control characters).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            idempotency_key: None,
            steps: Vec::new(),
        }
    }

    /// Makes the whole workflow idempotent under `key`.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// A step that waits for no other step.
    pub fn step(self, step: impl Into<String>, job: NewJob) -> Self {
        self.step_after(step, job, std::iter::empty::<String>())
    }

    /// A step that waits for the steps named in `after` (under the job's own
    /// dependency failure policy); the job's own `after` ids are kept too.
    pub fn step_after<S: Into<String>>(
        mut self,
        step: impl Into<String>,
        job: NewJob,
        after: impl IntoIterator<Item = S>,
    ) -> Self {
        self.steps.push(StepSpec {
            step: step.into(),
            job,
            after: after.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// A batch: `jobs` run on their own (steps `job-1`, `job-2`, …), and
    /// `callback` (step [`BATCH_CALLBACK`]) runs once, when every one of them
    /// has finished, whatever its outcome (its edges take the `run` policy).
    /// It reads how they ended from [`crate::JobContext::dependency_counts`]
    /// and [`crate::JobContext::dependencies`].
    ///
    /// ```
    /// use duraq_core::{DependencyFailure, EnqueueOptions, NewJob, Workflow};
    /// use duraq_core::driver::BATCH_CALLBACK;
    /// let job = |name: &str| NewJob::new(name, serde_json::json!([]), EnqueueOptions::new()).unwrap();
    /// let plan = Workflow::batch("imports", (0..3).map(|_| job("import")), job("report")).build().unwrap();
    /// let callback = plan.jobs.iter().find(|j| j.id() == plan.steps[BATCH_CALLBACK]).unwrap();
    /// assert_eq!(callback.dependencies().len(), 3);
    /// assert!(callback.dependencies().iter().all(|d| d.on_failure == DependencyFailure::Run));
    /// ```
    pub fn batch(
        name: impl Into<String>,
        jobs: impl IntoIterator<Item = NewJob>,
        callback: NewJob,
    ) -> Self {
        let mut flow = Self::new(name);
        let mut steps = Vec::new();
        for (i, job) in jobs.into_iter().enumerate() {
            let step = format!("job-{}", i + 1);
            flow = flow.step(step.clone(), job);
            steps.push(step);
        }
        let callback = callback.with_dependency_policy(DependencyFailure::Run);
        flow.step_after(BATCH_CALLBACK, callback, steps)
    }

    /// Checks and orders the workflow. Errors, with nothing decided:
    /// `invalid-workflow` (a bad name or step name, no steps),
    /// `duplicate-step`, `dependency-not-found` (an `after` naming no step),
    /// `workflow-cycle`, and `unsupported-option` for a step with an
    /// idempotency key of its own in a workflow that has one.
    pub fn build(self) -> Result<WorkflowPlan> {
        check_name(&self.name, ErrorCode::InvalidWorkflow, "a workflow name")?;
        if self.steps.is_empty() {
            return Err(Error::invalid(
                ErrorCode::InvalidWorkflow,
                format!("workflow {:?} has no steps", self.name),
            ));
        }
        let key = self
            .idempotency_key
            .as_deref()
            .map(IdempotencyKey::new)
            .transpose()?;
        let workflow_id = match &key {
            Some(key) => derived_id(&["workflow", &self.name, key.as_str()]),
            None => new_job_id(),
        };
        let derive_ids = key.is_some();
        let (jobs, steps) = plan_steps(
            &workflow_id,
            Some(&self.name),
            key.as_ref(),
            self.steps,
            &HashMap::new(),
            derive_ids,
        )?;
        Ok(WorkflowPlan {
            workflow_id,
            jobs,
            steps,
        })
    }
}

/// Every step of workflow `workflow_id`, oldest first, read in pages of the
/// store's search (`JobFilter::workflow_id`); `workflow-not-found` when no job
/// carries the id. What `duraq workflows` and the dashboard's workflow page show.
pub async fn workflow_steps<S: Inspect + ?Sized>(store: &S, workflow_id: &str) -> Result<Vec<Job>> {
    const PAGE: usize = 500;
    let mut filter = JobFilter {
        workflow_id: Some(workflow_id.to_owned()),
        limit: Some(PAGE),
        ..JobFilter::default()
    };
    let mut jobs = Vec::new();
    loop {
        let page = store.search_jobs(&filter).await?;
        let last = page.jobs.last().map(JobCursor::after);
        let full = page.jobs.len() == PAGE;
        jobs.extend(page.jobs);
        filter.after = match (page.resume, last) {
            (Some(resume), _) => Some(resume),
            (None, Some(cursor)) if full => Some(cursor),
            _ => break,
        };
    }
    if jobs.is_empty() {
        return Err(Error::NotFound {
            code: ErrorCode::WorkflowNotFound,
            message: format!("no workflow with id {workflow_id}"),
        });
    }
    jobs.reverse();
    Ok(jobs)
}

/// The workflow `input` names: the workflow with exactly that id, else the
/// only one whose id starts with it (case-insensitive, as `jobs show` takes a
/// job's). One read of at most two workflows ([`Inspect::list_workflows`]
/// from just past the ids starting with `input`), so no store needs to learn
/// prefixes.
///
/// Errors: `invalid-id` (see [`crate::inspect::check_id_prefix`]), `workflow-not-found`
/// when no workflow id starts with it, `ambiguous-id` when several do.
///
/// ```
/// # duraq_core::__private::tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use duraq_core::{enqueue_workflow, EnqueueOptions, MemoryStore, NewJob, Workflow};
/// use duraq_core::inspect::resolve_workflow;
/// let store = MemoryStore::new();
/// let job = NewJob::new("report", serde_json::json!([]), EnqueueOptions::new()).unwrap();
/// let id = enqueue_workflow(&store, Workflow::new("w").step("a", job)).await.unwrap().workflow_id;
/// assert_eq!(resolve_workflow(&store, &id[..8]).await.unwrap(), id);
/// let err = resolve_workflow(&store, "ffff").await.unwrap_err();
/// assert_eq!(err.code().as_str(), "workflow-not-found");
/// # });
/// ```
pub async fn resolve_workflow<S: Inspect + ?Sized>(store: &S, input: &str) -> Result<String> {
    crate::resolve::check_id_prefix(input)?;
    let prefix = input.to_ascii_lowercase();
    let found: Vec<String> = match past_prefix(&prefix) {
        Some(before) => store
            .list_workflows(&WorkflowListRequest {
                before: Some(before),
                limit: 2,
                name: None,
            })
            .await?
            .into_iter()
            .map(|w| w.workflow_id)
            .filter(|id| id.starts_with(&prefix))
            .collect(),
        // Not a UUID's start: only the exact id can match.
        None => {
            let filter = JobFilter {
                workflow_id: Some(input.to_owned()),
                limit: Some(1),
                ..JobFilter::default()
            };
            let page = store.search_jobs(&filter).await?;
            page.jobs.into_iter().map(|_| input.to_owned()).collect()
        }
    };
    match found.as_slice() {
        [] => Err(Error::NotFound {
            code: ErrorCode::WorkflowNotFound,
            message: format!("no workflow id starts with {input:?}"),
        }),
        [one] => Ok(one.clone()),
        [first, ..] if *first == prefix => Ok(first.clone()),
        _ => Err(Error::invalid(
            ErrorCode::AmbiguousId,
            format!("several workflows have an id starting with {input:?}; type more of it"),
        )),
    }
}

/// The least text sorting after every UUID starting with `prefix` (lowercase
/// hex digits and dashes), in byte order and in any collation that orders
/// digits before letters: the last digit moved up by one (`9` to `a`, `f` to
/// `g`), trailing dashes dropped first. `None` for what starts no UUID.
fn past_prefix(prefix: &str) -> Option<String> {
    let trimmed = prefix.trim_end_matches('-');
    if !prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return None;
    }
    let last = trimmed.chars().last()?;
    let next = match last {
        '9' => 'a',
        c => char::from(c as u8 + 1),
    };
    Some(format!("{}{next}", &trimmed[..trimmed.len() - 1]))
}

/// Counts the workflows per state, walking [`Inspect::list_workflows`] in
/// pages up to `budget` workflows (then `truncated`).
///
/// ```
/// # duraq_core::__private::tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use duraq_core::{enqueue_workflow, EnqueueOptions, MemoryStore, NewJob, Workflow};
/// use duraq_core::inspect::workflow_tally;
/// let store = MemoryStore::new();
/// let job = |name: &str| NewJob::new(name, serde_json::json!([]), EnqueueOptions::new()).unwrap();
/// enqueue_workflow(&store, Workflow::new("w").step("a", job("a"))).await.unwrap();
/// let tally = workflow_tally(&store, 1_000).await.unwrap();
/// assert_eq!((tally.active, tally.completed, tally.truncated), (1, 0, false));
/// # });
/// ```
pub async fn workflow_tally(store: &dyn Inspect, budget: usize) -> Result<WorkflowTally> {
    const PAGE: usize = 500;
    let mut tally = WorkflowTally::default();
    let mut seen = 0usize;
    let mut req = WorkflowListRequest {
        before: None,
        limit: PAGE.min(budget),
        name: None,
    };
    loop {
        let page = if req.limit == 0 {
            Vec::new()
        } else {
            store.list_workflows(&req).await?
        };
        for summary in &page {
            match summary.state() {
                WorkflowState::Active => tally.active += 1,
                WorkflowState::Completed => tally.completed += 1,
                WorkflowState::Failed => tally.failed += 1,
            }
        }
        seen += page.len();
        if let Some(last) = page.last() {
            req.before = Some(last.workflow_id.clone());
        }
        if page.len() < req.limit {
            return Ok(tally);
        }
        if seen >= budget {
            req.limit = 1;
            tally.truncated = !store.list_workflows(&req).await?.is_empty();
            return Ok(tally);
        }
        req.limit = PAGE.min(budget - seen);
    }
}

/// Inserts `workflow` with one `enqueue_batch`: every step or none.
///
/// ```
/// # duraq_core::__private::tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use duraq_core::{enqueue_workflow, EnqueueOptions, JobStatus, MemoryStore, NewJob, Workflow};
/// use duraq_core::prelude::*;
/// let store = MemoryStore::new();
/// let job = |name: &str| NewJob::new(name, serde_json::json!([]), EnqueueOptions::new()).unwrap();
/// let flow = || Workflow::new("nightly").idempotency_key("2026-12-04")
///     .step("export", job("export"))
///     .step_after("report", job("report"), ["export"]);
/// let first = enqueue_workflow(&store, flow()).await.unwrap();
/// let report = store.get_job(&first.jobs["report"]).await.unwrap().unwrap();
/// assert_eq!(report.status, JobStatus::Pending);
/// let again = enqueue_workflow(&store, flow()).await.unwrap();
/// assert_eq!((again.jobs, again.replayed), (first.jobs, true));
/// # });
/// ```
pub async fn enqueue_workflow(store: &dyn Producer, workflow: Workflow) -> Result<WorkflowOutcome> {
    let plan = workflow.build()?;
    let outcomes = store.enqueue_batch(plan.jobs).await?;
    Ok(WorkflowOutcome {
        workflow_id: plan.workflow_id,
        jobs: plan.steps,
        replayed: outcomes
            .iter()
            .all(|o| matches!(o, EnqueueOutcome::Replayed(_))),
    })
}

#[cfg(test)]
#[path = "workflow_tests.rs"]
mod tests;
