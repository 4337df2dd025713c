//! A result row, whichever client brought it: tokio-postgres's own, or the
//! binary values an application's client returned through
//! [`crate::client::Executor`]. Both hold PostgreSQL's binary format, so one
//! set of `FromSql` decoders reads either, and the store's row readers are
//! written once.

use std::fmt;
use std::sync::Arc;

use duraq_core::{Error, Result};
use tokio_postgres::types::{FromSql, Type};

use crate::client::{Column, Rows};
use crate::error::corrupt;

/// One row of a result.
pub(crate) enum Row {
    Native(tokio_postgres::Row),
    Binary(BinaryRow),
}

/// A row an application's client returned, with its result's columns.
pub(crate) struct BinaryRow {
    columns: Arc<[(Column, Type)]>,
    values: Vec<Option<Vec<u8>>>,
}

/// A column by position or by name, as tokio-postgres's `Row::get` takes it.
pub(crate) trait ColumnIndex: fmt::Display + Copy {
    fn position(self, names: &mut dyn Iterator<Item = &str>) -> Option<usize>;
}

impl ColumnIndex for usize {
    fn position(self, names: &mut dyn Iterator<Item = &str>) -> Option<usize> {
        (self < names.count()).then_some(self)
    }
}

impl ColumnIndex for &str {
    fn position(self, names: &mut dyn Iterator<Item = &str>) -> Option<usize> {
        for (i, name) in names.enumerate() {
            if name == self {
                return Some(i);
            }
        }
        None
    }
}

impl Row {
    /// Rows from an application's client; every column's type must be one
    /// PostgreSQL ships with (duraq's columns all are).
    pub fn from_binary(rows: Rows) -> Result<Vec<Row>> {
        let columns: Vec<(Column, Type)> = (rows.columns.into_iter())
            .enumerate()
            .map(|(i, column)| {
                // A column the client could not type (oid 0; diesel-async
                // tells a value's type, not a column's) holds only `NULL`s,
                // which read as `NULL` whatever the reader's type.
                let all_null = || {
                    rows.values
                        .iter()
                        .all(|row| matches!(row.get(i), Some(None)))
                };
                if column.type_oid == 0 && all_null() {
                    return Ok((column, Type::UNKNOWN));
                }
                let ty = Type::from_oid(column.type_oid).ok_or_else(|| {
                    corrupt(format!(
                        "column {} has type oid {}, not a built-in type",
                        column.name, column.type_oid
                    ))
                })?;
                Ok((column, ty))
            })
            .collect::<Result<_>>()?;
        let columns: Arc<[(Column, Type)]> = columns.into();
        (rows.values.into_iter())
            .map(|values| {
                if values.len() != columns.len() {
                    return Err(corrupt(format!(
                        "a row has {} values for {} columns",
                        values.len(),
                        columns.len()
                    )));
                }
                Ok(Row::Binary(BinaryRow {
                    columns: columns.clone(),
                    values,
                }))
            })
            .collect()
    }

    /// The value of column `idx`; panics when it is missing or of another
    /// type (a statement and its reader disagree: a bug, as in tokio-postgres).
    pub fn get<'a, I: ColumnIndex, T: FromSql<'a>>(&'a self, idx: I) -> T {
        match self.try_get(idx) {
            Ok(value) => value,
            Err(err) => panic!("error reading column {idx}: {err}"),
        }
    }

    /// The value of column `idx`, or why it cannot be read as a `T`.
    pub fn try_get<'a, I: ColumnIndex, T: FromSql<'a>>(&'a self, idx: I) -> Result<T> {
        match self {
            Row::Native(row) => {
                let names = &mut row.columns().iter().map(|c| c.name());
                let i = idx.position(names).ok_or_else(|| missing(idx))?;
                row.try_get(i)
                    .map_err(|e| corrupt(format!("column {idx}: {e}")))
            }
            Row::Binary(row) => {
                let names = &mut row.columns.iter().map(|(c, _)| c.name.as_str());
                let i = idx.position(names).ok_or_else(|| missing(idx))?;
                let ty = &row.columns[i].1;
                if row.columns[i].0.type_oid == 0 && row.values[i].is_none() {
                    return T::from_sql_null(ty).map_err(|e| corrupt(format!("column {idx}: {e}")));
                }
                if !T::accepts(ty) {
                    return Err(corrupt(format!(
                        "column {idx} is {ty}, which {} cannot read",
                        std::any::type_name::<T>()
                    )));
                }
                T::from_sql_nullable(ty, row.values[i].as_deref())
                    .map_err(|e| corrupt(format!("column {idx}: {e}")))
            }
        }
    }

    /// How many columns the row has.
    pub fn len(&self) -> usize {
        match self {
            Row::Native(row) => row.len(),
            Row::Binary(row) => row.values.len(),
        }
    }
}

fn missing(idx: impl fmt::Display) -> Error {
    corrupt(format!("the result has no column {idx}"))
}
