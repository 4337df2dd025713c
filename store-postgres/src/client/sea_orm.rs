//! [`Executor`] for SeaORM's `DatabaseTransaction` on PostgreSQL (feature
//! `sea-orm`), so duraq enqueues inside the transaction an application
//! opened with `db.begin()` (or inside `db.transaction_async(…)`'s closure).
//!
//! SeaORM (2.0) keeps its sqlx connection to itself: a statement runs only
//! through its [`ConnectionTrait`], with SeaORM's own values ([`Value`])
//! bound by sqlx. A [`Param`]'s bytes cannot be bound as they are, so each
//! is decoded by its type oid into the [`Value`] that sqlx sends with that
//! same oid ([`value`]); an oid with no such value is refused before
//! anything is sent. duraq's statements bind only such types (int8, text
//! and their arrays, today). One shape has no SeaORM value: an array with a
//! `NULL` element, which goes as its text form with its placeholder cast
//! back to the array type. The way back needs no decoding: each result row
//! is sqlx's own ([`QueryResult::try_as_pg_row`]), its values in binary
//! format with their columns' type oids, and is handed on as it is.
//!
//! `Executor` takes `&mut self` and SeaORM's statements take `&self`, so
//! both `&mut txn` (a `DatabaseTransaction` of the caller's) and `&mut &*txn`
//! (the `&DatabaseTransaction` of a `transaction_async(…)` closure) work.

use ::sea_orm::sea_query::{ArrayType, Value};
use ::sea_orm::{
    ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, QueryResult, RuntimeErr, Statement,
};
use async_trait::async_trait;
use duraq_core::{Error, Result};
use sqlx::postgres::PgRow;

use super::sqlx::rows_of;
use super::{Executor, Param, Rows};
use crate::map_sqlstate;

#[async_trait]
impl Executor for &DatabaseTransaction {
    async fn query(&mut self, sql: &str, params: &[Param]) -> Result<Rows> {
        postgres(self)?;
        let results = self
            .query_all_raw(statement(sql, params)?)
            .await
            .map_err(map_sea_orm_error)?;
        let rows = results
            .iter()
            .map(pg_row)
            .collect::<Result<Vec<&PgRow>>>()?;
        rows_of(rows.into_iter())
    }

    async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        postgres(self)?;
        let done = self
            .execute_raw(statement(sql, params)?)
            .await
            .map_err(map_sea_orm_error)?;
        Ok(done.rows_affected())
    }

    async fn batch(&mut self, sql: &str) -> Result<()> {
        postgres(self)?;
        // No parameters: sqlx sends it with the simple query protocol.
        self.execute_unprepared(sql)
            .await
            .map_err(map_sea_orm_error)?;
        Ok(())
    }
}

/// An owned transaction (`&mut txn`) runs as its reference does.
#[async_trait]
impl Executor for DatabaseTransaction {
    async fn query(&mut self, sql: &str, params: &[Param]) -> Result<Rows> {
        Executor::query(&mut &*self, sql, params).await
    }

    async fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        Executor::execute(&mut &*self, sql, params).await
    }

    async fn batch(&mut self, sql: &str) -> Result<()> {
        Executor::batch(&mut &*self, sql).await
    }
}

/// duraq's SQL text (PostgreSQL's `$1`, `$2`, …, which SeaORM passes
/// through for this backend) with `params` as SeaORM values; the
/// placeholder of an array bound as text is cast back to its type (see
/// [`value`]).
fn statement(sql: &str, params: &[Param]) -> Result<Statement> {
    let mut values = Vec::with_capacity(params.len());
    let mut casts = Vec::with_capacity(params.len());
    for param in params {
        let (value, cast) = value(param)?;
        values.push(value);
        casts.push(cast);
    }
    let sql = if casts.iter().any(Option::is_some) {
        cast_placeholders(sql, &casts)
    } else {
        sql.to_owned()
    };
    Ok(Statement::from_sql_and_values(
        DbBackend::Postgres,
        sql,
        values,
    ))
}

/// Refuses, before anything is sent, a transaction on another database
/// (the application's SeaORM may have other drivers on).
fn postgres(txn: &DatabaseTransaction) -> Result<()> {
    match txn.get_database_backend() {
        DbBackend::Postgres => Ok(()),
        other => Err(Error::Backend {
            message: format!("SeaORM client: the transaction is on {other:?}, not PostgreSQL"),
            source: None,
        }),
    }
}

