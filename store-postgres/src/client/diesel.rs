//! [`Executor`] for diesel's PostgreSQL connections: what the sync
//! `diesel::PgConnection` (feature `diesel`, here) and diesel-async's
//! `AsyncPgConnection` (feature `diesel-async`, [`super::diesel_async`])
//! share.
//!
//! Both run a diesel query through the same query builder, so one statement
//! type serves both: [`statement`] passes duraq's SQL text through verbatim
//! (its `$1`, `$2`, … included: diesel numbers a raw query's binds in the
//! order they are pushed and adds no placeholder of its own) and binds each
//! [`Param`]'s bytes unchanged. diesel binds are typed at compile time, so
//! a parameter is bound as [`ByOid`] of its type oid, one of the types
//! PostgreSQL ships with ([`BOUND_OIDS`]); any other oid is refused before
//! the statement is sent. Result values come back in binary format with
//! their type oids ([`PgValue`]), and are handed on as they are.
//!
//! diesel's connection is synchronous: on `PgConnection`, each
//! [`Executor`] call blocks its thread while the statement runs, as every
//! diesel query does. Call it where blocking is allowed (a
//! `spawn_blocking` closure, deadpool-diesel's `interact`, a dedicated
//! thread driving the future with `Handle::block_on`), not on a busy async
//! worker thread.

use diesel::pg::{Pg, PgTypeMetadata, PgValue};
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::result::Error as DieselError;
use diesel::row::{Field as _, Row};
use diesel::serialize::{IsNull, Output, ToSql};
use diesel::sql_types::HasSqlType;
use duraq_core::{Error, Result};

use super::{Column, Param, Rows};
use crate::map_sqlstate;

/// A SQL type known only by its oid: what a [`Param`] is bound as. Its
/// metadata is the oid itself, so diesel declares the parameter with that
/// type, as sqlx and tokio-postgres do.
#[derive(Clone, Copy, Debug)]
pub(super) struct ByOid<const OID: u32>;

impl<const OID: u32> HasSqlType<ByOid<OID>> for Pg {
    fn metadata(_: &mut Self::MetadataLookup) -> PgTypeMetadata {
        // Array oid 0: a `ByOid` is never an array's element type here (an
        // array parameter is bound by its own oid).
        PgTypeMetadata::new(OID, 0)
    }
}

/// A parameter's value in binary format, written as it is.
#[derive(Debug)]
pub(super) struct RawBytes<'p>(&'p Option<Vec<u8>>);

impl<const OID: u32> ToSql<ByOid<OID>, Pg> for RawBytes<'_> {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> diesel::serialize::Result {
        match self.0 {
            Some(bytes) => {
                std::io::Write::write_all(out, bytes)?;
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        }
    }
}

/// duraq's statement as a diesel query over `params`.
pub(super) type Statement<'p> = BoxedSqlQuery<'p, Pg, SqlQuery>;

/// Generates [`bind`] and [`BOUND_OIDS`] from one list of type oids.
macro_rules! bind_by_oid {
    ($($oid:literal $name:literal),* $(,)?) => {
        /// The type oids a parameter may have, with their names: every type
        /// duraq's statements bind, and the other common built-in ones.
        #[cfg_attr(not(test), allow(dead_code))]
        pub(super) const BOUND_OIDS: &[(u32, &str)] = &[$(($oid, $name)),*];

        /// `query` with `param` bound as its own type.
        fn bind<'p>(query: Statement<'p>, param: &'p Param) -> Result<Statement<'p>> {
            let value = RawBytes(&param.value);
            Ok(match param.type_oid {
                $($oid => query.bind::<ByOid<$oid>, _>(value),)*
                other => {
                    return Err(Error::Backend {
                        message: format!(
                            "diesel client: cannot bind a parameter of type oid {other}: only \
                             PostgreSQL's built-in scalar types and their arrays are bound \
                             (duraq's statements use no other)"
                        ),
                        source: None,
                    })
                }
            })
        }
    };
}

bind_by_oid! {
    16 "bool", 17 "bytea", 18 "char", 19 "name", 20 "int8", 21 "int2", 23 "int4",
    25 "text", 26 "oid", 114 "json", 142 "xml", 650 "cidr", 700 "float4",
    701 "float8", 705 "unknown", 829 "macaddr", 869 "inet", 1042 "bpchar",
    1043 "varchar", 1082 "date", 1083 "time", 1114 "timestamp",
    1184 "timestamptz", 1186 "interval", 1266 "timetz", 1560 "bit",
    1562 "varbit", 1700 "numeric", 2950 "uuid", 3802 "jsonb",
    // Arrays of the above.
    1000 "bool[]", 1001 "bytea[]", 1002 "char[]", 1003 "name[]", 1005 "int2[]",
    1007 "int4[]", 1009 "text[]", 1014 "bpchar[]", 1015 "varchar[]",
    1016 "int8[]", 1021 "float4[]", 1022 "float8[]", 1028 "oid[]", 199 "json[]",
    1115 "timestamp[]", 1182 "date[]", 1183 "time[]", 1185 "timestamptz[]",
    1187 "interval[]", 1231 "numeric[]", 2951 "uuid[]", 3807 "jsonb[]",
}

