//! OTLP trace export (feature `otel`, `docs/tracing.md`): when
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set,
//! `duraq worker` and `duraq enqueue` add an OpenTelemetry layer to their log
//! subscriber and send its spans, in batches, as OTLP over HTTP with JSON
//! bodies (the other `OTEL_*` variables the SDK reads apply: headers, timeout,
//! batch sizes, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`). Without those
//! variables nothing is installed.
//!
//! The batch processor exports from a thread of its own, outside the tokio
//! runtime, so the HTTP client here ([`RuntimeClient`]) hands each request to
//! the runtime the program already runs, over the `reqwest` client it already
//! links, instead of bringing a blocking client (a second `reqwest`) along.

use std::time::Duration;

use duraq_core::async_trait;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tokio::runtime::Handle;
use tracing::Subscriber;
use tracing_subscriber::filter::{Filtered, LevelFilter};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The variables that turn export on (either one).
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The service name when `OTEL_SERVICE_NAME` (and `service.name` in
/// `OTEL_RESOURCE_ATTRIBUTES`) say none.
const DEFAULT_SERVICE: &str = "duraq";

/// The layer that turns `tracing` spans at `info` and above into OpenTelemetry spans.
pub type OtelLayer<S> = Filtered<
    tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>,
    LevelFilter,
    S,
>;

/// The installed exporter, flushed by [`Telemetry::shutdown`].
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    /// Why export was asked for but is off, said once the subscriber is up.
    pub problem: Option<String>,
}

impl Telemetry {
    /// Sends the spans still waiting and stops the exporter (a no-op when none
    /// was installed). Call it outside the runtime, which must still be alive.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider {
            if let Err(e) = provider.shutdown() {
                eprintln!("warning: exporting the last traces failed: {e}");
            }
        }
    }
}

/// Whether the environment asks for OTLP export.
pub fn wanted(lookup: impl Fn(&str) -> Option<String>) -> bool {
    ENDPOINT_VARS
        .iter()
        .any(|var| lookup(var).is_some_and(|v| !v.trim().is_empty()))
}

/// The OpenTelemetry layer for `duraq worker` / `duraq enqueue` (`enabled`),
/// when the environment asks for export; spans go through `runtime`.
pub fn layer<S>(enabled: bool, runtime: &Handle) -> (Option<OtelLayer<S>>, Telemetry)
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let off = |problem| {
        (
            None,
            Telemetry {
                provider: None,
                problem,
            },
        )
    };
    if !enabled || !wanted(|var| std::env::var(var).ok()) {
        return off(None);
    }
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpJson)
        .with_http_client(RuntimeClient::new(runtime.clone()))
        .build();
    let exporter = match exporter {
        Ok(e) => e,
        Err(e) => return off(Some(format!("OTLP export is off: {e}"))),
    };
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none()
        && !std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="))
    {
        resource = resource.with_service_name(DEFAULT_SERVICE);
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("duraq");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(LevelFilter::INFO);
    (
        Some(layer),
        Telemetry {
            provider: Some(provider),
            problem: None,
        },
    )
}

/// An OTLP HTTP client that runs each request on the program's tokio runtime.
#[derive(Debug)]
struct RuntimeClient {
    runtime: Handle,
    client: reqwest::Client,
}

impl RuntimeClient {
    fn new(runtime: Handle) -> Self {
        let client = reqwest::Client::builder()
            .timeout(export_timeout(|var| std::env::var(var).ok()))
            .build()
            .unwrap_or_default();
        Self { runtime, client }
    }
}

/// The time one export may take: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else the specification's 10 s.
/// A client of our own must apply it itself.
fn export_timeout(lookup: impl Fn(&str) -> Option<String>) -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .into_iter()
    .find_map(|var| lookup(var)?.trim().parse::<u64>().ok())
    .map_or(Duration::from_secs(10), Duration::from_millis)
}

#[async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let answer = self.runtime.spawn(async move {
            let response = client.execute(request).await?;
            let status = response.status();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, body))
        });
        let (status, body) = answer.await??;
        Ok(Response::builder().status(status).body(body)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_endpoint_variable_turns_export_on() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |var: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == var)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(!wanted(env(&[])));
        assert!(!wanted(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])));
        assert!(wanted(env(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://c:4318"
        )])));
        assert!(wanted(env(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://c:4318/v1/traces"
        )])));
        assert!(!wanted(env(&[("OTEL_SERVICE_NAME", "x")])));
        assert_eq!(export_timeout(env(&[])), Duration::from_secs(10));
        let both = env(&[
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700"),
        ]);
        assert_eq!(export_timeout(both), Duration::from_millis(700));
        let general = env(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "2500")]);
        assert_eq!(export_timeout(general), Duration::from_millis(2500));
        let junk = env(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")]);
        assert_eq!(export_timeout(junk), Duration::from_secs(10));
    }
}
