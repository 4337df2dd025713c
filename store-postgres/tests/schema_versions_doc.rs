//! `docs/postgres.md` lists the schema versions as a table (version, name,
//! what it changed); the list operators read must be the one the binary
//! migrates by, [`SCHEMA_VERSIONS`]. No database needed.

use duraq_store_postgres::{SchemaVersion, SCHEMA_VERSIONS};

/// The rows of the table under `## Schema versions`: (version, name, description).
fn documented() -> Vec<(String, String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/postgres.md");
    let text = std::fs::read_to_string(path).expect("docs/postgres.md is readable");
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Schema versions\n"))
        .expect("docs/postgres.md has a `## Schema versions` section");
    section
        .lines()
        .filter(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 3, "a row of three cells: {line}");
            (
                cells[0].to_owned(),
                cells[1].trim_matches('`').to_owned(),
                cells[2].to_owned(),
            )
        })
        // The header and its alignment row.
        .skip(2)
        .collect()
}

fn row(v: &SchemaVersion) -> (String, String, String) {
    (
        v.version.to_string(),
        v.name.to_owned(),
        v.description.to_owned(),
    )
}

#[test]
fn the_documented_versions_are_the_schema_versions() {
    let expected: Vec<_> = SCHEMA_VERSIONS.iter().map(row).collect();
    let documented = documented();
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(
            documented.get(i),
            Some(want),
            "docs/postgres.md, row {}: expected `| {} | `{}` | {} |`",
            i + 1,
            want.0,
            want.1,
            want.2
        );
    }
    assert_eq!(documented.len(), expected.len(), "rows beyond the versions");
}
