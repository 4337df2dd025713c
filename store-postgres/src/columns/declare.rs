//! What a line of the job table's description says ([`Column`]) and the macro
//! that turns the lines into the column list, the indices rows are read by,
//! the select list and the reading of a [`duraq_core::Job`]. A macro rather
//! than a list read at run time because two things must be known at compile
//! time: a row's fields by column (a struct literal, so a `Job` field without
//! a column does not compile) and each column's place in a row (constants, so
//! reading a row looks nothing up by name).

/// How PostgreSQL stores a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Text,
    Int8,
    Bool,
    /// Read as text (`::text`) and bound as text.
    Jsonb,
}

impl Kind {
    /// The type as `information_schema.columns.data_type` reports it.
    pub(crate) const fn data_type(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Int8 => "bigint",
            Kind::Bool => "boolean",
            Kind::Jsonb => "jsonb",
        }
    }

    /// The type of a binary `COPY` field.
    pub(crate) fn copy_type(self) -> tokio_postgres::types::Type {
        use tokio_postgres::types::Type;
        match self {
            Kind::Text => Type::TEXT,
            Kind::Int8 => Type::INT8,
            Kind::Bool => Type::BOOL,
            Kind::Jsonb => Type::JSONB,
        }
    }

    /// The element type of the array parameter that carries the column in a
    /// statement (`$n::int8[]`).
    pub(crate) const fn param(self) -> &'static str {
        match self {
            Kind::Text | Kind::Jsonb => "text",
            Kind::Int8 => "int8",
            Kind::Bool => "bool",
        }
    }
}

/// What a fresh row (an enqueue's `INSERT` or `COPY`) puts in a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fresh {
    /// A bound value, from the job or its args text.
    Bind,
    /// The column's default: a later transition or statement writes it.
    Default,
    /// Decided by the registered dedupe scopes (`crate::dedupe`): the
    /// `INSERT` computes it in its statement, `COPY` binds what Rust decided.
    Scoped,
}

/// What writing a transition back (`crate::rows::save_jobs`) does with a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Save {
    /// The row's key, matched rather than set.
    Key,
    /// Set from the job.
    Set,
    /// Left as it is: no transition changes it.
    Keep,
}

/// One column of `duraq_jobs` (its definition is in [`super::TABLE_COLUMNS`]).
pub(crate) struct Column {
    pub name: &'static str,
    pub kind: Kind,
    /// The schema version that introduced it: an older table gains it in place.
    pub since: i64,
    pub fresh: Fresh,
    pub save: Save,
    /// Whether reading a job selects it ([`super::JOB_COLUMNS`]).
    pub selected: bool,
    /// Whether it holds the [`duraq_core::Job`] field of its name.
    #[cfg(test)]
    pub job_field: bool,
    /// Its value for a row being written.
    pub write: for<'a> fn(&super::Source<'a>) -> super::Value<'a>,
}

/// `list` without its leading `", "`, at compile time.
pub(crate) const fn skip_separator(list: &str) -> &str {
    match std::str::from_utf8(list.as_bytes().split_at(2).1) {
        Ok(rest) => rest,
        Err(_) => panic!("the select list is ASCII"),
    }
}

