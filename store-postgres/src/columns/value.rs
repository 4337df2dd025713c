//! Column values between a [`Job`] and PostgreSQL: what a row being written
//! binds ([`Source`], [`Value`], [`Array`]) and the codecs a line of the
//! description names. `args`, `errors` and `output` are JSON as text rather
//! than `jsonb`, because `jsonb` rewrites numbers and refuses `\u0000`, and a
//! job must come back exactly as it was enqueued (a handler's message or
//! output may hold `\u0000`; nothing queries inside them). The dependency
//! edges (`depends_on`) are `jsonb` (ids and policies, nothing a rewrite could
//! change), read back as text and `NULL` when there are none.

use std::borrow::Cow;

use crate::backend::row::Row;
use duraq_core::driver::digest_of_canonical;
use duraq_core::{AttemptError, Dependency, Job, JobStatus, NewJob, Result};
use tokio_postgres::types::{FromSql, ToSql};

use crate::error::corrupt;

/// A fresh row's args as stored (canonical JSON text) and their digest, made
/// from the same bytes: the args are serialized once.
pub(crate) struct ArgsText {
    pub text: String,
    pub digest: String,
}

impl ArgsText {
    /// The canonical text and digest of `job`'s args.
    pub fn of(job: &NewJob) -> Self {
        let mut bytes = Vec::new();
        job.write_args(&mut bytes);
        let digest = digest_of_canonical("args", &bytes);
        let text = String::from_utf8(bytes).expect("canonical JSON is UTF-8");
        Self { text, digest }
    }
}

/// A row being written: the job, and what the store keeps beside it.
pub(crate) struct Source<'a> {
    pub job: &'a Job,
    /// The args text and digest of a fresh row.
    pub args: Option<&'a ArgsText>,
    /// The dedupe key `COPY` decided for a fresh row.
    pub dedupe_key: Option<&'a str>,
    /// The reservation a saved row now holds.
    pub reservation: Option<&'a str>,
}

impl<'a> Source<'a> {
    /// A fresh row (`dedupe_key` only for `COPY`).
    pub fn fresh(job: &'a Job, args: &'a ArgsText, dedupe_key: Option<&'a str>) -> Self {
        Self {
            job,
            args: Some(args),
            dedupe_key,
            reservation: None,
        }
    }

    /// A row written back after a transition.
    pub fn saved(job: &'a Job, reservation: Option<&'a str>) -> Self {
        Self {
            job,
            args: None,
            dedupe_key: None,
            reservation,
        }
    }

    fn args(&self) -> &'a ArgsText {
        self.args.expect("only a fresh row writes its args")
    }
}

/// One column's value in a row being written.
#[derive(Debug, PartialEq)]
pub(crate) enum Value<'a> {
    Text(Option<Cow<'a, str>>),
    Int8(Option<i64>),
    Bool(Option<bool>),
}

impl Value<'_> {
    /// The value as a parameter (a `COPY` tuple's field).
    pub fn as_sql(&self) -> &(dyn ToSql + Sync) {
        match self {
            Value::Text(v) => v,
            Value::Int8(v) => v,
            Value::Bool(v) => v,
        }
    }
}

/// One column's values over many rows: one array parameter (`UNNEST`).
pub(crate) enum Array<'a> {
    Text(Vec<Option<Cow<'a, str>>>),
    Int8(Vec<Option<i64>>),
    Bool(Vec<Option<bool>>),
}

impl<'a> Array<'a> {
    /// The values `write` gives for `rows`.
    pub fn of(name: &str, write: fn(&Source<'a>) -> Value<'a>, rows: &[Source<'a>]) -> Self {
        let mut values = rows.iter().map(write).peekable();
        let mut array = match values.peek() {
            Some(Value::Int8(_)) => Array::Int8(Vec::with_capacity(rows.len())),
            Some(Value::Bool(_)) => Array::Bool(Vec::with_capacity(rows.len())),
            _ => Array::Text(Vec::with_capacity(rows.len())),
        };
        for value in values {
            match (&mut array, value) {
                (Array::Text(a), Value::Text(v)) => a.push(v),
                (Array::Int8(a), Value::Int8(v)) => a.push(v),
                (Array::Bool(a), Value::Bool(v)) => a.push(v),
                (_, value) => panic!("column {name} wrote {value:?} among values of another type"),
            }
        }
        array
    }

    /// The array as a parameter.
    pub fn as_sql(&self) -> &(dyn ToSql + Sync) {
        match self {
            Array::Text(a) => a,
            Array::Int8(a) => a,
            Array::Bool(a) => a,
        }
    }
}

/// A value as a column holds it (see [`Plain`]).
pub(crate) trait AsValue {
    fn value(&self) -> Value<'_>;
}

impl AsValue for String {
    fn value(&self) -> Value<'_> {
        Value::Text(Some(Cow::Borrowed(self)))
    }
}

impl AsValue for Option<String> {
    fn value(&self) -> Value<'_> {
        Value::Text(self.as_deref().map(Cow::Borrowed))
    }
}

impl AsValue for i64 {
    fn value(&self) -> Value<'_> {
        Value::Int8(Some(*self))
    }
}

impl AsValue for Option<i64> {
    fn value(&self) -> Value<'_> {
        Value::Int8(*self)
    }
}

impl AsValue for bool {
    fn value(&self) -> Value<'_> {
        Value::Bool(Some(*self))
    }
}

fn get<'r, T: FromSql<'r>>(row: &'r Row, i: usize, name: &str) -> Result<T> {
    row.try_get(i).map_err(|e| corrupt(format!("{name}: {e}")))
}

