//! The statements derived from [`super::COLUMNS`] agree with it and with each
//! other, and a job with every field set survives a round trip through a real
//! file.

use std::collections::BTreeSet;

use duraq_core::driver::transitions::new_job_row;
use duraq_core::{AttemptError, Dependency, DependencyFailure, EnqueueOptions, JobStatus, NewJob};
use rusqlite::Connection;
use serde_json::json;

use super::sql::{insert_sql, select_index, started_sql, update_sql, SAVED};
use super::{col, Holds, Insert, COLUMNS, JOB_COLUMNS, JOB_COLUMN_COUNT, REPORT_COLUMNS};

fn names(pred: impl Fn(&super::JobColumn) -> bool) -> BTreeSet<&'static str> {
    COLUMNS
        .iter()
        .filter(|c| pred(c))
        .map(|c| c.column.name)
        .collect()
}

/// The columns an `INSERT … (columns) VALUES (…)` names, each at most once,
/// and how many of its first row's values are parameters.
fn insert_columns(sql: &str) -> (BTreeSet<&str>, usize) {
    let open = sql.find('(').unwrap();
    let close = sql.find(')').unwrap();
    let listed: Vec<&str> = sql[open + 1..close].split(", ").collect();
    let columns: BTreeSet<&str> = listed.iter().copied().collect();
    assert_eq!(columns.len(), listed.len(), "a column twice in {sql}");
    let values = &sql[close + "( VALUES (".len()..];
    let first_row = &values[..values.find(')').unwrap()];
    let row: Vec<&str> = first_row.split(", ").collect();
    assert_eq!(row.len(), listed.len(), "{sql}");
    (columns, row.iter().filter(|v| **v == "?").count())
}

#[test]
fn each_column_is_described_once() {
    let all = names(|_| true);
    assert_eq!(all.len(), COLUMNS.len());
    let table = super::job_table();
    assert!(table
        .iter()
        .zip(COLUMNS)
        .all(|(t, c)| t.name == c.column.name));
}

#[test]
fn the_select_list_indexes_match_the_column_names() {
    let selected: Vec<&str> = JOB_COLUMNS.split(", ").collect();
    assert_eq!(selected.len(), JOB_COLUMN_COUNT);
    let fields = names(|c| c.holds != Holds::Internal);
    assert_eq!(selected.iter().copied().collect::<BTreeSet<_>>(), fields);
    for (i, name) in selected.iter().enumerate() {
        assert_eq!(select_index(name), i);
    }
    assert_eq!(selected[col::id], "id");
    assert_eq!(selected[col::args], "args");
    assert_eq!(selected[col::timeout_ms], "timeout_ms");
    assert_eq!(selected[col::step], "step");
    let report: Vec<&str> = REPORT_COLUMNS.split(", ").collect();
    assert_eq!(report.len(), selected.len());
    for (r, s) in report.iter().zip(&selected) {
        assert_eq!(*r, if *s == "args" { "'null'" } else { *s });
    }
}

#[test]
fn the_inserts_write_every_column_but_the_omitted_ones() {
    let (fresh_sql, started_sql) = (insert_sql(1), started_sql());
    let (fresh, fresh_bound) = insert_columns(&fresh_sql);
    assert_eq!(
        fresh,
        names(|c| !matches!(c.insert, Insert::Omitted | Insert::Started(None)))
    );
    assert_eq!(fresh_bound, names(|c| c.insert == Insert::Bind).len());
    let (started, started_bound) = insert_columns(&started_sql);
    assert_eq!(started, names(|c| c.insert != Insert::Omitted));
    assert_eq!(
        started_bound,
        names(|c| matches!(c.insert, Insert::Bind | Insert::Started(_))).len()
    );
    let four = insert_sql(4);
    assert_eq!(four.matches("'queued'").count(), 4);
    assert_eq!(four.matches('?').count(), 4 * fresh_bound);
}

