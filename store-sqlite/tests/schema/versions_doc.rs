//! The table of schema versions in `docs/operating.md` ("SQLite schema
//! versions") lists exactly `SCHEMA_VERSIONS`: the same numbers, names and
//! descriptions, in the same order, so a new version cannot ship without
//! its line in the operator's guide.

use duraq_store_sqlite::SCHEMA_VERSIONS;

const OPERATING: &str = include_str!("../../../docs/operating.md");

/// The rows of the first table after the heading `### SQLite schema
/// versions`, each as (version, name without backticks, description).
fn documented_versions() -> Vec<(i64, String, String)> {
    let section = OPERATING
        .split_once("\n### SQLite schema versions\n")
        .expect("docs/operating.md has a \"SQLite schema versions\" section")
        .1;
    section
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2) // the header and its separator
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 3, "a row of three cells: {line}");
            let version = cells[0].parse().expect("a version number");
            let name = cells[1].trim_matches('`').to_owned();
            (version, name, cells[2].to_owned())
        })
        .collect()
}

#[test]
fn the_operating_guide_lists_every_schema_version() {
    let declared: Vec<(i64, String, String)> = SCHEMA_VERSIONS
        .iter()
        .map(|v| (v.version, v.name.to_owned(), v.description.to_owned()))
        .collect();
    assert_eq!(documented_versions(), declared);
}
