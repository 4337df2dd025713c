//! The one log subscriber every command installs (stderr, so stdout stays one
//! JSON object per command). The filter comes from `DURAQ_LOG`, else `RUST_LOG`
//! (env-filter directives such as `duraq_core=debug,warn`), else the command's
//! default; colours only on a terminal and never under `NO_COLOR`
//! (<https://no-color.org>: set and non-empty disables colour).
//!
//! `--log-format json` writes one JSON object per line instead (for log
//! shippers): the event's fields at the top level (`job_id`, `job_name`,
//! `attempt`, `error` of a failed attempt) beside `timestamp`, `level`,
//! `target` and `message`, never coloured.
//!
//! With the `otel` feature, `worker` and `enqueue` also export their spans over
//! OTLP when the `OTEL_*` variables ask for it (`crate::otel`, `docs/tracing.md`).

use std::io::IsTerminal;

use tokio::runtime::Handle;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

#[cfg(feature = "otel")]
use crate::otel;
#[cfg(feature = "otel")]
pub use crate::otel::Telemetry;

/// Without the `otel` feature: no exporter, nothing to flush.
#[cfg(not(feature = "otel"))]
mod otel {
    /// Nothing was installed.
    pub struct Telemetry {
        pub problem: Option<String>,
    }

    impl Telemetry {
        pub fn shutdown(self) {}
    }

    pub fn layer(
        _traces: bool,
        _runtime: &tokio::runtime::Handle,
    ) -> (Option<tracing_subscriber::layer::Identity>, Telemetry) {
        (None, Telemetry { problem: None })
    }
}
#[cfg(not(feature = "otel"))]
pub use otel::Telemetry;

/// How log lines are written (`--log-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the subscriber with `default` as the filter when no variable sets one.
/// `traces` (the commands that start traces: `worker`, `enqueue`) adds the OTLP
/// exporter when the build has the `otel` feature and the `OTEL_*` variables ask
/// for it (`crate::otel`); its spans go through `runtime`. The log filter
/// applies to the log lines only, so spans are exported whatever it says.
pub fn init(default: &str, format: LogFormat, traces: bool, runtime: &Handle) -> Telemetry {
    let filter = filter_from(|var| std::env::var(var).ok(), default);
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = match format {
        LogFormat::Text => lines
            .with_ansi(use_colour(
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR"),
            ))
            .boxed(),
        LogFormat::Json => lines
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_ansi(false)
            .boxed(),
    };
    let (spans, telemetry) = otel::layer(traces, runtime);
    let _ = tracing_subscriber::registry()
        .with(lines.with_filter(filter))
        .with(spans)
        .try_init();
    if let Some(problem) = &telemetry.problem {
        tracing::warn!("{problem}");
    }
    telemetry
}

/// `DURAQ_LOG` wins over `RUST_LOG`; an unparsable directive falls back to the next.
fn filter_from(lookup: impl Fn(&str) -> Option<String>, default: &str) -> EnvFilter {
    ["DURAQ_LOG", "RUST_LOG"]
        .into_iter()
        .filter_map(|var| lookup(var).filter(|v| !v.trim().is_empty()))
        .find_map(|directives| EnvFilter::try_new(directives).ok())
        .unwrap_or_else(|| EnvFilter::new(default))
}

fn use_colour(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |var| {
            pairs
                .iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn duraq_log_wins_then_rust_log_then_the_default() {
        let both = filter_from(
            lookup(&[("DURAQ_LOG", "debug"), ("RUST_LOG", "error")]),
            "info",
        );
        assert_eq!(both.to_string(), "debug");
        let rust = filter_from(lookup(&[("RUST_LOG", "error")]), "info");
        assert_eq!(rust.to_string(), "error");
        let none = filter_from(lookup(&[]), "warn");
        assert_eq!(none.to_string(), "warn");
    }

    #[test]
    fn no_color_turns_colour_off_even_on_a_terminal() {
        assert!(use_colour(true, None));
        assert!(!use_colour(true, Some("1".into())));
        assert!(use_colour(true, Some("".into())));
        assert!(!use_colour(false, None));
    }
}
