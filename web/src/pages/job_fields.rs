//! The job page's field list (`dl.fields`, one `[data-field]` per value), apart
//! from the page and its actions because it grows with every field a job
//! gains.
//!
//! A field that is at its default on almost every job is only a row when it is
//! not: the expiry (`expiresAt`), a cost other than 1 (`cost`), an ephemeral
//! job (`keepCompleted`, whose row is deleted when it completes), and why a
//! cancelled job was cancelled (`cancelReason`, its `data-reason` the stable
//! word: `operator`, `dependency` or `expired`), and a sequence (`sequenceKey`,
//! linking to the sequence's jobs, where the one in its way shows first by
//! creation), so an ordinary job's page stays as short as it was.

use duraq_core::{CancelReason, Job, JobStatus};
use maud::{html, Markup};

use crate::format::{label, urlencode, visible};
use crate::html::{link, time};
use crate::live::now_ms;
use crate::AppState;

/// What keeps a queued job of a sequence from its turn: a job of the
/// sequence that runs, or an earlier one that failed and holds it.
pub(super) struct HeldBy {
    id: String,
    status: JobStatus,
}

/// Who holds `job`'s sequence, if it is queued in one and someone does.
/// Reads only the sequence's running and failed jobs, which are few.
pub(super) async fn held_by(state: &AppState, job: &Job) -> duraq_core::Result<Option<HeldBy>> {
    let (Some(key), JobStatus::Queued) = (&job.sequence_key, job.status) else {
        return Ok(None);
    };
    let filter = duraq_core::inspect::JobFilter {
        sequence_key: Some(key.clone()),
        statuses: vec![JobStatus::HandedOff, JobStatus::Failed, JobStatus::Orphaned],
        limit: Some(100),
        ..Default::default()
    };
    let others = state.store.search_jobs(&filter).await?.jobs;
    let earlier = |j: &&Job| (j.created_at_ms, &j.id) < (job.created_at_ms, &job.id);
    let holder = (others.iter().find(|j| j.status == JobStatus::HandedOff))
        .or_else(|| (others.iter().filter(earlier)).find(|j| j.blocks_its_sequence()));
    Ok(holder.map(|j| HeldBy {
        id: j.id.clone(),
        status: j.status,
    }))
}

