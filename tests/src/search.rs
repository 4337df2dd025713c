//! Job search: several statuses, each filter alone and
//! combined (queue, name, key, error text ignoring case, args containment with
//! jsonb `@>` semantics, created and finished bounds, half-open), the scan
//! budget (a budget smaller than the candidates answers `resume`, and going on
//! from it finds the rest, nothing twice), and id prefixes (unique, ambiguous,
//! none, invalid). A search writes nothing.

use duraq_core::inspect::{resolve_job, JobFilter, JobPage};
use duraq_core::{EnqueueOptions, ErrorCode, JobStatus, Outcome};
use serde_json::{json, Value};

use crate::harness::{expect_invalid, expect_not_found, job, Harness};

/// The page for `filter`, which must not write.
async fn search(h: &Harness, filter: JobFilter) -> JobPage {
    let before = h.state().await;
    let page = h.store.search_jobs(&filter).await.expect("search_jobs");
    h.assert_unchanged(&before, "search_jobs").await;
    page
}

/// The ids `filter` finds, in list order, on a complete page.
async fn ids(h: &Harness, filter: JobFilter) -> Vec<String> {
    let page = search(h, filter).await;
    assert_eq!(page.resume, None, "the default budget covers a small store");
    page.jobs.into_iter().map(|j| j.id).collect()
}

/// Inserts `id` (named `search-<id>`, so that claiming it takes no other job)
/// one second after the previous job, and drives it into `status`; a failed
/// job fails with `error`.
async fn put(h: &Harness, id: &str, queue: &str, args: Value, status: JobStatus, error: &str) {
    h.advance(1_000);
    let opts = EnqueueOptions::new().queue(queue).max_retries(0);
    let name = format!("search-{id}");
    h.insert(job(&name, args, opts).with_id(id)).await;
    if status == JobStatus::Failed {
        let claimed = h.claim_id(&format!("w-{id}"), &name, id).await;
        let outcome = Outcome::Failed {
            error: error.into(),
            retry_in_ms: None,
            discard: true,
        };
        assert!(h.report(&claimed, outcome).await);
    } else {
        h.drive_to(id, &name, status).await;
    }
}

/// a (queued, mail), b (failed "Connection TIMEOUT", mail), c (completed,
/// web), d (failed "disk full", web), e (cancelled, mail): created one second
/// apart in that order, so list order is e, d, c, b, a.
async fn five(h: &Harness) {
    put(
        h,
        "a",
        "mail",
        json!({"user": {"id": 1, "tags": ["x"]}}),
        JobStatus::Queued,
        "",
    )
    .await;
    put(
        h,
        "b",
        "mail",
        json!({"user": {"id": 2}, "n": 1}),
        JobStatus::Failed,
        "Connection TIMEOUT",
    )
    .await;
    put(
        h,
        "c",
        "web",
        json!([1, [2, 3], "s"]),
        JobStatus::Completed,
        "",
    )
    .await;
    put(
        h,
        "d",
        "web",
        json!({"user": {"id": 1, "tags": ["x", "y"]}}),
        JobStatus::Failed,
        "disk full",
    )
    .await;
    put(h, "e", "mail", json!("plain"), JobStatus::Cancelled, "").await;
}

pub async fn several_statuses_match_any_of_them(h: &Harness) {
    five(h).await;
    let f = |statuses: Vec<JobStatus>| JobFilter {
        statuses,
        ..JobFilter::default()
    };
    assert_eq!(ids(h, f(vec![])).await, ["e", "d", "c", "b", "a"]);
    assert_eq!(ids(h, f(vec![JobStatus::Failed])).await, ["d", "b"]);
    let failed_or_cancelled = f(vec![JobStatus::Cancelled, JobStatus::Failed]);
    assert_eq!(ids(h, failed_or_cancelled).await, ["e", "d", "b"]);
    assert_eq!(
        ids(h, f(vec![JobStatus::Orphaned])).await,
        Vec::<String>::new()
    );
}