/// sqlx's row under SeaORM's result.
fn pg_row(result: &QueryResult) -> Result<&PgRow> {
    result.try_as_pg_row().ok_or_else(|| Error::Backend {
        message: "SeaORM client: a result row is not sqlx's PostgreSQL row".to_owned(),
        source: None,
    })
}

/// `param` as the SeaORM value that sqlx binds with the same type oid, and
/// the type its placeholder must be cast to when it is bound as another.
///
/// An array with a `NULL` element (duraq binds some: the unset keys of a
/// batch) cannot be a SeaORM array: sqlx binds those through `Vec<T>`, and
/// sea-query-sqlx 0.9 panics on a `NULL` element. It is bound as its text
/// form (`{"a",NULL}`) instead, and its placeholder cast back to the array
/// type ([`cast_placeholders`]), which PostgreSQL parses with the type's own
/// input function.
fn value(param: &Param) -> Result<(Value, Option<&'static str>)> {
    let bytes = param.value.as_deref();
    let oid = param.type_oid;
    if let Some((_, element, name, ty)) = ARRAYS.iter().find(|(array, ..)| *array == oid) {
        let (element, name) = (*element, *name);
        let Some(bytes) = bytes else {
            return Ok((Value::Array(ty.clone(), None), None));
        };
        let elements = array_elements(bytes, oid)?;
        if elements.iter().all(Option::is_some) {
            let values = elements
                .into_iter()
                .flatten()
                .map(|element_bytes| scalar(element, Some(element_bytes)))
                .collect::<Result<Vec<_>>>()?;
            return Ok((Value::Array(ty.clone(), Some(Box::new(values))), None));
        }
        let literal = array_literal(element, &elements)?;
        return Ok((Value::String(Some(literal)), Some(name)));
    }
    Ok((scalar(oid, bytes)?, None))
}

/// The array types bound: oid, element oid, name, SeaORM's element type.
const ARRAYS: &[(u32, u32, &str, ArrayType)] = &[
    (1000, 16, "bool[]", ArrayType::Bool),
    (1001, 17, "bytea[]", ArrayType::Bytes),
    (1005, 21, "int2[]", ArrayType::SmallInt),
    (1007, 23, "int4[]", ArrayType::Int),
    (1009, 25, "text[]", ArrayType::String),
    (1016, 20, "int8[]", ArrayType::BigInt),
    (1021, 700, "float4[]", ArrayType::Float),
    (1022, 701, "float8[]", ArrayType::Double),
];

/// A scalar parameter (or array element) of type `oid` as a SeaORM value.
fn scalar(oid: u32, bytes: Option<&[u8]>) -> Result<Value> {
    Ok(match oid {
        16 => Value::Bool(bytes.map(|b| decode_bool(b, oid)).transpose()?),
        17 => Value::Bytes(bytes.map(<[u8]>::to_vec)),
        20 => Value::BigInt(
            bytes
                .map(|b| be(b, oid).map(i64::from_be_bytes))
                .transpose()?,
        ),
        21 => Value::SmallInt(
            bytes
                .map(|b| be(b, oid).map(i16::from_be_bytes))
                .transpose()?,
        ),
        23 => Value::Int(
            bytes
                .map(|b| be(b, oid).map(i32::from_be_bytes))
                .transpose()?,
        ),
        25 => Value::String(bytes.map(|b| decode_text(b, oid)).transpose()?),
        700 => Value::Float(
            bytes
                .map(|b| be(b, oid).map(f32::from_be_bytes))
                .transpose()?,
        ),
        701 => Value::Double(
            bytes
                .map(|b| be(b, oid).map(f64::from_be_bytes))
                .transpose()?,
        ),
        3802 => Value::Json(bytes.map(decode_jsonb).transpose()?.map(Box::new)),
        other => {
            return Err(Error::Backend {
                message: format!(
                    "SeaORM client: cannot bind a parameter of type oid {other}: only bool, \
                     bytea, int2, int4, int8, text, float4, float8, jsonb and arrays of all \
                     but jsonb are bound (duraq's statements use no other)"
                ),
                source: None,
            })
        }
    })
}

/// A value's bytes that are not what its type's binary format holds.
fn malformed(oid: u32, what: impl std::fmt::Display) -> Error {
    Error::Backend {
        message: format!("SeaORM client: a parameter of type oid {oid} is malformed: {what}"),
        source: None,
    }
}

