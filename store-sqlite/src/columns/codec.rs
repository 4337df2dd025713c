//! How a column of [`super::COLUMNS`] holds its value (the `value` word of its
//! line), and the macro that turns the lines into the list, the index
//! constants of [`super::col`](mod@super::col) and [`super::job_from_row`].
//!
//! Each kind is a module with `read` (from a selected row, at a column index
//! known at compile time) and `write` (the value to bind); a line's kind picks
//! one by name, so the macro stays a list of lines and the conversions stay
//! plain functions.

use duraq_core::Job;
use rusqlite::types::{ToSqlOutput, Type, ValueRef};
use rusqlite::Row;

use crate::new_row::NewRow;

/// A column's value in a job (see [`super::JobColumn::write`]).
pub(crate) type WriteFn = fn(&Job) -> rusqlite::Result<ToSqlOutput<'_>>;

/// A column's value in a new row (see [`super::JobColumn::bind`]).
pub(crate) type BindFn = for<'r, 'a> fn(&'r NewRow<'a>) -> rusqlite::Result<ToSqlOutput<'r>>;

/// What a column that is not a `Job` field binds: NULL.
pub(crate) fn null_of_job(_: &Job) -> rusqlite::Result<ToSqlOutput<'_>> {
    Ok(ToSqlOutput::Borrowed(ValueRef::Null))
}

/// What a column that no insert writes binds: NULL.
pub(crate) fn null_of_row<'r>(_: &'r NewRow<'_>) -> rusqlite::Result<ToSqlOutput<'r>> {
    Ok(ToSqlOutput::Borrowed(ValueRef::Null))
}

fn conversion(
    i: usize,
    err: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(i, Type::Text, err.into())
}

/// The text at column `i`, borrowed from the row.
fn text<'r>(row: &'r Row<'_>, i: usize) -> rusqlite::Result<Option<&'r str>> {
    row.get_ref(i)?
        .as_str_or_null()
        .map_err(|e| conversion(i, e))
}

fn required_text<'r>(row: &'r Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    text(row, i)?.ok_or_else(|| conversion(i, "NULL in a NOT NULL column"))
}

fn json_output(text: serde_json::Result<String>) -> rusqlite::Result<ToSqlOutput<'static>> {
    let text = text.map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
    Ok(ToSqlOutput::from(text))
}

/// A `Job` field stored as is.
pub(crate) mod field {
    use rusqlite::types::{FromSql, ToSqlOutput};
    use rusqlite::{Row, ToSql};

    pub(crate) fn read<T: FromSql>(row: &Row<'_>, i: usize) -> rusqlite::Result<T> {
        row.get(i)
    }

    pub(crate) fn write<T: ToSql>(value: &T) -> rusqlite::Result<ToSqlOutput<'_>> {
        value.to_sql()
    }
}

/// A [`duraq_core::JobStatus`] as its text.
pub(crate) mod status {
    use duraq_core::JobStatus;
    use rusqlite::types::ToSqlOutput;
    use rusqlite::Row;

    pub(crate) fn read(row: &Row<'_>, i: usize) -> rusqlite::Result<JobStatus> {
        let text = super::required_text(row, i)?;
        text.parse().map_err(|e| super::conversion(i, e))
    }

    pub(crate) fn write(status: &JobStatus) -> rusqlite::Result<ToSqlOutput<'static>> {
        Ok(ToSqlOutput::from(status.as_str()))
    }
}

/// An optional word of a closed set (a [`duraq_core::CancelReason`]) as its
/// text, NULL when `None`.
pub(crate) mod word {
    use rusqlite::types::{ToSqlOutput, ValueRef};
    use rusqlite::Row;
    use std::fmt::Display;
    use std::str::FromStr;

    pub(crate) fn read<T>(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<T>>
    where
        T: FromStr,
        T::Err: std::error::Error + Send + Sync + 'static,
    {
        let text = super::text(row, i)?;
        text.map(|t| t.parse().map_err(|e| super::conversion(i, e)))
            .transpose()
    }

    pub(crate) fn write<T: Display>(value: &Option<T>) -> rusqlite::Result<ToSqlOutput<'static>> {
        Ok(match value {
            Some(word) => ToSqlOutput::from(word.to_string()),
            None => ToSqlOutput::Borrowed(ValueRef::Null),
        })
    }
}

/// A value as JSON text (`NOT NULL`).
pub(crate) mod json {
    use rusqlite::types::ToSqlOutput;
    use rusqlite::Row;
    use serde::de::DeserializeOwned;
    use serde::Serialize;

    pub(crate) fn read<T: DeserializeOwned>(row: &Row<'_>, i: usize) -> rusqlite::Result<T> {
        let text = super::required_text(row, i)?;
        serde_json::from_str(text).map_err(|e| super::conversion(i, e))
    }

    pub(crate) fn write<T: Serialize>(value: &T) -> rusqlite::Result<ToSqlOutput<'static>> {
        super::json_output(serde_json::to_string(value))
    }
}

/// The job's args: JSON text, inserted from the caller's canonical text
/// ([`crate::new_row::NewRow::args`]) rather than serialized again.
pub(crate) mod args {
    pub(crate) use super::json::{read, write};
}

/// A list or an option as JSON text, NULL when empty or `None`.
pub(crate) mod json_or_null {
    use rusqlite::types::{ToSqlOutput, ValueRef};
    use rusqlite::Row;
    use serde::de::DeserializeOwned;
    use serde::Serialize;