pub async fn each_filter_narrows_alone_and_combined(h: &Harness) {
    five(h).await;
    let t = |i: i64| crate::harness::T0 + i * 1_000;
    let cases: Vec<(JobFilter, Vec<&str>)> = vec![
        (
            JobFilter {
                queue: Some("web".into()),
                ..JobFilter::default()
            },
            vec!["d", "c"],
        ),
        (
            JobFilter {
                job_name: Some("other".into()),
                ..JobFilter::default()
            },
            vec![],
        ),
        (
            JobFilter {
                error_contains: Some("full".into()),
                ..JobFilter::default()
            },
            vec!["d"],
        ),
        (
            JobFilter {
                args_contains: Some(json!({"user": {"id": 1}})),
                ..JobFilter::default()
            },
            vec!["d", "a"],
        ),
        (
            JobFilter {
                created_after_ms: Some(t(4)),
                ..JobFilter::default()
            },
            vec!["e", "d"],
        ),
        (
            JobFilter {
                created_before_ms: Some(t(2)),
                ..JobFilter::default()
            },
            vec!["a"],
        ),
        (
            JobFilter {
                statuses: vec![JobStatus::Failed, JobStatus::Queued],
                queue: Some("mail".into()),
                args_contains: Some(json!({"user": {}})),
                created_after_ms: Some(t(1)),
                created_before_ms: Some(t(3)),
                ..JobFilter::default()
            },
            vec!["b", "a"],
        ),
        (
            JobFilter {
                queue: Some("mail".into()),
                error_contains: Some("timeout".into()),
                job_name: Some("search-b".into()),
                ..JobFilter::default()
            },
            vec!["b"],
        ),
    ];
    for (filter, want) in cases {
        assert_eq!(ids(h, filter.clone()).await, want, "{filter:?}");
    }
}

pub async fn args_containment_follows_jsonb(h: &Harness) {
    five(h).await;
    let args = |v: Value| JobFilter {
        args_contains: Some(v),
        ..JobFilter::default()
    };
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"user": {"tags": ["y"]}}), vec!["d"]),
        (json!({"user": {"tags": ["x"]}}), vec!["d", "a"]),
        (json!({"user": {"tags": "x"}}), vec![]),
        (json!({"n": 1.0}), vec!["b"]),
        (json!({"n": "1"}), vec![]),
        (json!({}), vec!["d", "b", "a"]),
        (json!([[3]]), vec!["c"]),
        (json!([3]), vec![]),
        (json!("s"), vec!["c"]),
        (json!("plain"), vec!["e"]),
        (json!([]), vec!["c"]),
    ];
    for (needle, want) in cases {
        assert_eq!(ids(h, args(needle.clone())).await, want, "args @> {needle}");
    }
}

pub async fn error_text_ignores_case(h: &Harness) {
    five(h).await;
    let err = |s: &str| JobFilter {
        error_contains: Some(s.into()),
        ..JobFilter::default()
    };
    assert_eq!(ids(h, err("connection timeout")).await, ["b"]);
    assert_eq!(ids(h, err("TIMEOUT")).await, ["b"]);
    assert_eq!(ids(h, err("DISK")).await, ["d"]);
    assert_eq!(
        ids(h, err("")).await,
        ["d", "b"],
        "an empty text matches every error"
    );
    assert_eq!(ids(h, err("nope")).await, Vec::<String>::new());
}

pub async fn finished_bounds_match_terminal_jobs_only(h: &Harness) {
    five(h).await;
    let b = h.get("b").await.terminal_at_ms().expect("b finished");
    let d = h.get("d").await.terminal_at_ms().expect("d finished");
    assert!(b < d);
    let after = |t: i64| JobFilter {
        finished_after_ms: Some(t),
        ..JobFilter::default()
    };
    let before = |t: i64| JobFilter {
        finished_before_ms: Some(t),
        ..JobFilter::default()
    };
    assert_eq!(
        ids(h, after(i64::MIN)).await,
        ["e", "d", "c", "b"],
        "queued a is not finished"
    );
    assert_eq!(
        ids(h, after(d)).await,
        ["e", "d"],
        "the lower bound is inclusive"
    );
    assert_eq!(
        ids(h, before(d)).await,
        ["c", "b"],
        "the upper bound is exclusive"
    );
    let window = JobFilter {
        finished_after_ms: Some(b),
        finished_before_ms: Some(b + 1),
        ..JobFilter::default()
    };
    assert_eq!(ids(h, window).await, ["b"]);
}