/// A fixed-size big-endian value (integers, floats).
fn be<const N: usize>(bytes: &[u8], oid: u32) -> Result<[u8; N]> {
    bytes
        .try_into()
        .map_err(|_| malformed(oid, format_args!("{} bytes, not {N}", bytes.len())))
}

fn decode_bool(bytes: &[u8], oid: u32) -> Result<bool> {
    be::<1>(bytes, oid).map(|[b]| b != 0)
}

fn decode_text(bytes: &[u8], oid: u32) -> Result<String> {
    String::from_utf8(bytes.to_vec()).map_err(|e| malformed(oid, e))
}

/// jsonb's binary format: version 1, then the document as text.
fn decode_jsonb(bytes: &[u8]) -> Result<serde_json::Value> {
    match bytes.split_first() {
        Some((1, text)) => serde_json::from_slice(text).map_err(|e| malformed(3802, e)),
        _ => Err(malformed(3802, "not jsonb version 1")),
    }
}

/// The elements (`None` for `NULL`) of a one-dimensional array in
/// PostgreSQL's binary format: dimension count, flags, element oid, the
/// dimension's length and lower bound, then each element's length and
/// bytes. SeaORM has no other shape: more dimensions, or a lower bound
/// other than 1, are refused.
fn array_elements(mut rest: &[u8], oid: u32) -> Result<Vec<Option<&[u8]>>> {
    let int = |rest: &mut &[u8], what: &str| -> Result<i32> {
        let (head, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| malformed(oid, format_args!("no {what}")))?;
        *rest = tail;
        Ok(i32::from_be_bytes(*head))
    };
    let dimensions = int(&mut rest, "dimension count")?;
    let _has_nulls = int(&mut rest, "flags")?;
    let _element_oid = int(&mut rest, "element type")?;
    let len = match dimensions {
        0 => 0,
        1 => {
            let len = int(&mut rest, "length")?;
            let lower = int(&mut rest, "lower bound")?;
            if lower != 1 {
                return Err(malformed(oid, format_args!("lower bound {lower}, not 1")));
            }
            usize::try_from(len).map_err(|e| malformed(oid, e))?
        }
        n => return Err(malformed(oid, format_args!("{n} dimensions, not 1"))),
    };
    let mut elements = Vec::with_capacity(len);
    for _ in 0..len {
        let size = int(&mut rest, "element length")?;
        let Ok(size) = usize::try_from(size) else {
            elements.push(None);
            continue;
        };
        let (head, tail) = rest
            .split_at_checked(size)
            .ok_or_else(|| malformed(oid, "an element past the end"))?;
        rest = tail;
        elements.push(Some(head));
    }
    if !rest.is_empty() {
        return Err(malformed(oid, "bytes after the last element"));
    }
    Ok(elements)
}

/// An array's text form (`{"a",NULL}`), every element quoted, as the
/// array type's input function reads it.
fn array_literal(element_oid: u32, elements: &[Option<&[u8]>]) -> Result<String> {
    let mut literal = String::from("{");
    for (i, element) in elements.iter().enumerate() {
        if i > 0 {
            literal.push(',');
        }
        let Some(bytes) = element else {
            literal.push_str("NULL");
            continue;
        };
        let text = match scalar(element_oid, Some(bytes))? {
            Value::Bool(Some(b)) => if b { "t" } else { "f" }.to_owned(),
            Value::Bytes(Some(b)) => {
                let hex: String = b.iter().map(|byte| format!("{byte:02x}")).collect();
                format!("\\x{hex}")
            }
            Value::SmallInt(Some(n)) => n.to_string(),
            Value::Int(Some(n)) => n.to_string(),
            Value::BigInt(Some(n)) => n.to_string(),
            Value::String(Some(s)) => s,
            Value::Float(Some(f)) => float_text(f64::from(f)),
            Value::Double(Some(f)) => float_text(f),
            _ => return Err(malformed(element_oid, "not an array element type")),
        };
        literal.push('"');
        for c in text.chars() {
            if c == '"' || c == '\\' {
                literal.push('\\');
            }
            literal.push(c);
        }
        literal.push('"');
    }
    literal.push('}');
    Ok(literal)
}

/// A float as PostgreSQL's input function reads it (Rust's shortest
/// round-trip digits; PostgreSQL's spelling of the non-finite ones).
fn float_text(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else {
        f.to_string()
    }
}