#[test]
fn the_update_writes_the_saved_columns_once_each() {
    let sql = update_sql();
    let set = &sql["UPDATE duraq_jobs SET ".len()..sql.find(" WHERE id = ?1").unwrap()];
    let assigned: Vec<(&str, &str)> = set
        .split(", ")
        .map(|a| a.split_once(" = ").unwrap())
        .collect();
    let columns: BTreeSet<&str> = assigned.iter().map(|(c, _)| *c).collect();
    assert_eq!(columns.len(), assigned.len());
    assert_eq!(columns, names(|c| c.saved));
    assert!(!columns.contains("id"));
    for (n, (_, param)) in assigned.iter().enumerate() {
        assert_eq!(*param, format!("?{}", n + 2));
    }
    assert_eq!(SAVED.len(), assigned.len());
}

/// Every field of a job set away from its default is written by the
/// columns' `write` and read back equal by `job_from_row`.
#[test]
fn a_job_with_every_field_set_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("columns.db");
    crate::migrate(&path).unwrap();
    let new = NewJob::new("mail", json!({"to": [1, 2]}), EnqueueOptions::new()).unwrap();
    let mut job = new_job_row(&new, 5);
    job.status = JobStatus::Failed;
    job.attempts = 3;
    job.max_retries = 2;
    job.scheduled_at_ms = 7;
    (job.handed_off_at_ms, job.completed_at_ms) = (Some(8), Some(9));
    (job.failed_at_ms, job.cancelled_at_ms) = (Some(10), Some(11));
    job.orphaned_at_ms = Some(12);
    job.last_error = Some("boom".into());
    job.errors = vec![AttemptError {
        attempt: 1,
        at_ms: 8,
        error: "boom".into(),
        worker_id: Some("w".into()),
    }];
    (job.worker_id, job.handoff_id) = (Some("w".into()), Some("h".into()));
    (job.schedule_key, job.schedule_order) = (Some("k".into()), Some(4));
    (job.concurrency_key, job.max_concurrency) = (Some("c".into()), Some(2));
    (job.idempotency_key, job.timeout_ms) = (Some("i".into()), Some(1000));
    (job.priority, job.rate_key) = (5, Some("r".into()));
    (job.rate_max, job.rate_period_ms) = (Some(3), Some(60_000));
    job.trace_parent = Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into());
    job.depends_on = vec![Dependency {
        job_id: "dep".into(),
        on_failure: DependencyFailure::Run,
    }];
    job.open_dependencies = 1;
    job.output = Some(json!(null));
    (job.workflow_id, job.step) = (Some("wf".into()), Some("s".into()));
    job.workflow_name = Some("nightly".into());
    job.expires_at_ms = Some(60_000);
    job.cancel_reason = Some(duraq_core::CancelReason::Expired);
    job.cost = 3;
    job.keep_completed = false;
    job.aged_steps = 4;
    job.sequence_key = Some("account:7".into());
    job.sequence_continues = true;
    job.fairness_key = Some("tenant:9".into());
    job.awaiting_signal = Some("shipped".into());
    job.parent_id = Some("parent-1".into());

    let conn = Connection::open(&path).unwrap();
    let columns: Vec<&str> = COLUMNS.iter().map(|c| c.column.name).collect();
    let params = vec!["?"; columns.len()].join(", ");
    let mut insert = conn
        .prepare(&format!(
            "INSERT INTO duraq_jobs ({}) VALUES ({params})",
            columns.join(", ")
        ))
        .unwrap();
    for (i, c) in COLUMNS.iter().enumerate() {
        let value = match c.column.name {
            "args_digest" => rusqlite::types::ToSqlOutput::from(""),
            _ => (c.write)(&job).unwrap(),
        };
        insert.raw_bind_parameter(i + 1, value).unwrap();
    }
    insert.raw_execute().unwrap();
    assert_eq!(
        crate::rows::load_job(&conn, &job.id).unwrap(),
        Some(job.clone())
    );
    let (reported, reservation) = crate::rows::load_for_report(&conn, &job.id)
        .unwrap()
        .unwrap();
    assert_eq!(reported.args, json!(null));
    assert_eq!(reported.output, job.output);
    assert_eq!(reservation, None);
}
