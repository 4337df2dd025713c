//! Tests of the search rule: `json_contains` against PostgreSQL's `@>`
//! examples and properties, `JobFilter::matches`, and `SearchScan` walks whose
//! resumes find exactly the matches of one unbounded pass.

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::rules::SearchScan;
use crate::search::{json_contains, JobCursor, JobFilter};
use crate::transitions::new_job_row;
use crate::{EnqueueOptions, Job, JobStatus, NewJob};

fn row(id: &str, created: i64, args: Value, error: Option<&str>) -> Job {
    let new = NewJob::new("j", args, EnqueueOptions::new())
        .unwrap()
        .with_id(id);
    let mut job = new_job_row(&new, created);
    job.last_error = error.map(str::to_owned);
    job
}

#[test]
fn containment_matches_postgres_examples() {
    // From the PostgreSQL manual, "jsonb Containment and Existence".
    let yes = [
        (json!("foo"), json!("foo")),
        (json!([1, 2, 3]), json!([1, 3])),
        (json!([1, 2, 3]), json!([3, 1])),
        (json!([1, 2, 3]), json!([1, 2, 2])),
        (
            json!({"product": "PostgreSQL", "version": 9.4, "jsonb": true}),
            json!({"version": 9.4}),
        ),
        (json!([1, 2, [1, 3]]), json!([[1, 3]])),
        (json!({"foo": {"bar": "baz"}}), json!({"foo": {}})),
        (json!(["foo", "bar"]), json!("foo")),
        (json!(1), json!(1.0)),
    ];
    for (h, n) in yes {
        assert!(json_contains(&h, &n), "{h} @> {n}");
    }
    let no = [
        (json!([1, 2, [1, 3]]), json!([1, 3])),
        (
            json!({"product": "PostgreSQL"}),
            json!({"product": "MySQL"}),
        ),
        (json!([1, 2, [1, 3]]), json!([[1, 2]])),
        (json!({"foo": {"bar": "baz"}}), json!({"bar": "baz"})),
        (json!("foo"), json!(["foo"])),
        (json!({"a": ["x"]}), json!({"a": "x"})),
        (json!({}), json!([])),
        (json!(null), json!(false)),
    ];
    for (h, n) in no {
        assert!(!json_contains(&h, &n), "not {h} @> {n}");
    }
}

#[test]
fn matches_reads_every_condition() {
    let mut failed = row("b", 2_000, json!({"to": "a@x"}), Some("SMTP Timeout"));
    failed.status = JobStatus::Failed;
    failed.failed_at_ms = Some(5_000);
    let queued = row("a", 1_000, json!({"to": "b@x"}), None);
    let f = |filter: JobFilter| (filter.matches(&failed), filter.matches(&queued));
    assert_eq!(f(JobFilter::default()), (true, true));
    let err = JobFilter {
        error_contains: Some("smtp TIME".into()),
        ..JobFilter::default()
    };
    assert_eq!(f(err), (true, false));
    let args = JobFilter {
        args_contains: Some(json!({"to": "b@x"})),
        ..JobFilter::default()
    };
    assert_eq!(f(args), (false, true));
    let finished = JobFilter {
        finished_before_ms: Some(i64::MAX),
        ..JobFilter::default()
    };
    assert_eq!(f(finished), (true, false), "a queued job never finished");
    let edge = JobFilter {
        finished_after_ms: Some(5_000),
        finished_before_ms: Some(5_001),
        ..JobFilter::default()
    };
    assert_eq!(f(edge), (true, false));
    let created = JobFilter {
        created_after_ms: Some(1_000),
        created_before_ms: Some(2_000),
        ..JobFilter::default()
    };
    assert_eq!(f(created), (false, true));
    let cursor = JobFilter {
        after: Some(JobCursor::after(&failed)),
        ..JobFilter::default()
    };
    assert_eq!(f(cursor), (false, true), "strictly after the cursor");
    let statuses = JobFilter {
        statuses: vec![JobStatus::Queued, JobStatus::Completed],
        ..JobFilter::default()
    };
    assert_eq!(f(statuses), (false, true));
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(|n| json!(n)),
        "[ab]{0,2}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[xyz]", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// `v` with some object keys and array elements dropped, recursively.
fn shrink(v: &Value, keep: &mut impl Iterator<Item = bool>) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m {
                if keep.next().unwrap_or(true) {
                    out.insert(k.clone(), shrink(v, keep));
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => {
            let mut out = Vec::new();
            for v in a {
                if keep.next().unwrap_or(true) {
                    out.push(shrink(v, keep));
                }
            }
            Value::Array(out)
        }
        other => other.clone(),
    }
}

proptest! {
    #[test]
    fn every_value_contains_itself_and_its_parts(v in json_value(), keep in prop::collection::vec(any::<bool>(), 0..32)) {
        prop_assert!(json_contains(&v, &v));
        let part = shrink(&v, &mut keep.into_iter());
        prop_assert!(json_contains(&v, &part), "{} @> {}", v, part);
    }

    #[test]
    fn resumed_walks_find_each_match_once(
        keys in prop::collection::vec((0i64..4, 0u8..3), 0..40),
        budget in 1usize..7,
        limit in 1usize..9,
    ) {
        let mut rows: Vec<Job> = keys
            .iter()
            .enumerate()
            .map(|(i, (t, k))| row(&format!("{i:02}"), *t, json!({"k": k}), None))
            .collect();
        rows.sort_by(|a, b| (b.created_at_ms, &b.id).cmp(&(a.created_at_ms, &a.id)));
        let needle = JobFilter { args_contains: Some(json!({"k": 0})), ..JobFilter::default() };
        let expected: Vec<String> = rows.iter().filter(|j| needle.matches(j)).map(|j| j.id.clone()).collect();
        let mut filter = JobFilter { scan_limit: Some(budget), limit: Some(limit), ..needle };
        let mut found = Vec::new();
        for _ in 0..=rows.len() + 1 {
            let page = SearchScan::run(&filter, |after, n| {
                Ok::<_, ()>(rows.iter().filter(|j| after.is_none_or(|c| c.precedes(j))).take(n).cloned().collect())
            }).unwrap();
            prop_assert!(page.scanned <= budget);
            prop_assert!(page.jobs.len() <= limit);
            found.extend(page.jobs.iter().map(|j| j.id.clone()));
            filter.after = match (page.resume, page.jobs.last()) {
                (Some(resume), _) => Some(resume),
                (None, Some(last)) if page.jobs.len() == limit => Some(JobCursor::after(last)),
                _ => break,
            };
        }
        prop_assert_eq!(found, expected);
    }
}
