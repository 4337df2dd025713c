use super::*;
use crate::job::DependencyFailure;
use crate::rules::CANCELLED_BY_DEPENDENCY;

fn edge(job_id: &str, on_failure: DependencyFailure) -> DependentEdge {
    DependentEdge {
        job_id: job_id.into(),
        on_failure,
    }
}

fn pending(job_id: &str, open: i64, due: i64) -> DependentRow {
    DependentRow {
        job_id: job_id.into(),
        queue: "q".into(),
        status: JobStatus::Pending,
        open_dependencies: open,
        scheduled_at_ms: due,
    }
}

/// The one step of a level of one.
fn only(release: &mut DependencyRelease) -> ReleaseStep {
    let mut level = release.next_level();
    assert_eq!(level.len(), 1, "{level:?}");
    level.remove(0)
}

/// `n` dependents `d0000`… of one finished job, all pending with one open dependency.
fn fan(n: usize) -> (Vec<DependentEdge>, Vec<DependentRow>) {
    (0..n)
        .map(|i| {
            let id = format!("d{i:04}");
            (edge(&id, DependencyFailure::Cancel), pending(&id, 1, 0))
        })
        .unzip()
}

#[test]
fn completion_counts_down_then_releases_at_the_later_of_now_and_due() {
    let mut release = DependencyRelease::new();
    release.finished("a", JobStatus::Completed);
    let step = only(&mut release);
    assert_eq!(step.limit, RELEASE_BATCH);
    let edges = [
        edge("gone", DependencyFailure::Cancel),
        edge("later", DependencyFailure::Cancel),
        edge("waits", DependencyFailure::Cancel),
    ];
    let rows = vec![pending("later", 1, 500), pending("waits", 3, 0)];
    let changes = release.settle(&step, &edges, rows, 100);
    assert_eq!(
        changes,
        [
            DependentChange::Released {
                job_id: "later".into(),
                queue: "q".into(),
                at_ms: 500
            },
            DependentChange::Waiting {
                job_id: "waits".into(),
                open: 2
            },
        ]
    );
    assert!(release.next_level().is_empty(), "nothing was cancelled");
    assert!(release.backlog().is_empty(), "every edge fit");
    assert_eq!(release.walked(), 3);
}

#[test]
fn a_failure_cancels_under_cancel_and_satisfies_under_run() {
    let mut release = DependencyRelease::new();
    release.finished("a", JobStatus::Failed);
    let step = only(&mut release);
    let edges = [
        edge("lenient", DependencyFailure::Run),
        edge("strict", DependencyFailure::Cancel),
    ];
    let rows = vec![pending("strict", 2, 0), pending("lenient", 1, 0)];
    let changes = release.settle(&step, &edges, rows, 100);
    assert!(matches!(&changes[0], DependentChange::Released { job_id, .. } if job_id == "lenient"));
    let DependentChange::Cancelled { job_id, error, .. } = &changes[1] else {
        panic!("{changes:?}");
    };
    assert_eq!(job_id, "strict");
    assert!(
        error.starts_with(CANCELLED_BY_DEPENDENCY) && error.contains(" a "),
        "{error}"
    );
    let next = only(&mut release);
    assert_eq!(
        next.done,
        Finished {
            job_id: "strict".into(),
            status: JobStatus::Cancelled
        },
        "the cancelled dependent goes on down the graph"
    );
    assert_eq!(next.limit, RELEASE_BATCH - 2);
}

#[test]
fn only_pending_dependents_change_and_non_terminal_is_not_finished() {
    let mut release = DependencyRelease::new();
    release.finished("a", JobStatus::Queued);
    assert!(release.next_level().is_empty());
    release.finished("a", JobStatus::Cancelled);
    let step = only(&mut release);
    let mut cancelled = pending("b", 1, 0);
    cancelled.status = JobStatus::Cancelled;
    let changes = release.settle(
        &step,
        &[edge("b", DependencyFailure::Cancel)],
        vec![cancelled],
        1,
    );
    assert!(changes.is_empty());
}

