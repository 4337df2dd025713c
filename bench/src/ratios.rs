//! duraq's figures as fractions of the bare driver's on the same schema (the
//! `raw-*` scenarios): the part of a gap to a target that is duraq's own
//! overhead, as opposed to the database's ceiling for these rows and indexes.

use std::collections::BTreeMap;

/// (duraq figure, raw figure it is compared with).
const PAIRS: &[(&str, &str)] = &[
    ("enqueue_one", "raw_one"),
    ("enqueue_batch", "raw_batch"),
    ("enqueue_8tasks", "raw_8conn"),
    ("enqueue_8procs", "raw_8conn"),
    ("drain_1w", "raw_drain"),
    ("drain_4w", "raw_drain"),
];

/// One comparison: `duraq / raw` of the two medians.
#[derive(Debug, PartialEq)]
pub struct Ratio {
    pub store: String,
    pub figure: &'static str,
    pub raw: &'static str,
    pub value: f64,
}

/// Every pair whose two medians were both measured, per store.
pub fn ratios(medians: &BTreeMap<(String, String), f64>, stores: &[String]) -> Vec<Ratio> {
    let get = |store: &str, figure: &str| medians.get(&(store.to_owned(), figure.to_owned()));
    let mut out = Vec::new();
    for store in stores {
        for (figure, raw) in PAIRS {
            if let (Some(d), Some(r)) = (get(store, figure), get(store, raw)) {
                if *r > 0.0 {
                    out.push(Ratio {
                        store: store.clone(),
                        figure,
                        raw,
                        value: d / r,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_measured_figures_only() {
        let mut m = BTreeMap::new();
        m.insert(("s".to_owned(), "enqueue_batch".to_owned()), 50.0);
        m.insert(("s".to_owned(), "raw_batch".to_owned()), 100.0);
        m.insert(("s".to_owned(), "drain_1w".to_owned()), 10.0);
        let got = ratios(&m, &["s".to_owned()]);
        assert_eq!(
            got,
            vec![Ratio {
                store: "s".into(),
                figure: "enqueue_batch",
                raw: "raw_batch",
                value: 0.5
            }]
        );
    }
}