pub(super) fn fields(state: &AppState, job: &Job, held: Option<&HeldBy>) -> Markup {
    let now = now_ms();
    let text = |v: &Option<String>| v.as_deref().map(|s| visible(s).into_owned());
    html! {
        dl.fields {
            dt { "Status" } dd { span.status.(job.status.as_str()) data-field="status" data-status=(job.status.as_str()) { (label(job.status)) } }
            @if let (JobStatus::Cancelled, Some(reason)) = (job.status, job.cancel_reason) {
                dt { "Cancelled because" } dd data-field="cancelReason" data-reason=(reason.as_str()) { (because(reason)) }
            }
            dt { "Name" } dd data-field="jobName" { (visible(&job.job_name)) }
            dt { "Queue" } dd data-field="queue" { a href=(link(state, &format!("/jobs?queue={}", urlencode(&job.queue)))) { (visible(&job.queue)) } }
            dt { "Attempts" } dd data-field="attempts" { (job.attempts) " of " (job.max_retries.saturating_add(1)) }
            dt { "Created" } dd data-field="createdAt" { (time(Some(job.created_at_ms), now)) }
            dt { "Scheduled (due)" } dd data-field="scheduledAt" { (time(Some(job.scheduled_at_ms), now)) }
            dt { "Handed off" } dd data-field="handedOffAt" { (time(job.handed_off_at_ms, now)) }
            dt { "Completed" } dd data-field="completedAt" { (time(job.completed_at_ms, now)) }
            dt { "Failed" } dd data-field="failedAt" { (time(job.failed_at_ms, now)) }
            dt { "Cancelled" } dd data-field="cancelledAt" { (time(job.cancelled_at_ms, now)) }
            dt { "Orphaned" } dd data-field="orphanedAt" { (time(job.orphaned_at_ms, now)) }
            dt { "Schedule key" } dd data-field="scheduleKey" { @match &job.schedule_key {
                Some(k) => {
                    a href=(link(state, &format!("/keys?key={}", urlencode(k)))) { (visible(k)) }
                    @if let Some(order) = job.schedule_order { span.muted { " (order " (order) ")" } }
                },
                None => span.muted { "—" },
            } }
            dt { "Idempotency key" } dd data-field="idempotencyKey" { (opt(text(&job.idempotency_key))) }
            dt { "Concurrency key" } dd data-field="concurrencyKey" { (opt(text(&job.concurrency_key)))
                @if let Some(n) = job.max_concurrency { span.muted { " (at most " (n) " at once)" } } }
            dt { "Timeout" } dd data-field="timeout" { (opt(job.timeout_ms.map(crate::format::duration))) }
            dt { "Priority" } dd data-field="priority" { (job.priority) }
            dt { "Rate limit" } dd data-field="rateLimit" { @match job.rate_limit() {
                Some(r) => { (visible(&r.key)) span.muted { " (at most " (r.max) " per " (crate::format::duration(r.period_ms)) ")" } },
                None => span.muted { "—" },
            } }
            @if job.cost != 1 {
                dt { "Cost" } dd data-field="cost" { (job.cost) span.muted { " units of its concurrency cap and rate limit" } }
            }
            @if !job.keep_completed {
                dt { "On completion" } dd data-field="keepCompleted" data-keep="false" {
                    "deleted (ephemeral)" span.muted { " — its row goes when it completes" }
                }
            }
            @if let Some(at) = job.expires_at_ms {
                dt { "Expires" } dd data-field="expiresAt" { (time(Some(at), now)) }
            }
            @if let Some(key) = &job.sequence_key {
                dt { "Sequence" } dd data-field="sequenceKey" {
                    a href=(link(state, &format!("/jobs?sequence={}", urlencode(key)))) { (visible(key)) }
                    span.muted { (if job.sequence_continues { " — its failure lets the next run" } else { " — its failure holds the rest" }) }
                }
                @if let Some(h) = held {
                    dt { "Waiting for" } dd data-field="heldBy" data-status=(h.status.as_str()) {
                        a href=(link(state, &format!("/jobs/{}", urlencode(&h.id)))) { code { (visible(&h.id)) } }
                        span.muted { (if h.status == JobStatus::HandedOff { " (running)" } else { " (failed: it holds the sequence until it is retried to completion, cancelled or deleted)" }) }
                    }
                }
            }
            @if let (Some(name), true) = (&job.awaiting_signal, job.is_awaiting_signal()) {
                @if let Some(child) = name.strip_prefix("duraq.child.") {
                    dt { "Waiting for child" } dd data-field="awaitingSignal" {
                        a href=(link(state, &format!("/jobs/{}", urlencode(child)))) { code { (visible(child)) } }
                        span.muted { " — times out " } (time(Some(job.scheduled_at_ms), now_ms()))
                    }
                } @else {
                    dt { "Waiting for signal" } dd data-field="awaitingSignal" {
                        code { (visible(name)) }
                        span.muted { " — times out " } (time(Some(job.scheduled_at_ms), now_ms()))
                    }
                }
            }
            @if let Some(parent) = &job.parent_id {
                dt { "Parent" } dd data-field="parentId" {
                    a href=(link(state, &format!("/jobs/{}", urlencode(parent)))) { code { (visible(parent)) } }
                    span.muted { " — spawned this job and gets its outcome" }
                }
            }
            @if let Some(key) = &job.fairness_key {
                dt { "Fairness key" } dd data-field="fairnessKey" {
                    a href=(link(state, &format!("/jobs?fairness={}&queue={}", urlencode(key), urlencode(&job.queue)))) { (visible(key)) }
                    span.muted { " — takes turns with the other keys of its queue" }
                }
            }
            @if let Some(workflow) = &job.workflow_id {
                dt { "Workflow" } dd data-field="workflowId" {
                    a href=(link(state, &format!("/workflows/{}", urlencode(workflow)))) { code { (visible(workflow)) } }
                    @if let Some(step) = &job.step { span.muted { " (step " (visible(step)) ")" } }
                }
            }
            dt { "Worker" } dd data-field="workerId" { (opt(text(&job.worker_id))) }
            dt { "Lease (handoff id)" } dd data-field="handoffId" { (opt(text(&job.handoff_id))) }
        }
    }
}

pub(super) fn opt(value: Option<String>) -> Markup {
    match value {
        Some(v) => html! { (v) },
        None => html! { span.muted { "—" } },
    }
}

/// Why a job was cancelled, in words (a reason newer than this page: its
/// stable word).
fn because(reason: CancelReason) -> &'static str {
    match reason {
        CancelReason::Operator => "an operator cancelled it",
        CancelReason::Dependency => "a job it depends on did not complete",
        CancelReason::Expired => "it expired before it started",
        other => other.as_str(),
    }
}