pub async fn a_small_scan_budget_resumes_without_repeats(h: &Harness) {
    for i in 0..10 {
        let args = json!({"k": i % 3});
        put(h, &format!("j{i}"), "q", args, JobStatus::Queued, "").await;
    }
    // A residual condition: 4 rows read per request, 4 matches among 10 rows.
    let mut filter = JobFilter {
        args_contains: Some(json!({"k": 0})),
        scan_limit: Some(4),
        limit: Some(100),
        ..JobFilter::default()
    };
    let (mut found, mut pages, mut stopped) = (Vec::new(), 0, 0);
    loop {
        let page = search(h, filter.clone()).await;
        assert!(
            page.scanned <= 4,
            "read {} rows on a budget of 4",
            page.scanned
        );
        pages += 1;
        found.extend(page.jobs.iter().map(|j| j.id.clone()));
        match page.resume {
            Some(resume) => {
                stopped += 1;
                filter.after = Some(resume);
            }
            None => break,
        }
        assert!(pages < 10, "the walk must end");
    }
    assert!(
        stopped >= 2,
        "10 candidates on a budget of 4 stop early twice"
    );
    assert_eq!(
        found,
        ["j9", "j6", "j3", "j0"],
        "every match once, in list order"
    );
    // Indexed conditions only: the budget still bounds a page.
    let indexed = JobFilter {
        statuses: vec![JobStatus::Queued],
        scan_limit: Some(3),
        limit: Some(5),
        ..JobFilter::default()
    };
    let first = search(h, indexed.clone()).await;
    let names: Vec<&str> = first.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!((names, first.scanned), (vec!["j9", "j8", "j7"], 3));
    let resume = first.resume.expect("the budget ran out before the limit");
    let rest = search(
        h,
        JobFilter {
            after: Some(resume),
            ..indexed
        },
    )
    .await;
    let names: Vec<&str> = rest.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(names, ["j6", "j5", "j4"]);
    // A full page is complete: no resume even though the budget is spent.
    let full = search(
        h,
        JobFilter {
            scan_limit: Some(2),
            limit: Some(2),
            ..JobFilter::default()
        },
    )
    .await;
    assert_eq!((full.jobs.len(), full.resume), (2, None));
}

pub async fn id_prefixes_resolve_to_one_job(h: &Harness) {
    for id in ["aa01", "aa02", "ab01", "ab"] {
        put(h, id, "q", json!([]), JobStatus::Queued, "").await;
    }
    let before = h.state().await;
    let store = h.store.as_ref();
    assert_eq!(
        resolve_job(store, "aa02").await.unwrap().id,
        "aa02",
        "an exact id"
    );
    assert_eq!(
        resolve_job(store, "ab").await.unwrap().id,
        "ab",
        "exact beats prefix"
    );
    assert_eq!(
        resolve_job(store, "ab0").await.unwrap().id,
        "ab01",
        "a unique prefix"
    );
    expect_invalid(resolve_job(store, "aa").await, ErrorCode::AmbiguousId);
    expect_invalid(resolve_job(store, "a").await, ErrorCode::AmbiguousId);
    expect_not_found(resolve_job(store, "b").await, ErrorCode::JobNotFound);
    expect_not_found(resolve_job(store, "aa03").await, ErrorCode::JobNotFound);
    for bad in ["", "a a", "a\n", &"a".repeat(300)] {
        expect_invalid(resolve_job(store, bad).await, ErrorCode::InvalidId);
    }
    let two = store.jobs_with_id_prefix("a", 2).await.unwrap();
    let two: Vec<&str> = two.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(two, ["aa01", "aa02"], "id order, at most the limit");
    h.assert_unchanged(&before, "resolving ids").await;
}
