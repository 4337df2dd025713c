//! The trace context a job carries from its enqueue to its attempts
//! (`docs/tracing.md`), in the W3C Trace Context `traceparent` form
//! (`00-<trace-id>-<parent-id>-<flags>`).
//!
//! Storing it is not a feature: a producer may hand one over
//! ([`crate::EnqueueOptions::trace_parent`]), it is checked here
//! (`invalid-trace-parent`) and every store keeps it in a nullable column, so a
//! job without one costs nothing more. With the `otel` cargo feature, core
//! also *captures* the current `tracing` span's OpenTelemetry context when a
//! [`crate::NewJob`] is built without one, and each attempt's span links to
//! the stored context ([`attempt_span`]). The link (not a parent) follows the
//! OpenTelemetry messaging conventions: the attempt is a trace of its own,
//! which may run long after the request that enqueued it ended, many times
//! (retries), and alongside other jobs from other traces.

use std::fmt;

use crate::error::{Error, ErrorCode, Result};

/// A checked W3C `traceparent`: version `00`, a 32-digit trace id and a 16-digit
/// parent (span) id, neither all zeros, and the trace flags, all lower-case hex.
///
/// A header of a later version is accepted as the W3C rules say (its first four
/// fields read as version `00`, whatever follows a further `-` dropped) and
/// kept in the version `00` form.
///
/// ```
/// use duraq_core::TraceParent;
/// let tp = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
/// assert_eq!(tp.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
/// assert_eq!(tp.parent_id(), "00f067aa0ba902b7");
/// assert!(tp.sampled());
/// let bad = TraceParent::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01");
/// assert_eq!(bad.unwrap_err().code().as_str(), "invalid-trace-parent");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceParent(String);

/// The length of a version `00` `traceparent`.
const LEN: usize = 55;

impl TraceParent {
    /// Checks `text` (see the type's doc); anything else is `invalid-trace-parent`.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::invalid(
                ErrorCode::InvalidTraceParent,
                format!(
                    "traceParent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>): {why}"
                ),
            )
        };
        if text.len() < LEN || !text.is_ascii() {
            return Err(bad("too short, or not ASCII"));
        }
        let (head, rest) = text.split_at(LEN);
        let fields: Vec<&str> = head.split('-').collect();
        let [version, trace_id, parent_id, flags] = fields[..] else {
            return Err(bad("four fields separated by '-' expected"));
        };
        let hex = |s: &str, n: usize| {
            s.len() == n
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if !hex(version, 2) || !hex(trace_id, 32) || !hex(parent_id, 16) || !hex(flags, 2) {
            return Err(bad(
                "fields of lower-case hex digits of 2, 32, 16 and 2 expected",
            ));
        }
        match version {
            "ff" => return Err(bad("version ff is invalid")),
            "00" if !rest.is_empty() => return Err(bad("version 00 has exactly four fields")),
            _ if !rest.is_empty() && !rest.starts_with('-') => {
                return Err(bad("a later version's further fields follow a '-'"))
            }
            _ => {}
        }
        if trace_id.bytes().all(|b| b == b'0') || parent_id.bytes().all(|b| b == b'0') {
            return Err(bad("an all-zero trace id or parent id is invalid"));
        }
        Ok(Self(format!("00-{trace_id}-{parent_id}-{flags}")))
    }

    /// The header from its parts: a 16-byte trace id, an 8-byte span id and the
    /// trace flags. `None` when either id is all zeros (no trace).
    ///
    /// ```
    /// use duraq_core::TraceParent;
    /// let tp = TraceParent::from_parts(0x4bf92f3577b34da6a3ce929d0e0e4736, 0x00f067aa0ba902b7, 1).unwrap();
    /// assert_eq!(tp.as_str(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    /// assert_eq!(TraceParent::from_parts(0, 1, 1), None);
    /// ```
    pub fn from_parts(trace_id: u128, span_id: u64, flags: u8) -> Option<Self> {
        (trace_id != 0 && span_id != 0)
            .then(|| Self(format!("00-{trace_id:032x}-{span_id:016x}-{flags:02x}")))
    }

    /// The header text (version `00`), as stored in `traceParent`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 32 hex digits of the trace id.
    pub fn trace_id(&self) -> &str {
        &self.0[3..35]
    }

    /// The 16 hex digits of the parent (enqueuing) span's id.
    pub fn parent_id(&self) -> &str {
        &self.0[36..52]
    }

    /// The trace flags byte.
    pub fn flags(&self) -> u8 {
        u8::from_str_radix(&self.0[53..55], 16).expect("checked at parse")
    }

    /// Whether the `sampled` flag is set.
    pub fn sampled(&self) -> bool {
        self.flags() & 1 == 1
    }

    /// The header's text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The trace context a fresh job stores: the caller's, checked, or (with the
/// `otel` feature) the current span's when the caller gave none.
pub(crate) fn for_new_job(given: Option<&str>) -> Result<Option<TraceParent>> {
    match given {
        Some(text) => TraceParent::parse(text).map(Some),
        None => Ok(current()),
    }
}

/// The current `tracing` span's OpenTelemetry context, if it has a valid one.
#[cfg(feature = "otel")]
fn current() -> Option<TraceParent> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let span = tracing::Span::current();
    if span.is_none() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    if !sc.is_valid() {
        return None;
    }
    TraceParent::from_parts(
        u128::from_be_bytes(sc.trace_id().to_bytes()),
        u64::from_be_bytes(sc.span_id().to_bytes()),
        sc.trace_flags().to_u8(),
    )
}

/// Without the `otel` feature nothing is captured.
#[cfg(not(feature = "otel"))]
fn current() -> Option<TraceParent> {
    None
}

/// The target of the attempt span: where it was before this module, so that log
/// filters such as `duraq_core::worker=debug` keep selecting it.
const ATTEMPT_TARGET: &str = "duraq_core::worker::execute";

/// The span one attempt of `job` runs in. Its fields are the job's (`job_id`,
/// `job_name`, `attempt`, `queue`, in every log line of the attempt); with the
/// `otel` feature it also carries the OpenTelemetry name (the job's name), kind
/// (`consumer`) and attributes (`messaging.system = "duraq"`,
/// `messaging.destination.name`, `duraq.job.id`, `duraq.job.name`,
/// `duraq.queue`, `duraq.attempt`), and a link to the job's stored context.
pub(crate) fn attempt_span(job: &crate::Job) -> tracing::Span {
    #[cfg(not(feature = "otel"))]
    {
        tracing::info_span!(
            target: ATTEMPT_TARGET,
            "job",
            job_id = %job.id,
            job_name = %job.job_name,
            attempt = job.attempts,
            queue = %job.queue,
        )
    }
    #[cfg(feature = "otel")]
    {
        otel::attempt_span(job)
    }
}

/// Records an attempt's outcome on its span: with the `otel` feature, a failed
/// attempt sets the span's status to error with the attempt's message.
pub(crate) fn record_outcome(span: &tracing::Span, outcome: &crate::Outcome) {
    #[cfg(feature = "otel")]
    otel::record_outcome(span, outcome);
    #[cfg(not(feature = "otel"))]
    let _ = (span, outcome);
}

#[cfg(feature = "otel")]
#[path = "trace_otel.rs"]
mod otel;

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
