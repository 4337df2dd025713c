//! The statements derived from [`super::COLUMNS`]: the SELECT lists (built at
//! compile time, so a query's text is a constant and a row's columns have
//! fixed indexes), which columns each insert statement binds and which it
//! writes as literals, and which columns `save_job`'s `UPDATE` writes.
//! Their texts are built once per process by the modules that run them.

use super::{Holds, Insert, JobColumn, COLUMNS};

/// Which columns a statement takes.
#[derive(Clone, Copy)]
enum Which {
    /// A `Job` field: what a SELECT reads.
    Selected,
    /// Bound by the insert of fresh rows ([`crate::insert`]).
    FreshBound,
    /// Bound by the insert of a row with dependencies ([`crate::insert_started`]).
    StartedBound,
    /// Written by [`crate::rows::save_job`].
    Saved,
}

const fn is(c: &JobColumn, which: Which) -> bool {
    match which {
        Which::Selected => !matches!(c.holds, Holds::Internal),
        Which::FreshBound => matches!(c.insert, Insert::Bind),
        Which::StartedBound => matches!(c.insert, Insert::Bind | Insert::Started(_)),
        Which::Saved => c.saved,
    }
}

const fn count(which: Which) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < COLUMNS.len() {
        if is(&COLUMNS[i], which) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The indexes in [`COLUMNS`] of the columns `which` takes, in table order.
const fn indexes<const N: usize>(which: Which) -> [usize; N] {
    let mut out = [0; N];
    let (mut i, mut n) = (0, 0);
    while i < COLUMNS.len() {
        if is(&COLUMNS[i], which) {
            out[n] = i;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N);
    out
}

/// The columns the insert of fresh rows binds, in the order it binds them.
pub(crate) const FRESH_BOUND: [usize; count(Which::FreshBound)] = indexes(Which::FreshBound);

/// The columns the insert of a row with dependencies binds, in order.
pub(crate) const STARTED_BOUND: [usize; count(Which::StartedBound)] = indexes(Which::StartedBound);

/// The columns `save_job` writes, bound from `?2` on (`?1` is the id).
pub(crate) const SAVED: [usize; count(Which::Saved)] = indexes(Which::Saved);

/// How many columns [`JOB_COLUMNS`] names (a query may select more after them).
pub(crate) const JOB_COLUMN_COUNT: usize = count(Which::Selected);

/// The columns a job is read from, in table order (see
/// [`super::job_from_row`]).
pub(crate) const JOB_COLUMNS: &str = utf8(&SELECT);

/// [`JOB_COLUMNS`] for a report, which never reads the args: they select as
/// JSON `'null'` instead of being read and parsed.
pub(crate) const REPORT_COLUMNS: &str = utf8(&REPORT_SELECT);

const SELECT: [u8; select_len(false)] = select(false);
const REPORT_SELECT: [u8; select_len(true)] = select(true);

/// What the SELECT list names for `c` (a selected column).
const fn selected_as(c: &JobColumn, skip_args: bool) -> &'static str {
    match c.holds {
        Holds::Args if skip_args => "'null'",
        _ => c.column.name,
    }
}

const fn select_len(skip_args: bool) -> usize {
    let (mut i, mut len) = (0, 0);
    while i < COLUMNS.len() {
        if is(&COLUMNS[i], Which::Selected) {
            len += selected_as(&COLUMNS[i], skip_args).len() + 2;
        }
        i += 1;
    }
    len - 2
}

/// The selected columns joined by `", "`.
const fn select<const N: usize>(skip_args: bool) -> [u8; N] {
    let mut out = [0; N];
    let (mut i, mut n) = (0, 0);
    while i < COLUMNS.len() {
        if is(&COLUMNS[i], Which::Selected) {
            if n > 0 {
                out[n] = b',';
                out[n + 1] = b' ';
                n += 2;
            }
            let name = selected_as(&COLUMNS[i], skip_args).as_bytes();
            let mut j = 0;
            while j < name.len() {
                out[n] = name[j];
                n += 1;
                j += 1;
            }
        }
        i += 1;
    }
    out
}

const fn utf8(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => panic!("column names are UTF-8"),
    }
}

/// The index in [`JOB_COLUMNS`] of the `Job` field column `name` (evaluated at
/// compile time for [`super::col`](mod@super::col); a name that is not one fails the build).
pub(crate) const fn select_index(name: &str) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < COLUMNS.len() {
        if is(&COLUMNS[i], Which::Selected) {
            if same(COLUMNS[i].column.name, name) {
                return n;
            }
            n += 1;
        }
        i += 1;
    }
    panic!("not a selected job column")
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `INSERT OR FAIL INTO duraq_jobs (…) VALUES (…), (…)` of `rows` fresh rows:
/// the [`FRESH_BOUND`] columns as parameters, then the literals every fresh
/// row shares.
pub(crate) fn insert_sql(rows: usize) -> String {
    let literals = COLUMNS.iter().filter_map(|c| match c.insert {
        Insert::Fresh(value) | Insert::Started(Some(value)) => Some((c.column.name, value)),
        _ => None,
    });
    insert("INSERT OR FAIL", &FRESH_BOUND, literals, rows)
}

/// `INSERT INTO duraq_jobs (…) VALUES (…)` of one row with dependencies: the
/// [`STARTED_BOUND`] columns as parameters, then the other fresh literals.
pub(crate) fn started_sql() -> String {
    let literals = COLUMNS.iter().filter_map(|c| match c.insert {
        Insert::Fresh(value) => Some((c.column.name, value)),
        _ => None,
    });
    insert("INSERT", &STARTED_BOUND, literals, 1)
}

fn insert<'a>(
    verb: &str,
    bound: &[usize],
    literals: impl Iterator<Item = (&'a str, &'a str)>,
    rows: usize,
) -> String {
    let (literal_columns, literal_values): (Vec<&str>, Vec<&str>) = literals.unzip();
    let columns: Vec<&str> = (bound.iter().map(|&i| COLUMNS[i].column.name))
        .chain(literal_columns)
        .collect();
    let values: Vec<&str> = std::iter::repeat_n("?", bound.len())
        .chain(literal_values)
        .collect();
    let one_row = format!("({})", values.join(", "));
    format!(
        "{verb} INTO duraq_jobs ({}) VALUES {}",
        columns.join(", "),
        vec![one_row; rows].join(", ")
    )
}

/// `UPDATE duraq_jobs SET … WHERE id = ?1` of the [`SAVED`] columns.
pub(crate) fn update_sql() -> String {
    let set: Vec<String> = (SAVED.iter().enumerate())
        .map(|(n, &i)| format!("{} = ?{}", COLUMNS[i].column.name, n + 2))
        .collect();
    format!("UPDATE duraq_jobs SET {} WHERE id = ?1", set.join(", "))
}