/// Declares the job table from one line per column:
/// `name Kind "definition" since Fresh Save value;` where `value` is
/// `job(Codec)` for a [`duraq_core::Job`] field of the same name (read and
/// written by `Codec`), or `internal(read | unread, writer)` for a column of
/// the store's own, selected by a job read or not.
macro_rules! job_columns {
    ($($name:ident $kind:ident $definition:literal $since:literal $fresh:ident $save:ident
        $how:ident ( $($arg:tt)* );)*) => {
        /// Every column of `duraq_jobs`, in the table's order.
        pub(crate) const COLUMNS: &[Column] = &[$(Column {
            name: stringify!($name),
            kind: Kind::$kind,
            since: $since,
            fresh: Fresh::$fresh,
            save: Save::$save,
            selected: job_columns!(@selected $how($($arg)*)),
            #[cfg(test)]
            job_field: job_columns!(@job_field $how($($arg)*)),
            write: write::$name,
        }),*];

        /// The job table's columns for `crate::schema_def::TABLES`:
        /// (name, `information_schema` type, definition).
        pub(crate) const TABLE_COLUMNS: &[(&str, &str, &str)] =
            &[$((stringify!($name), Kind::$kind.data_type(), $definition)),*];

        /// The columns a job read selects, in the table's order.
        pub(crate) const JOB_COLUMNS: &str =
            skip_separator(concat!($(job_columns!(@select $name $kind $how($($arg)*))),*));

        /// [`JOB_COLUMNS`] for a report, which never reads the args: they
        /// select as JSON `'null'` instead of being sent and parsed.
        pub(crate) const REPORT_COLUMNS: &str =
            skip_separator(concat!($(job_columns!(@report $name $kind $how($($arg)*))),*));

        #[allow(non_camel_case_types, dead_code)]
        enum Order { $($name),* }

        /// The place of column `order` in a row read with [`JOB_COLUMNS`].
        const fn position(order: usize) -> usize {
            let (mut i, mut n) = (0, 0);
            while i < order {
                if COLUMNS[i].selected {
                    n += 1;
                }
                i += 1;
            }
            n
        }

        /// Each selected column's place in a row read with [`JOB_COLUMNS`]:
        /// `row.get(col::timeout_ms)`.
        #[allow(non_upper_case_globals, dead_code)]
        pub(crate) mod col {
            $($crate::columns::declare::job_columns!(@index $name $how($($arg)*));)*
        }

        /// (name, place) of every selected column, for the tests.
        #[cfg(test)]
        pub(crate) const PLACES: &[Option<(&str, usize)>] =
            &[$(job_columns!(@place $name $how($($arg)*))),*];

        /// One writer per column, named after it.
        mod write {
            #[allow(clippy::wildcard_imports)]
            use super::*;
            $(pub(super) fn $name<'a>(s: &Source<'a>) -> Value<'a> {
                job_columns!(@write s $name $how($($arg)*))
            })*
        }

        /// The job a row read with [`JOB_COLUMNS`] holds.
        pub(crate) fn job_from_row(row: &Row) -> Result<Job> {
            job_columns!(@job row [] $($name $how($($arg)*))*)
        }
    };
    (@selected job($codec:ident)) => { true };
    (@selected internal(read, $writer:ident)) => { true };
    (@selected internal(unread, $writer:ident)) => { false };
    (@job_field job($codec:ident)) => { true };
    (@job_field internal($($arg:tt)*)) => { false };
    (@place $name:ident internal(unread, $writer:ident)) => { None };
    (@place $name:ident $($how:tt)*) => { Some((stringify!($name), col::$name)) };
    (@index $name:ident internal(unread, $writer:ident)) => {};
    (@index $name:ident $($how:tt)*) => {
        pub(crate) const $name: usize = super::position(super::Order::$name as usize);
    };
    (@report $name:ident $kind:ident job(Args)) => { ", 'null'::text" };
    (@report $($rest:tt)*) => { job_columns!(@select $($rest)*) };
    (@select $name:ident $kind:ident internal(unread, $writer:ident)) => { "" };
    (@select $name:ident Jsonb $($how:tt)*) => { concat!(", ", stringify!($name), "::text") };
    (@select $name:ident $kind:ident $($how:tt)*) => { concat!(", ", stringify!($name)) };
    (@write $s:ident $name:ident job($codec:ident)) => {{
        let job = $s.job;
        $codec::write(&job.$name, $s)
    }};
    (@write $s:ident $name:ident internal($read:ident, $writer:ident)) => { super::$writer($s) };
    (@job $row:ident [$($done:tt)*]) => { Ok(Job { $($done)* }) };
    (@job $row:ident [$($done:tt)*] $name:ident job($codec:ident) $($rest:tt)*) => {
        job_columns!(@job $row [$($done)* $name: $codec::read($row, col::$name, stringify!($name))?,]
            $($rest)*)
    };
    (@job $row:ident [$($done:tt)*] $name:ident internal($($arg:tt)*) $($rest:tt)*) => {
        job_columns!(@job $row [$($done)*] $($rest)*)
    };
}

pub(crate) use job_columns;
