//! The preflight on WAL-mode SQLite tenants (`SECURITY.md`): it leaves no file it did
//! not find (`-wal`, `-shm`), reads changes a live application has not yet
//! checkpointed, and answers on read-only storage.
//!
//! Read-only storage is made with permission bits (folders 0555, files 0444).
//! Root ignores them, so when the tests run as root (as in CI) the check runs in
//! a child process of this test binary with uid/gid 65534 (`nobody`), for which
//! the folder really is read-only; the child proves that first by failing to
//! create a file.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use common::wal::{
    closed_wal_db, copy_with, listing, live_writer, runs_as_root, set_read_only, sidecar,
};
use common::{Fixture, STANDARD};
use duraq_tenants::{pending, ErrorCode, PreflightReport, TenantSource};

async fn run(fixture: &Fixture) -> duraq_tenants::Result<PreflightReport> {
    pending(&fixture.request(), &mut |_| {}).await
}

fn pending_of(report: &PreflightReport) -> Vec<(String, Vec<i64>)> {
    let tenants = report.tenants.iter();
    tenants
        .map(|t| (t.name.clone(), t.pending.clone()))
        .collect()
}

/// closed: WAL, cleanly closed; live: WAL, writer open, 2 only in `-wal`;
/// plain: rollback journal, only 1 applied.
fn three_tenants(fixture: &Fixture) -> rusqlite::Connection {
    fixture.migrations(STANDARD);
    closed_wal_db(&fixture.path("tenants/closed.db"), &[1, 2]);
    let writer = live_writer(&fixture.path("tenants/live.db"), &[1], &[2]);
    fixture.tenant_db("plain", Some(&[1]));
    fixture.tenants_file(&[
        ("closed", "sqlite:tenants/closed.db"),
        ("live", "sqlite:tenants/live.db"),
        ("plain", "sqlite:tenants/plain.db"),
    ]);
    writer
}

fn expected() -> Vec<(String, Vec<i64>)> {
    vec![
        ("closed".into(), vec![]),
        ("live".into(), vec![]),
        ("plain".into(), vec![2]),
    ]
}

#[tokio::test]
async fn wal_tenants_are_read_and_their_folder_is_left_as_found() {
    let fixture = Fixture::new();
    let writer = three_tenants(&fixture);
    let before = listing(fixture.dir.path());
    assert!(before.contains(&"tenants/live.db-shm".to_string()));
    let report = run(&fixture).await.unwrap();
    assert_eq!(pending_of(&report), expected());
    assert_eq!(
        listing(fixture.dir.path()),
        before,
        "no -wal/-shm was created"
    );
    // The folder provider reads the same files.
    let mut request = fixture.request();
    request.tenants = TenantSource::Directory(fixture.path("tenants"));
    let report = pending(&request, &mut |_| {}).await.unwrap();
    assert_eq!(pending_of(&report), expected());
    assert_eq!(listing(fixture.dir.path()), before);
    drop(writer);
}

#[tokio::test]
async fn uncheckpointed_changes_of_a_live_writer_are_read() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    let live = fixture.path("tenants/live.db");
    let writer = live_writer(&live, &[1], &[]);
    fixture.tenants_file(&[("live", "sqlite:tenants/live.db")]);
    let report = run(&fixture).await.unwrap();
    assert_eq!(report.tenants[0].pending, vec![2]);
    // The writer records 2 and 99 while it stays open; nothing is checkpointed.
    writer
        .execute_batch("INSERT INTO duraq_tenant_migrations VALUES (2, 'm2', 0), (99, 'x', 0)")
        .unwrap();
    let report = run(&fixture).await.unwrap();
    assert!(!report.has_pending);
    assert_eq!(report.tenants[0].unknown_versions, vec![99]);
    let in_file = rusqlite::Connection::open_with_flags(
        format!("file:{}?immutable=1", live.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap()
    .query_row("SELECT count(*) FROM duraq_tenant_migrations", [], |r| {
        r.get::<_, i64>(0)
    })
    .unwrap();
    assert_eq!(in_file, 1, "2 and 99 were only in the -wal");
    drop(writer);
}

#[tokio::test]
async fn a_stopped_applications_wal_is_read_and_left_alone() {
    let fixture = Fixture::new();
    fixture.migrations(STANDARD);
    let live = fixture.path("live.db");
    let writer = live_writer(&live, &[1], &[2]);
    let crashed = fixture.path("tenants/crashed.db");
    copy_with(&live, &crashed, &["-wal", "-shm"]);
    copy_with(&live, &fixture.path("tenants/noshm.db"), &["-wal"]);
    drop(writer);
    let wal_len = std::fs::metadata(sidecar(&crashed, "-wal")).unwrap().len();
    fixture.tenants_file(&[("crashed", "sqlite:tenants/crashed.db")]);
    let before = listing(fixture.dir.path());
    let report = run(&fixture).await.unwrap();
    assert!(!report.has_pending, "2 is read from the -wal");
    assert_eq!(listing(fixture.dir.path()), before);
    let after = std::fs::metadata(sidecar(&crashed, "-wal")).unwrap().len();
    assert_eq!(after, wal_len, "nothing was checkpointed");
    // Frames without a -shm cannot be read without creating one: fail closed.
    fixture.tenants_file(&[("noshm", "sqlite:tenants/noshm.db")]);
    let before = listing(fixture.dir.path());
    let err = run(&fixture).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::TenantUnreachable);
    let message = err.to_string();
    assert!(message.contains("noshm.db-shm"), "{message}");
    assert_eq!(listing(fixture.dir.path()), before);
}