    /// A value that a NULL column stands for when empty.
    pub(crate) trait Nullable: Sized {
        fn encode(&self) -> Option<serde_json::Result<String>>;
        fn decode(text: Option<&str>) -> serde_json::Result<Self>;
    }

    impl<T: Serialize + DeserializeOwned> Nullable for Vec<T> {
        fn encode(&self) -> Option<serde_json::Result<String>> {
            (!self.is_empty()).then(|| serde_json::to_string(self))
        }

        fn decode(text: Option<&str>) -> serde_json::Result<Self> {
            text.map_or(Ok(Vec::new()), serde_json::from_str)
        }
    }

    impl<T: Serialize + DeserializeOwned> Nullable for Option<T> {
        fn encode(&self) -> Option<serde_json::Result<String>> {
            self.as_ref().map(serde_json::to_string)
        }

        fn decode(text: Option<&str>) -> serde_json::Result<Self> {
            text.map(serde_json::from_str).transpose()
        }
    }

    pub(crate) fn read<T: Nullable>(row: &Row<'_>, i: usize) -> rusqlite::Result<T> {
        T::decode(super::text(row, i)?).map_err(|e| super::conversion(i, e))
    }

    pub(crate) fn write<T: Nullable>(value: &T) -> rusqlite::Result<ToSqlOutput<'static>> {
        match value.encode() {
            Some(text) => super::json_output(text),
            None => Ok(ToSqlOutput::Borrowed(ValueRef::Null)),
        }
    }
}

/// Whether a line's column is a `Job` field, the args, or the store's own.
macro_rules! holds {
    (new_row) => {
        $crate::columns::Holds::Internal
    };
    (store) => {
        $crate::columns::Holds::Internal
    };
    (args) => {
        $crate::columns::Holds::Args
    };
    ($value:ident) => {
        $crate::columns::Holds::Field
    };
}

/// A line's [`WriteFn`]: its `Job` field's value.
macro_rules! write_fn {
    (new_row $name:ident) => {
        $crate::columns::codec::null_of_job
    };
    (store $name:ident) => {
        $crate::columns::codec::null_of_job
    };
    ($value:ident $name:ident) => {{
        fn write(job: &duraq_core::Job) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
            $crate::columns::codec::$value::write(&job.$name)
        }
        write
    }};
}

/// A line's [`BindFn`]: its value in a new row.
macro_rules! bind_fn {
    (store $name:ident) => {
        $crate::columns::codec::null_of_row
    };
    (new_row $name:ident) => {{
        fn bind<'r>(
            row: &'r $crate::new_row::NewRow<'_>,
        ) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'r>> {
            rusqlite::ToSql::to_sql(&row.$name)
        }
        bind
    }};
    (args $name:ident) => {{
        fn bind<'r>(
            row: &'r $crate::new_row::NewRow<'_>,
        ) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'r>> {
            Ok(rusqlite::types::ToSqlOutput::from(row.args))
        }
        bind
    }};
    ($value:ident $name:ident) => {{
        fn bind<'r>(
            row: &'r $crate::new_row::NewRow<'_>,
        ) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'r>> {
            $crate::columns::codec::$value::write(&row.job.$name)
        }
        bind
    }};
}

/// A `Job` field's index in the SELECT list, named after its column.
macro_rules! select_index {
    (new_row $name:ident) => {};
    (store $name:ident) => {};
    ($value:ident $name:ident) => {
        pub(crate) const $name: usize = $crate::columns::sql::select_index(stringify!($name));
    };
}

/// `Job { field: read(row, col::field)?, … }` of the lines that are `Job`
/// fields (the others are skipped one line at a time).
macro_rules! job_literal {
    ($row:ident [$($done:tt)*]) => {
        Ok(duraq_core::Job { $($done)* })
    };
    ($row:ident [$($done:tt)*] $name:ident new_row, $($rest:tt)*) => {
        $crate::columns::codec::job_literal!($row [$($done)*] $($rest)*)
    };
    ($row:ident [$($done:tt)*] $name:ident store, $($rest:tt)*) => {
        $crate::columns::codec::job_literal!($row [$($done)*] $($rest)*)
    };
    ($row:ident [$($done:tt)*] $name:ident $value:ident, $($rest:tt)*) => {
        $crate::columns::codec::job_literal!($row [
            $($done)*
            $name: $crate::columns::codec::$value::read($row, $crate::columns::col::$name)?,
        ] $($rest)*)
    };
}

/// The description: `name: value = definition,` lines, in table order.
macro_rules! job_columns {
    ($($name:ident: $value:ident = $definition:expr,)*) => {
        /// Every column of `duraq_jobs`, in table order.
        pub(crate) const COLUMNS: &[JobColumn] = &[$(
            JobColumn::new(
                stringify!($name),
                $definition,
                $crate::columns::codec::holds!($value),
                $crate::columns::codec::write_fn!($value $name),
                $crate::columns::codec::bind_fn!($value $name),
            ),
        )*];

        /// Where each `Job` field is in [`JOB_COLUMNS`], named after its column
        /// (computed at compile time from [`COLUMNS`]).
        #[allow(non_upper_case_globals)]
        pub(crate) mod col {
            $($crate::columns::codec::select_index!($value $name);)*
        }

        /// Reads one job from a row selected with [`JOB_COLUMNS`].
        pub(crate) fn job_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<duraq_core::Job> {
            $crate::columns::codec::job_literal!(row [] $($name $value,)*)
        }
    };
}

pub(crate) use {bind_fn, holds, job_columns, job_literal, select_index, write_fn};