/// A field type stored as JSON text.
pub(crate) trait JsonText: Sized {
    fn to_text(&self) -> String;
    fn from_text(text: &str) -> serde_json::Result<Self>;
}

macro_rules! json_text {
    ($($t:ty),*) => {$(
        impl JsonText for $t {
            fn to_text(&self) -> String {
                serde_json::to_string(self).expect("plain data encodes")
            }
            fn from_text(text: &str) -> serde_json::Result<Self> {
                serde_json::from_str(text)
            }
        }
    )*};
}

json_text!(serde_json::Value, Vec<AttemptError>, Vec<Dependency>);

fn json<T: JsonText>(value: &T) -> Value<'static> {
    Value::Text(Some(Cow::Owned(value.to_text())))
}

fn parse<T: JsonText>(text: &str, name: &str) -> Result<T> {
    T::from_text(text).map_err(|e| corrupt(format!("{name}: {e}")))
}

/// A field stored as it is (text, bigint, boolean).
pub(crate) struct Plain;

impl Plain {
    pub fn read<'r, T: FromSql<'r>>(row: &'r Row, i: usize, name: &str) -> Result<T> {
        get(row, i, name)
    }

    pub fn write<'a, T: AsValue>(field: &'a T, _: &Source<'a>) -> Value<'a> {
        field.value()
    }
}

/// [`JobStatus`] as its stable string.
pub(crate) struct Status;

impl Status {
    pub fn read(row: &Row, i: usize, name: &str) -> Result<JobStatus> {
        parse_status(get(row, i, name)?)
    }

    pub fn write<'a>(field: &'a JobStatus, _: &Source<'a>) -> Value<'a> {
        Value::Text(Some(Cow::Borrowed(field.as_str())))
    }
}

/// The args: JSON text, written from the fresh row's canonical text.
pub(crate) struct Args;

impl Args {
    pub fn read<T: JsonText>(row: &Row, i: usize, name: &str) -> Result<T> {
        parse(get(row, i, name)?, name)
    }

    pub fn write<'a, T>(_: &'a T, s: &Source<'a>) -> Value<'a> {
        Value::Text(Some(Cow::Borrowed(&s.args().text)))
    }
}

/// A value as JSON text (`errors`: `\u0000` in a message is written escaped,
/// which a text column takes as it is).
pub(crate) struct Json;

impl Json {
    pub fn read<T: JsonText>(row: &Row, i: usize, name: &str) -> Result<T> {
        parse(get(row, i, name)?, name)
    }

    pub fn write<'a, T: JsonText>(field: &'a T, _: &Source<'a>) -> Value<'a> {
        json(field)
    }
}

/// An optional value as JSON text, `NULL` when absent (`output`).
pub(crate) struct JsonOpt;

impl JsonOpt {
    pub fn read<T: JsonText>(row: &Row, i: usize, name: &str) -> Result<Option<T>> {
        let text: Option<&str> = get(row, i, name)?;
        text.map(|t| parse(t, name)).transpose()
    }

    pub fn write<'a, T: JsonText>(field: &'a Option<T>, _: &Source<'a>) -> Value<'a> {
        match field {
            Some(value) => json(value),
            None => Value::Text(None),
        }
    }
}

/// A list as JSON, `NULL` when empty (`depends_on`).
pub(crate) struct Edges;

impl Edges {
    pub fn read<T>(row: &Row, i: usize, name: &str) -> Result<Vec<T>>
    where
        Vec<T>: JsonText,
    {
        let text: Option<&str> = get(row, i, name)?;
        text.map_or_else(|| Ok(Vec::new()), |t| parse(t, name))
    }

    pub fn write<'a, T>(field: &'a Vec<T>, _: &Source<'a>) -> Value<'a>
    where
        Vec<T>: JsonText,
    {
        if field.is_empty() {
            Value::Text(None)
        } else {
            json(field)
        }
    }
}

/// A handler's message (`last_error`). It may contain NUL, which a text
/// column refuses; failing the report over it would strand the job, so NUL
/// becomes U+FFFD.
pub(crate) struct Message;

impl Message {
    pub fn read(row: &Row, i: usize, name: &str) -> Result<Option<String>> {
        get(row, i, name)
    }

    pub fn write<'a>(field: &'a Option<String>, _: &Source<'a>) -> Value<'a> {
        Value::Text(field.as_deref().map(|m| match m.contains('\0') {
            true => Cow::Owned(m.replace('\0', "\u{fffd}")),
            false => Cow::Borrowed(m),
        }))
    }
}

/// An optional word of a closed set (a [`duraq_core::CancelReason`]) as its
/// text.
pub(crate) struct Word;

impl Word {
    pub fn read<T: std::str::FromStr>(row: &Row, i: usize, name: &str) -> Result<Option<T>> {
        let text: Option<&str> = get(row, i, name)?;
        text.map(|t| t.parse().map_err(|_| corrupt(format!("{name} {t:?}"))))
            .transpose()
    }

    pub fn write<'a, T: std::fmt::Display>(field: &'a Option<T>, _: &Source<'a>) -> Value<'a> {
        Value::Text(field.as_ref().map(|w| Cow::Owned(w.to_string())))
    }
}

/// A stored status, or a corrupt-data error naming it.
pub(crate) fn parse_status(status: &str) -> Result<JobStatus> {
    status
        .parse::<JobStatus>()
        .map_err(|_| corrupt(format!("status {status:?}")))
}