/// `sql` with each placeholder `$n` whose parameter has a cast in `casts`
/// written `($n::type)`. Quoted text, quoted identifiers, comments and
/// dollar-quoted strings are copied as they are.
fn cast_placeholders(sql: &str, casts: &[Option<&str>]) -> String {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 16 * casts.len());
    let mut i = 0;
    // Where the text not yet copied starts.
    let mut copied = 0;
    let find = |from: usize, needle: &str| {
        sql[from..]
            .find(needle)
            .map_or(sql.len(), |at| from + at + needle.len())
    };
    while i < bytes.len() {
        match bytes[i] {
            b'\'' => i = find(i + 1, "'"),
            b'"' => i = find(i + 1, "\""),
            b'-' if bytes.get(i + 1) == Some(&b'-') => i = find(i + 2, "\n"),
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = find(i + 2, "*/"),
            b'$' => {
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                let after_word = i > 0 && {
                    let before = bytes[i - 1];
                    before.is_ascii_alphanumeric() || before == b'_' || before == b'$'
                };
                if digits > 0 && !after_word {
                    let end = i + 1 + digits;
                    let cast = sql[i + 1..end]
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| casts.get(n.checked_sub(1)?).copied().flatten());
                    if let Some(ty) = cast {
                        out.push_str(&sql[copied..i]);
                        out.push_str(&format!("({}::{ty})", &sql[i..end]));
                        copied = end;
                    }
                    i = end;
                } else if !after_word {
                    // A dollar-quoted string: `$tag$ … $tag$`.
                    let tag_len = bytes[i + 1..]
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                        .count();
                    if bytes.get(i + 1 + tag_len) == Some(&b'$') {
                        let tag = &sql[i..i + tag_len + 2];
                        i = find(i + tag.len(), tag);
                    } else {
                        i += 1;
                    }
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied..]);
    out
}

/// SeaORM's errors to duraq's: a server error by its SQLSTATE (SeaORM keeps
/// sqlx's error under its own), as the store's own driver maps it; anything
/// else is a backend error.
fn map_sea_orm_error(err: DbErr) -> Error {
    if let DbErr::Conn(RuntimeErr::SqlxError(sqlx_err))
    | DbErr::Exec(RuntimeErr::SqlxError(sqlx_err))
    | DbErr::Query(RuntimeErr::SqlxError(sqlx_err)) = &err
    {
        if let sqlx::Error::Database(db) = &**sqlx_err {
            if let Some(code) = db.code() {
                let (code, message) = (code.into_owned(), db.message().to_owned());
                return map_sqlstate(&code, &message, Box::new(err));
            }
        }
    }
    Error::backend("SeaORM", err)
}

#[cfg(test)]
mod tests {
    use super::{array_elements, array_literal, cast_placeholders};

    #[test]
    fn casts_only_the_placeholders_asked_for() {
        let casts = [None, Some("text[]")];
        assert_eq!(
            cast_placeholders("SELECT $1, $2::text[], $21, x$2, '$2', \"$2\"", &casts),
            "SELECT $1, ($2::text[])::text[], $21, x$2, '$2', \"$2\""
        );
        assert_eq!(
            cast_placeholders("SELECT $q$ $2 $q$, $2 -- $2\n/* $2 */", &casts),
            "SELECT $q$ $2 $q$, ($2::text[]) -- $2\n/* $2 */"
        );
    }

    #[test]
    fn an_array_with_nulls_reads_back_as_its_text_form() {
        // text[] {'a"\b', NULL}: one dimension, has nulls, element oid 25,
        // length 2, lower bound 1, then each element.
        let mut bytes = Vec::new();
        for n in [1i32, 1, 25, 2, 1, 4] {
            bytes.extend_from_slice(&n.to_be_bytes());
        }
        bytes.extend_from_slice(b"a\"\\b");
        bytes.extend_from_slice(&(-1i32).to_be_bytes());
        let elements = array_elements(&bytes, 1009).unwrap();
        assert_eq!(elements, [Some(&b"a\"\\b"[..]), None]);
        assert_eq!(array_literal(25, &elements).unwrap(), r#"{"a\"\\b",NULL}"#);
        let seven = 7i64.to_be_bytes();
        assert_eq!(
            array_literal(20, &[Some(&seven[..]), None]).unwrap(),
            r#"{"7",NULL}"#
        );
    }
}