/// `sql` with `params` bound in order, for either connection.
pub(super) fn statement<'p>(sql: &str, params: &'p [Param]) -> Result<Statement<'p>> {
    params
        .iter()
        .try_fold(diesel::sql_query(sql).into_boxed::<Pg>(), bind)
}

/// A result's rows as [`Rows`]: each column's name and type oid, then every
/// value's bytes. A column's oid is that of its first non-`NULL` value, or
/// else `null_oid(row, column)` (what the connection knows of it; 0 when
/// nothing does).
pub(super) fn rows<'a, R: Row<'a, Pg>>(
    rows: &[R],
    null_oid: impl Fn(&R, usize) -> Option<u32>,
) -> Result<Rows> {
    let Some(first) = rows.first() else {
        return Ok(Rows::default());
    };
    let columns = (0..first.field_count())
        .map(|i| {
            let name = first
                .get(i)
                .and_then(|field| field.field_name().map(str::to_owned))
                .unwrap_or_default();
            let type_oid = rows
                .iter()
                .find_map(|row| row.get(i)?.value().map(|value| oid(&value)))
                .or_else(|| null_oid(first, i))
                .unwrap_or(0);
            Column { name, type_oid }
        })
        .collect();
    let values = rows
        .iter()
        .map(|row| {
            (0..row.field_count())
                .map(|i| {
                    let field = row.get(i).ok_or_else(|| {
                        Error::backend("diesel row", format!("a row has no column {i}"))
                    })?;
                    Ok(field.value().map(|value| value.as_bytes().to_vec()))
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    Ok(Rows { columns, values })
}

fn oid(value: &PgValue<'_>) -> u32 {
    value.get_oid().get()
}

/// diesel's errors to duraq's: a server error by its SQLSTATE, as the
/// store's own driver maps it; anything else is a backend error.
pub(super) fn map_diesel_error(err: DieselError) -> Error {
    if let DieselError::DatabaseError(_, info) = &err {
        if let Some(state) = info.sqlstate() {
            let (code, message) = (state.as_str().to_owned(), info.message().to_owned());
            return map_sqlstate(&code, &message, Box::new(err));
        }
    }
    Error::backend("diesel", err)
}

#[cfg(feature = "diesel")]
mod sync {
    use async_trait::async_trait;
    use diesel::connection::{LoadConnection, SimpleConnection};
    use diesel::pg::{PgConnection, TypeOidLookup};
    use diesel::RunQueryDsl;
    use duraq_core::Result;

    use super::{map_diesel_error, rows, statement};
    use crate::client::{Executor, Param, Rows};

    /// diesel's sync connection: each call runs to its end before it
    /// returns, blocking the calling thread meanwhile (see the module).
    #[async_trait]
    impl Executor for PgConnection {
        async fn query(&mut self, sql: &str, params: &[Param]) -> Result<Rows> {
            query(self, sql, params)
        }

        async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
            let n = statement(sql, params)?
                .execute(self)
                .map_err(map_diesel_error)?;
            Ok(n as u64)
        }

        async fn batch(&mut self, sql: &str) -> Result<()> {
            self.batch_execute(sql).map_err(map_diesel_error)
        }
    }

    /// Outside the `async` body: diesel's rows share their result through
    /// an `Rc`, which a `Send` future cannot hold.
    fn query(conn: &mut PgConnection, sql: &str, params: &[Param]) -> Result<Rows> {
        let cursor = <PgConnection as LoadConnection>::load(conn, statement(sql, params)?)
            .map_err(map_diesel_error)?;
        let loaded = cursor.collect::<diesel::QueryResult<Vec<_>>>();
        let loaded = loaded.map_err(map_diesel_error)?;
        // libpq knows every column's type, `NULL` or not.
        rows(&loaded, |row, i| {
            diesel::row::Row::get(row, i).map(|field| field.lookup().get())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::BOUND_OIDS;

    /// Every oid bound is a built-in type's, under the name it has there.
    #[test]
    fn bound_oids_are_built_in_types() {
        for &(oid, name) in BOUND_OIDS {
            let ty = tokio_postgres::types::Type::from_oid(oid)
                .unwrap_or_else(|| panic!("{oid} is not a built-in type"));
            let expected = match name.strip_suffix("[]") {
                Some(element) => format!("_{element}"),
                None => name.to_owned(),
            };
            assert_eq!(ty.name(), expected, "oid {oid}");
        }
    }
}