#[test]
fn a_wide_fan_out_settles_the_bound_and_leaves_a_backlog_entry() {
    let (edges, rows) = fan(11);
    let mut release = DependencyRelease::with_bound(4);
    release.finished("root", JobStatus::Completed);
    let step = only(&mut release);
    assert_eq!(step.read_limit(), 5);
    let changes = release.settle(&step, &edges[..5], rows[..5].to_vec(), 7);
    let released: Vec<&str> = changes.iter().map(|c| c.job_id()).collect();
    assert_eq!(released, ["d0000", "d0001", "d0002", "d0003"]);
    assert_eq!(
        release.backlog(),
        [BacklogWrite::Put(BacklogEntry {
            job_id: "root".into(),
            status: JobStatus::Completed,
            after: Some("d0003".into()),
        })]
    );

    // Continued: the entry moves on, then ends with a removal.
    let mut next = DependencyRelease::with_bound(4);
    let entry = BacklogEntry {
        job_id: "root".into(),
        status: JobStatus::Completed,
        after: Some("d0003".into()),
    };
    next.resume(entry.clone(), Some(JobStatus::Completed));
    let step = only(&mut next);
    assert_eq!(step.after.as_deref(), Some("d0003"));
    next.settle(&step, &edges[4..9], rows[4..9].to_vec(), 7);
    assert_eq!(
        next.backlog(),
        [BacklogWrite::Put(BacklogEntry {
            after: Some("d0007".into()),
            ..entry.clone()
        })]
    );
    let mut last = DependencyRelease::with_bound(4);
    last.resume(
        BacklogEntry {
            after: Some("d0007".into()),
            ..entry
        },
        Some(JobStatus::Completed),
    );
    let step = only(&mut last);
    let changes = last.settle(&step, &edges[8..], rows[8..].to_vec(), 7);
    assert_eq!(changes.len(), 3);
    assert_eq!(last.backlog(), [BacklogWrite::Remove("root".into())]);
}

#[test]
fn an_entry_whose_job_left_its_status_is_removed_unwalked() {
    let entry = BacklogEntry {
        job_id: "root".into(),
        status: JobStatus::Failed,
        after: None,
    };
    for current in [Some(JobStatus::Queued), None] {
        let mut release = DependencyRelease::new();
        release.resume(entry.clone(), current);
        assert!(release.next_level().is_empty());
        assert_eq!(release.backlog(), [BacklogWrite::Remove("root".into())]);
    }
}

#[test]
fn a_cascade_falls_under_the_same_bound() {
    // root fails: its 3 dependents are cancelled; bound 4 leaves 1 edge for
    // the next level, shared by 3 finished jobs.
    let (edges, rows) = fan(3);
    let mut release = DependencyRelease::with_bound(4);
    release.finished("root", JobStatus::Failed);
    let step = only(&mut release);
    let changes = release.settle(&step, &edges, rows, 1);
    assert!(changes
        .iter()
        .all(|c| matches!(c, DependentChange::Cancelled { .. })));
    let level = release.next_level();
    assert_eq!(level.len(), 3);
    assert!(level.iter().all(|s| s.limit == 1), "{level:?}");
    // d0000 has 2 dependents: it walks one, the bound is then spent.
    let grand = [
        edge("g0", DependencyFailure::Cancel),
        edge("g1", DependencyFailure::Cancel),
    ];
    let rows = vec![pending("g0", 1, 0), pending("g1", 1, 0)];
    assert_eq!(release.settle(&level[0], &grand, rows, 1).len(), 1);
    // d0001 has one: nothing is left of the bound, so it goes to the backlog
    // from its start; d0002 has none.
    let more = [edge("g2", DependencyFailure::Cancel)];
    assert!(release
        .settle(&level[1], &more, vec![pending("g2", 1, 0)], 1)
        .is_empty());
    assert!(release.settle(&level[2], &[], vec![], 1).is_empty());
    assert_eq!(release.walked(), 4);
    assert_eq!(
        release.backlog(),
        [
            BacklogWrite::Put(BacklogEntry {
                job_id: "d0000".into(),
                status: JobStatus::Cancelled,
                after: Some("g0".into()),
            }),
            BacklogWrite::Put(BacklogEntry {
                job_id: "d0001".into(),
                status: JobStatus::Cancelled,
                after: None,
            }),
        ]
    );
    // g0 was cancelled: it is the next level, with no bound left (a probe).
    let level = release.next_level();
    assert_eq!(level.len(), 1);
    assert_eq!((level[0].limit, level[0].read_limit()), (0, 1));
}

#[test]
fn a_job_whose_share_ran_out_goes_on_in_the_next_level() {
    // Two jobs finished together share a bound of 10: 5 each. `wide` has 7
    // edges, `narrow` 1: `wide` goes on with what `narrow` left, and all of it
    // fits in this transaction.
    let (edges, rows) = fan(7);
    let mut release = DependencyRelease::with_bound(10);
    release.finished("wide", JobStatus::Completed);
    release.finished("narrow", JobStatus::Completed);
    let level = release.next_level();
    assert_eq!((level[0].limit, level[1].limit), (5, 5));
    assert_eq!(
        release
            .settle(&level[0], &edges[..6], rows[..6].to_vec(), 1)
            .len(),
        5
    );
    let narrow = [edge("n", DependencyFailure::Cancel)];
    assert_eq!(
        release
            .settle(&level[1], &narrow, vec![pending("n", 1, 0)], 1)
            .len(),
        1
    );
    let next = only(&mut release);
    assert_eq!(
        (next.done.job_id.as_str(), next.after.as_deref(), next.limit),
        ("wide", Some("d0004"), 4)
    );
    assert_eq!(
        release
            .settle(&next, &edges[5..], rows[5..].to_vec(), 1)
            .len(),
        2
    );
    assert!(release.next_level().is_empty());
    assert!(release.backlog().is_empty(), "it all fit");
    assert_eq!(release.walked(), 8);
}
