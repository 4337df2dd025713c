//! The building blocks of duraq's metric families: [`Sorted`], a family whose
//! series are encoded in label order, and [`LabelValue`], a label value that is
//! escaped when written.
//!
//! Why a label value type of its own: prometheus-client writes label values
//! as they are, so a queue named `m"q` ended the value early and made every
//! scrape unparseable. Both exposition formats (classic text 0.0.4 and
//! OpenMetrics) escape `\\`, `"` and newline the same way, so one encoder serves
//! both.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use prometheus_client::encoding::{
    EncodeLabelSet, EncodeLabelValue, EncodeMetric, LabelValueEncoder, MetricEncoder,
};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// A label value, escaped when encoded; ordered as its text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct LabelValue(String);

impl From<&str> for LabelValue {
    fn from(text: &str) -> Self {
        Self(text.to_owned())
    }
}

impl From<String> for LabelValue {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl EncodeLabelValue for LabelValue {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        let mut rest = self.0.as_str();
        while let Some(at) = rest.find(['\\', '"', '\n']) {
            encoder.write_str(&rest[..at])?;
            encoder.write_str(match rest.as_bytes()[at] {
                b'\\' => "\\\\",
                b'"' => "\\\"",
                _ => "\\n",
            })?;
            rest = &rest[at + 1..];
        }
        encoder.write_str(rest)
    }
}

/// One label: its name and value.
pub(crate) type Label = (&'static str, LabelValue);

/// A metric family whose series are encoded in the order of their label sets,
/// so the exposition is the same from one scrape to the next. Cheap to clone
/// (shared); each series is made on first use by `make`.
pub(crate) struct Sorted<S, M> {
    series: Arc<RwLock<BTreeMap<S, M>>>,
    make: fn() -> M,
}

impl<S, M> Clone for Sorted<S, M> {
    fn clone(&self) -> Self {
        Self {
            series: self.series.clone(),
            make: self.make,
        }
    }
}

impl<S: Ord, M: Default> Default for Sorted<S, M> {
    fn default() -> Self {
        Self::new(M::default)
    }
}

impl<S: Ord, M> Sorted<S, M> {
    /// An empty family whose series start as `make()`.
    pub(crate) fn new(make: fn() -> M) -> Self {
        Self {
            series: Arc::default(),
            make,
        }
    }

    /// Runs `f` on the series of `labels`, made first if it is new.
    pub(crate) fn with<R>(&self, labels: S, f: impl FnOnce(&M) -> R) -> R {
        if let Some(series) = self.read().get(&labels) {
            return f(series);
        }
        let mut all = self.series.write().unwrap_or_else(PoisonError::into_inner);
        f(all.entry(labels).or_insert_with(self.make))
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<S, M>> {
        self.series.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<S, M> EncodeMetric for Sorted<S, M>
where
    S: Ord + EncodeLabelSet,
    M: EncodeMetric + TypedMetric,
{
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, series) in self.read().iter() {
            series.encode(encoder.encode_family(labels)?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        M::TYPE
    }

    fn is_empty(&self) -> bool {
        self.read().is_empty()
    }
}

impl<S: Ord, M> std::fmt::Debug for Sorted<S, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sorted")
            .field("series", &self.read().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::registry::Registry;

    #[test]
    fn label_values_are_escaped() {
        let family = Sorted::<[Label; 1], Gauge>::default();
        family.with([("queue", "a\\b\"c\nd".into())], |g| g.set(1));
        let mut registry = Registry::default();
        registry.register("q", "Q", family);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(text.contains("q{queue=\"a\\\\b\\\"c\\nd\"} 1\n"), "{text}");
    }
}