#[tokio::test]
async fn a_wal_control_database_is_queried_without_leaving_files() {
    let fixture = Fixture::new();
    let control = fixture.path("control.db");
    let writer = live_writer(&control, &[], &[]);
    writer
        .execute_batch(
            "CREATE TABLE accounts (slug TEXT, db TEXT);
             INSERT INTO accounts VALUES ('a', 'sqlite:tenants/a.db');",
        )
        .unwrap();
    let source = TenantSource::Query {
        control: format!("sqlite:{}", control.display()),
        query: "SELECT slug, db FROM accounts".into(),
    };
    let before = listing(fixture.dir.path());
    assert_eq!(source.list().await.unwrap()[0].name, "a");
    drop(writer);
    let before_closed = listing(fixture.dir.path());
    assert_ne!(before, before_closed, "closing removed -wal and -shm");
    assert_eq!(source.list().await.unwrap()[0].name, "a");
    assert_eq!(listing(fixture.dir.path()), before_closed);
}

/// Set in the unprivileged child: the fixture folder to check.
const CHILD_FIXTURE: &str = "DURAQ_TENANTS_READ_ONLY_FIXTURE";

/// What the preflight must answer, and leave, on a read-only folder.
async fn check_read_only(dir: &Path) {
    let probe = std::fs::write(dir.join("tenants/probe"), "x").unwrap_err();
    assert_eq!(probe.kind(), std::io::ErrorKind::PermissionDenied);
    let before = listing(dir);
    let request = duraq_tenants::TenantsRequest::new(
        common::ID,
        TenantSource::File(dir.join("tenants.json")),
        duraq_tenants::CatalogSource::Dir(dir.join("migrations")),
    );
    let report = pending(&request, &mut |_| {}).await.unwrap();
    let mut want = expected();
    want.push(("stopped".into(), vec![]));
    assert_eq!(pending_of(&report), want);
    assert_eq!(listing(dir), before, "nothing was created or removed");
}

#[tokio::test]
async fn read_only_storage() {
    if let Ok(dir) = std::env::var(CHILD_FIXTURE) {
        return check_read_only(Path::new(&dir)).await;
    }
    let fixture = Fixture::new();
    let writer = three_tenants(&fixture);
    let stopped = fixture.path("tenants/stopped.db");
    copy_with(
        &fixture.path("tenants/live.db"),
        &stopped,
        &["-wal", "-shm"],
    );
    let entries: Vec<(String, String)> = ["closed", "live", "plain", "stopped"]
        .iter()
        .map(|n| (n.to_string(), format!("sqlite:tenants/{n}.db")))
        .collect();
    let refs: Vec<(&str, &str)> = entries
        .iter()
        .map(|(n, u)| (n.as_str(), u.as_str()))
        .collect();
    fixture.tenants_file(&refs);
    let dir = fixture.dir.path();
    let as_root = runs_as_root(dir);
    set_read_only(dir, true);
    if as_root {
        // Root ignores permission bits: check as `nobody` in a child process,
        // while this process keeps the live writer open.
        let output = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "read_only_storage", "--test-threads=1"])
            .env(CHILD_FIXTURE, dir)
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "the unprivileged check failed:\n{text}"
        );
        assert!(
            text.contains("1 passed"),
            "the child ran the check:\n{text}"
        );
    } else {
        check_read_only(dir).await;
    }
    set_read_only(dir, false);
    drop(writer);
}
