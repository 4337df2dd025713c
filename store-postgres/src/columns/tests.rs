//! The derived statements agree with the description and with each other.

use duraq_core::driver::transitions::new_job_row;
use duraq_core::{Dependency, DependencyFailure, EnqueueOptions, Job, NewJob};
use serde_json::json;
use tokio_postgres::types::{ToSql, Type};

use super::statements::{bound, copy_sql, copy_types, fresh, save_sql, BOUND, FRESH};
use super::{
    ArgsText, Kind, Save, Source, Value, COLUMNS, JOB_COLUMNS, PLACES, REPORT_COLUMNS,
    TABLE_COLUMNS,
};
use crate::insert::insert_jobs_sql;

/// A job with every field set, and its args text.
fn sample() -> (Job, ArgsText) {
    let new = NewJob::new("mail", json!({"to": "a@b"}), EnqueueOptions::new()).unwrap();
    let args = ArgsText::of(&new);
    let mut job = new_job_row(&new, 1_000);
    job.last_error = Some("bad\0byte".into());
    job.depends_on = vec![Dependency {
        job_id: "dep".into(),
        on_failure: DependencyFailure::Run,
    }];
    job.open_dependencies = 1;
    job.output = Some(json!({"ok": true}));
    job.workflow_id = Some("wf".into());
    job.step = Some("send".into());
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
    (job, args)
}

fn snake_case(camel: &str) -> String {
    let mut out = String::new();
    for ch in camel.chars() {
        if ch.is_ascii_uppercase() {
            out.push('_');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

/// The comma-separated list in parentheses after `prefix` in `sql`.
fn list_after<'s>(sql: &'s str, prefix: &str) -> Vec<&'s str> {
    let start = sql.find(prefix).expect("the prefix is there") + prefix.len();
    let end = start + sql[start..].find(')').expect("the list ends");
    sql[start..end].split(", ").collect()
}

fn count(sql: &str, name: &str) -> usize {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    sql.split(|c: char| !word(c)).filter(|w| *w == name).count()
}

#[test]
fn each_column_is_declared_once() {
    for (i, column) in COLUMNS.iter().enumerate() {
        let same = COLUMNS.iter().filter(|c| c.name == column.name).count();
        assert_eq!(same, 1, "{}", column.name);
        let (name, data_type, definition) = TABLE_COLUMNS[i];
        assert_eq!(name, column.name);
        assert_eq!(data_type, column.kind.data_type());
        assert!(definition.starts_with(data_type), "{name}: {definition}");
        assert!(column.since >= 1, "{name}");
    }
    assert_eq!(COLUMNS.iter().filter(|c| c.save == Save::Key).count(), 1);
}

/// `col::x` is the place of `x` in a row read with `JOB_COLUMNS`.
#[test]
fn rows_are_read_by_the_place_of_each_name() {
    let selected: Vec<&str> = JOB_COLUMNS.split(", ").collect();
    let places: Vec<(&str, usize)> = PLACES.iter().flatten().copied().collect();
    assert_eq!(places.len(), selected.len());
    assert_eq!(places.len(), COLUMNS.iter().filter(|c| c.selected).count());
    for (name, place) in places {
        let item = selected[place];
        assert!(
            item == name || item == format!("{name}::text"),
            "{name} at {place}: {item}"
        );
    }
}

/// A report's select list differs from a job read's only at the args, which
/// it selects as JSON null (same places, so `col::x` reads both).
#[test]
fn a_report_selects_every_column_but_the_args() {
    let full: Vec<&str> = JOB_COLUMNS.split(", ").collect();
    let report: Vec<&str> = REPORT_COLUMNS.split(", ").collect();
    assert_eq!(full.len(), report.len());
    for (i, (a, b)) in full.iter().zip(&report).enumerate() {
        if i == super::col::args {
            assert_eq!((*a, *b), ("args", "'null'::text"));
        } else {
            assert_eq!(a, b);
        }
    }
}

/// Every field a `Job` serializes has its column, which reads it back.
#[test]
fn every_job_field_has_a_column() {
    let (job, _) = sample();
    let serialized = serde_json::to_value(&job).unwrap();
    let keys: Vec<String> = (serialized.as_object().unwrap().keys())
        .map(|k| snake_case(k))
        .collect();
    for key in &keys {
        let column = COLUMNS.iter().find(|c| c.name == key);
        assert!(column.is_some_and(|c| c.job_field && c.selected), "{key}");
    }
    assert_eq!(keys.len(), COLUMNS.iter().filter(|c| c.job_field).count());
}

/// Each writer gives values of its column's type, as the statement's
/// parameters and the `COPY` fields declare them.
#[test]
fn values_have_the_types_statements_declare() {
    let (job, args) = sample();
    let fresh_row = Source::fresh(&job, &args, Some("key"));
    let saved_row = Source::saved(&job, Some("reserved"));
    let copy_types = copy_types();
    assert_eq!(copy_types.len(), FRESH);
    for (column, ty) in fresh().zip(copy_types) {
        assert_eq!(*ty, column.kind.copy_type(), "{}", column.name);
        let value = (column.write)(&fresh_row);
        check(column.name, column.kind, &value);
        assert!(accepts(&value, ty), "{}: {ty}", column.name);
    }
    for column in COLUMNS.iter().filter(|c| c.save != Save::Keep) {
        check(column.name, column.kind, &(column.write)(&saved_row));
    }
}

fn check(name: &str, kind: Kind, value: &Value) {
    let fits = matches!(
        (kind, value),
        (Kind::Text | Kind::Jsonb, Value::Text(_))
            | (Kind::Int8, Value::Int8(_))
            | (Kind::Bool, Value::Bool(_))
    );
    assert!(fits, "{name}: {value:?}");
}

fn accepts(value: &Value, ty: &Type) -> bool {
    match value {
        Value::Text(_) => <&str as ToSql>::accepts(ty),
        Value::Int8(_) => <i64 as ToSql>::accepts(ty),
        Value::Bool(_) => <bool as ToSql>::accepts(ty),
    }
}

/// The fresh rows' statements name each column they set once, with one
/// parameter per bound column; the write-back sets each saved column once.
#[test]
fn statements_name_each_column_once() {
    let insert = insert_jobs_sql(1);
    let copy = copy_sql();
    for column in fresh() {
        assert_eq!(count(copy, column.name), 1, "{}", column.name);
    }
    let inserted = list_after(&insert, "duraq_jobs (");
    let aliases = list_after(&insert, "AS v(");
    assert_eq!(inserted, fresh().map(|c| c.name).collect::<Vec<_>>());
    assert_eq!(aliases, bound().map(|c| c.name).collect::<Vec<_>>());
    assert_eq!(bound().count(), BOUND);
    assert!(
        insert.contains(&format!("${BOUND}::")) && !insert.contains(&format!("${}::", BOUND + 1))
    );
    let save = save_sql();
    for column in COLUMNS {
        let times = match column.save {
            Save::Key => 3,
            Save::Set => 3,
            Save::Keep => 0,
        };
        assert_eq!(count(save, column.name), times, "{}", column.name);
    }
}
