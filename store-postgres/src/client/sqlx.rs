//! [`Executor`] for sqlx's PostgreSQL connection (feature `sqlx`).
//!
//! sqlx sends every bound parameter with the type oid its `Encode` reports
//! and receives prepared statements' results in binary format, so a
//! [`Param`] goes in as it is ([`Raw`]) and a value comes out as its bytes.
//! Statements are prepared once per connection by sqlx's own cache. Their
//! text is duraq's own, every value a bound parameter, hence
//! [`AssertSqlSafe`].

use async_trait::async_trait;
use duraq_core::{Error, Result};
use sqlx::encode::IsNull;
use sqlx::postgres::{
    PgArgumentBuffer, PgArguments, PgConnection, PgRow, PgTypeInfo, PgValueFormat, Postgres,
};
use sqlx::{Arguments, AssertSqlSafe, Column as _, Row as _, TypeInfo as _, ValueRef as _};

use super::{Column, Executor, Param, Rows};
use crate::map_sqlstate;

#[async_trait]
impl Executor for PgConnection {
    async fn query(&mut self, sql: &str, params: &[Param]) -> Result<Rows> {
        let rows = sqlx::query_with(AssertSqlSafe(sql.to_owned()), arguments(params)?)
            .fetch_all(&mut *self)
            .await
            .map_err(map_sqlx_error)?;
        rows_of(rows.iter())
    }

    async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        let done = sqlx::query_with(AssertSqlSafe(sql.to_owned()), arguments(params)?)
            .execute(&mut *self)
            .await
            .map_err(map_sqlx_error)?;
        Ok(done.rows_affected())
    }

    async fn batch(&mut self, sql: &str) -> Result<()> {
        sqlx::raw_sql(AssertSqlSafe(sql.to_owned()))
            .execute(&mut *self)
            .await
            .map_err(map_sqlx_error)?;
        Ok(())
    }
}

/// A sqlx transaction (`&mut tx`) runs on its connection.
#[async_trait]
impl Executor for sqlx::Transaction<'_, Postgres> {
    async fn query(&mut self, sql: &str, params: &[Param]) -> Result<Rows> {
        Executor::query(&mut **self, sql, params).await
    }

    async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        Executor::execute(&mut **self, sql, params).await
    }

    async fn batch(&mut self, sql: &str) -> Result<()> {
        Executor::batch(&mut **self, sql).await
    }
}

/// sqlx's rows (also SeaORM's, [`super::sea_orm`]) as [`Rows`]: the
/// columns of the first, then every row's values as bytes.
pub(super) fn rows_of<'r>(rows: impl ExactSizeIterator<Item = &'r PgRow>) -> Result<Rows> {
    let mut rows = rows.peekable();
    let Some(first) = rows.peek() else {
        return Ok(Rows::default());
    };
    let columns = first
        .columns()
        .iter()
        .map(|column| Column {
            name: column.name().to_owned(),
            type_oid: column.type_info().oid().map_or(0, |oid| oid.0),
        })
        .collect();
    let values = rows.map(values).collect::<Result<_>>()?;
    Ok(Rows { columns, values })
}

/// One row's values as bytes.
fn values(row: &PgRow) -> Result<Vec<Option<Vec<u8>>>> {
    (0..row.len())
        .map(|i| {
            let value = row.try_get_raw(i).map_err(map_sqlx_error)?;
            if value.is_null() {
                return Ok(None);
            }
            if value.format() != PgValueFormat::Binary {
                return Err(Error::backend(
                    format!("sqlx returned column {i} as text, not binary"),
                    value.type_info().name().to_owned(),
                ));
            }
            let bytes = value
                .as_bytes()
                .map_err(|e| Error::backend("sqlx value", e))?;
            Ok(Some(bytes.to_vec()))
        })
        .collect()
}

fn arguments(params: &[Param]) -> Result<PgArguments> {
    let mut arguments = PgArguments::default();
    for param in params {
        arguments
            .add(Raw(param))
            .map_err(|e| Error::backend("binding a parameter for sqlx", e))?;
    }
    Ok(arguments)
}

/// A [`Param`] bound as it is: its bytes, declared with its type oid.
struct Raw<'p>(&'p Param);

impl sqlx::Type<Postgres> for Raw<'_> {
    fn type_info() -> PgTypeInfo {
        // Never used: `produces` names each value's own type.
        PgTypeInfo::with_oid(sqlx::postgres::types::Oid(0))
    }
}

impl<'q> sqlx::Encode<'q, Postgres> for Raw<'_> {
    fn encode_by_ref(
        &self,
        buf: &mut PgArgumentBuffer,
    ) -> std::result::Result<IsNull, sqlx::error::BoxDynError> {
        Ok(match &self.0.value {
            Some(bytes) => {
                buf.extend_from_slice(bytes);
                IsNull::No
            }
            None => IsNull::Yes,
        })
    }

    fn produces(&self) -> Option<PgTypeInfo> {
        Some(PgTypeInfo::with_oid(sqlx::postgres::types::Oid(
            self.0.type_oid,
        )))
    }
}

/// sqlx's errors to duraq's: a server error by its SQLSTATE, as the store's
/// own driver maps it; anything else is a backend error.
pub(super) fn map_sqlx_error(err: sqlx::Error) -> Error {
    if let sqlx::Error::Database(db) = &err {
        if let Some(code) = db.code() {
            let (code, message) = (code.into_owned(), db.message().to_owned());
            return map_sqlstate(&code, &message, Box::new(err));
        }
    }
    Error::backend("sqlx", err)
}
