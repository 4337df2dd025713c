//! The OpenTelemetry side of [`super`] (feature `otel`): the attempt span's
//! name, kind, attributes and link, and its status when the attempt fails,
//! through `tracing-opentelemetry`'s span extension, so core needs only the
//! OpenTelemetry API and whichever subscriber the application installs. The
//! attributes are set on the OpenTelemetry span directly, not as `tracing`
//! fields, so log lines keep the fields they had.

use opentelemetry::trace::{SpanContext, SpanId, Status, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::TraceParent;
use crate::requests::Outcome;
use crate::Job;

/// The `messaging.system` of every attempt span.
const SYSTEM: &str = "duraq";

pub(super) fn attempt_span(job: &Job) -> tracing::Span {
    let span = tracing::info_span!(
        target: super::ATTEMPT_TARGET,
        "job",
        job_id = %job.id,
        job_name = %job.job_name,
        attempt = job.attempts,
        queue = %job.queue,
        otel.name = %job.job_name,
        otel.kind = "consumer",
    );
    if span.is_disabled() {
        return span;
    }
    span.set_attribute("messaging.system", SYSTEM);
    span.set_attribute("messaging.operation.type", "process");
    span.set_attribute("messaging.destination.name", job.queue.clone());
    span.set_attribute("messaging.message.id", job.id.clone());
    span.set_attribute("duraq.job.id", job.id.clone());
    span.set_attribute("duraq.job.name", job.job_name.clone());
    span.set_attribute("duraq.queue", job.queue.clone());
    span.set_attribute("duraq.attempt", job.attempts);
    // A stored context that no longer parses (written by hand into the
    // database) is no link rather than a failed attempt.
    if let Some(link) = job
        .trace_parent
        .as_deref()
        .and_then(|text| TraceParent::parse(text).ok())
    {
        span.add_link(span_context(&link));
    }
    span
}

/// The remote span context a stored `traceparent` names.
fn span_context(tp: &TraceParent) -> SpanContext {
    SpanContext::new(
        TraceId::from_hex(tp.trace_id()).unwrap_or(TraceId::INVALID),
        SpanId::from_hex(tp.parent_id()).unwrap_or(SpanId::INVALID),
        TraceFlags::new(tp.flags()),
        true,
        TraceState::NONE,
    )
}

pub(super) fn record_outcome(span: &tracing::Span, outcome: &Outcome) {
    let name = match outcome {
        Outcome::Completed | Outcome::CompletedWith { .. } => "completed",
        Outcome::Failed { .. } => "failed",
        Outcome::Reschedule { .. } => "rescheduled",
        Outcome::ReturnToQueue => "returned",
        Outcome::AwaitSignal { .. } => "awaiting_signal",
    };
    span.set_attribute("duraq.outcome", name);
    if let Outcome::Failed { error, .. } = outcome {
        span.set_status(Status::error(error.clone()));
    }
}
