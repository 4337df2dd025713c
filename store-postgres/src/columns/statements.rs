//! The statements and lists derived from [`COLUMNS`]: what a fresh row sets
//! (`INSERT … SELECT FROM unnest(…)` in [`crate::insert`], `COPY` in
//! [`crate::copy`]), the write-back of a transition ([`save_sql`]), and what
//! an upgrade adds in place ([`added`]). Each text is built once per process;
//! it is the same every time, so the statement caches keep one prepared
//! statement each.

use std::sync::OnceLock;

use tokio_postgres::types::Type;

use super::{Array, Column, Fresh, Kind, Save, Source, COLUMNS};

/// The columns a fresh row binds, in the table's order.
pub(crate) fn bound() -> impl Iterator<Item = &'static Column> {
    COLUMNS.iter().filter(|c| c.fresh == Fresh::Bind)
}

/// How many columns a fresh row binds.
pub(crate) const BOUND: usize = {
    let (mut i, mut n) = (0, 0);
    while i < COLUMNS.len() {
        if matches!(COLUMNS[i].fresh, Fresh::Bind) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// How many columns a fresh row sets ([`fresh`]).
pub(crate) const FRESH: usize = {
    let (mut i, mut n) = (0, 0);
    while i < COLUMNS.len() {
        if matches!(COLUMNS[i].fresh, Fresh::Bind | Fresh::Scoped) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The columns a fresh row sets: those bound, then the dedupe key.
pub(crate) fn fresh() -> impl Iterator<Item = &'static Column> {
    bound().chain(COLUMNS.iter().filter(|c| c.fresh == Fresh::Scoped))
}

/// The columns written back after a transition: the key, then those set.
fn saved() -> impl Iterator<Item = &'static Column> {
    let key = COLUMNS.iter().filter(|c| c.save == Save::Key);
    key.chain(COLUMNS.iter().filter(|c| c.save == Save::Set))
}

/// `a, b, c`.
pub(crate) fn names<'c>(columns: impl Iterator<Item = &'c Column>) -> String {
    columns.map(|c| c.name).collect::<Vec<_>>().join(", ")
}

/// One array parameter per column, from `$first`: `$1::text[], $2::int8[]`.
pub(crate) fn array_params<'c>(columns: impl Iterator<Item = &'c Column>, first: usize) -> String {
    let params: Vec<String> = (columns.enumerate())
        .map(|(i, c)| format!("${}::{}[]", first + i, c.kind.param()))
        .collect();
    params.join(", ")
}

/// The values of `columns` over `rows`, one array each.
pub(crate) fn arrays<'a, 'c>(
    columns: impl Iterator<Item = &'c Column>,
    rows: &[Source<'a>],
) -> Vec<Array<'a>> {
    columns.map(|c| Array::of(c.name, c.write, rows)).collect()
}

/// Fresh rows through `COPY`: [`fresh`]'s columns, in order.
pub(crate) fn copy_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| {
        format!(
            "COPY {{s}}.duraq_jobs ({}) FROM STDIN (FORMAT binary)",
            names(fresh())
        )
    })
}

/// The field types of [`copy_sql`], as the binary format needs them.
pub(crate) fn copy_types() -> &'static [Type] {
    static TYPES: OnceLock<Vec<Type>> = OnceLock::new();
    TYPES.get_or_init(|| fresh().map(|c| c.kind.copy_type()).collect())
}

/// Writes back the columns a transition changes, many rows per statement
/// (`UNNEST` of one array per column, the key first): parameters are
/// [`arrays`] of the saved columns.
pub(crate) fn save_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| {
        let key = COLUMNS.iter().find(|c| c.save == Save::Key);
        let key = key.expect("the job table has a key").name;
        let set: Vec<String> = (COLUMNS.iter().filter(|c| c.save == Save::Set))
            .map(|c| match c.kind {
                Kind::Jsonb => format!("{0} = v.{0}::jsonb", c.name),
                _ => format!("{0} = v.{0}", c.name),
            })
            .collect();
        format!(
            "UPDATE {{s}}.duraq_jobs AS j SET {} FROM unnest({}) AS v({}) WHERE j.{key} = v.{key}",
            set.join(", "),
            array_params(saved(), 1),
            names(saved())
        )
    })
}

/// The parameters of [`save_sql`] for `rows`.
pub(crate) fn save_arrays<'a>(rows: &[Source<'a>]) -> Vec<Array<'a>> {
    arrays(saved(), rows)
}

/// The columns added after version 1, with the version that added each: an
/// older table gains them in place (`ALTER TABLE … ADD COLUMN`).
pub(crate) fn added() -> impl Iterator<Item = (&'static str, i64)> {
    (COLUMNS.iter().filter(|c| c.since > 1)).map(|c| (c.name, c.since))
}
