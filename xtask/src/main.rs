//! `cargo xtask`: the project's scripted chores, in Rust so they run anywhere cargo
//! does (matklad's xtask pattern; deliberately few dependencies).
//!
//! - `cargo xtask test-all [--skip-postgres]`: fmt check, clippy with `-D warnings`,
//!   `cargo doc` with `-D warnings` (every public item documented, every link
//!   resolving), the whole workspace's tests with `DATABASE_URL` pointing at
//!   PostgreSQL (the caller's, or a throwaway server started here and removed
//!   afterwards), `cargo package` of every publishable crate (built from its
//!   `.crate` file, so a crate that only builds inside the workspace fails here),
//!   then `bench --quick` so the benchmark tool cannot rot.
//! - `cargo xtask pg`: starts a throwaway server, prints its URL, waits for Ctrl-C.

mod bench;
mod pg;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  test-all [--skip-postgres]   fmt check, clippy -D warnings, cargo doc -D warnings,
                               cargo test --workspace (DATABASE_URL, or a throwaway
                               PostgreSQL), all three with --features duraq-cli/otel,
                               cargo package, bench --quick
  pg [--durable]               start a throwaway PostgreSQL, print its URL, wait for Ctrl-C
                               (fsync off for fast tests; --durable: stock settings, as bench)
  package                      cargo package of every publishable crate, verified
                               (the test-all step alone)
  bench [--quick] [--stores sqlite,postgres]
                               benchmarks (issue 7): table + target/bench/results.json";

/// The optional features `test-all` lints, documents and tests with: the OTLP
/// export of the `duraq` program, which turns on duraq-core's `otel`, so the
/// OpenTelemetry end-to-end test (`cli/tests/otel.rs`) runs in the gate; and
/// the stores' application clients (sqlx, diesel, diesel-async, SeaORM), off
/// by default.
const GATE_FEATURES: &str = "duraq-cli/otel,duraq-store-postgres/sqlx,\
     duraq-store-postgres/diesel,duraq-store-postgres/diesel-async,\
     duraq-store-postgres/sea-orm,duraq-store-sqlite/sqlx,duraq-store-sqlite/diesel";

fn main() {
    if let Err(e) = real_main() {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test-all") => {
            let mut skip_postgres = false;
            for arg in &args[1..] {
                match arg.as_str() {
                    "--skip-postgres" => skip_postgres = true,
                    other => bail!("unknown test-all argument {other:?}\n\n{USAGE}"),
                }
            }
            test_all(skip_postgres)
        }
        Some("pg") if args.len() == 1 => serve_pg(false),
        Some("pg") if args.len() == 2 && args[1] == "--durable" => serve_pg(true),
        Some("bench") => bench::run(&workspace_root(), &args[1..]),
        Some("package") if args.len() == 1 => {
            let (name, took, ok) = step("cargo package", &mut package_command(&workspace_root())?);
            println!("{name}: {}", secs(took));
            if !ok {
                bail!("cargo package failed");
            }
            Ok(())
        }
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => bail!("{USAGE}"),
    }
}

/// Where PostgreSQL comes from for a run: the caller's server or our own.
enum Postgres {
    External(String),
    Temp(pg::TempPostgres),
    Skipped,
}

impl Postgres {
    fn url(&self) -> Option<&str> {
        match self {
            Self::External(url) => Some(url),
            Self::Temp(server) => Some(server.url()),
            Self::Skipped => None,
        }
    }
}

fn test_all(skip_postgres: bool) -> Result<()> {
    let root = workspace_root();
    let total = Instant::now();
    let mut results: Vec<(&str, Duration, bool)> = Vec::new();

    let postgres = match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => {
            println!("==> PostgreSQL: using DATABASE_URL from the environment");
            Postgres::External(url)
        }
        _ if skip_postgres => {
            println!(
                "==> PostgreSQL: skipped (--skip-postgres); PostgreSQL tests are filtered out"
            );
            Postgres::Skipped
        }
        _ => {
            let started = Instant::now();
            println!("==> PostgreSQL: starting a throwaway server");
            let server = pg::TempPostgres::start()?;
            let took = started.elapsed();
            println!("<== PostgreSQL: {} ready in {}", server.url(), secs(took));
            results.push(("start postgres", took, true));
            Postgres::Temp(server)
        }
    };

    let mut fmt = cargo(&root);
    fmt.args(["fmt", "--all", "--", "--check"]);
    results.push(step("cargo fmt --check", &mut fmt));

    // Lint, document and test with the optional OpenTelemetry export on
    // (`docs/tracing.md`), one feature set for all three so that nothing is
    // built twice; `cargo package` below builds every crate's default.
    let mut clippy = cargo(&root);
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--features",
        GATE_FEATURES,
        "--",
        "-D",
        "warnings",
    ]);
    results.push(step("cargo clippy", &mut clippy));

    // Every public item documented and every intra-doc link resolving: the
    // library crates deny `missing_docs` warnings through this flag.
    let mut doc = cargo(&root);
    doc.args([
        "doc",
        "--workspace",
        "--no-deps",
        "--features",
        GATE_FEATURES,
    ])
    .env("RUSTDOCFLAGS", "-D warnings");
    results.push(step("cargo doc", &mut doc));

    let mut test = cargo(&root);
    test.args(["test", "--workspace", "--features", GATE_FEATURES]);
    match postgres.url() {
        Some(url) => {
            test.env("DATABASE_URL", url);
        }
        None => {
            test.env_remove("DATABASE_URL");
            test.args(["--", "--skip", "postgres"]);
        }
    }
    results.push(step("cargo test", &mut test));

    // Every publishable crate packaged and built from its `.crate` file, siblings
    // resolved through cargo's local overlay of the packages being made.
    let mut package = package_command(&root)?;
    results.push(step("cargo package", &mut package));

    // The benchmark smoke run, so `cargo xtask bench` cannot rot (issue 7).
    let mut bench = cargo(&root);
    bench.args(["xtask", "bench", "--quick"]);
    match postgres.url() {
        Some(url) => {
            bench.env("DATABASE_URL", url);
        }
        None => {
            bench.args(["--stores", "sqlite"]);
        }
    }
    results.push(step("bench --quick", &mut bench));

    let started = Instant::now();
    drop(postgres);
    results.push(("stop postgres", started.elapsed(), true));

    println!("\nsummary:");
    for (name, took, ok) in &results {
        println!(
            "  {:<20} {:>9}  {}",
            name,
            secs(*took),
            if *ok { "ok" } else { "FAILED" }
        );
    }
    println!("  {:<20} {:>9}", "total", secs(total.elapsed()));
    let failed: Vec<&str> = results.iter().filter(|r| !r.2).map(|r| r.0).collect();
    if !failed.is_empty() {
        bail!("failed: {}", failed.join(", "));
    }
    Ok(())
}

/// `cargo package` of every publishable crate, verified: each is built from its
/// `.crate` file, so a crate that only builds inside the workspace (a file
/// outside its folder, a sibling without a version) fails here.
///
/// The verification builds get their own target folder, `<target>/package-verify`
/// (dependencies compiled once and kept; about 2.5 CPU-minutes the first time),
/// and each run first forgets what earlier runs built of our own crates there.
/// Cargo unpacks a sibling's `.crate` with the archive's fixed, old file times,
/// so a build of `duraq-core 0.1.0` from the previous run looked fresh and the
/// next run verified `duraq-cli` against the previous run's `duraq-core`.
fn package_command(root: &Path) -> Result<Command> {
    let (publishable, target_dir) = publishable_packages(root)?;
    let verify_dir = target_dir.join("package-verify");
    forget_unpacked_overlay_sources(&publishable);
    forget_builds_of(&verify_dir.join("debug").join(".fingerprint"), &publishable);
    let mut package = cargo(root);
    package
        .args([
            "package",
            "--allow-dirty",
            "--config",
            "profile.dev.debug=false",
        ])
        .arg("--target-dir")
        .arg(&verify_dir);
    for name in &publishable {
        package.args(["-p", name]);
    }
    println!("\n==> packaging {}", publishable.join(", "));
    Ok(package)
}

/// Removes the fingerprints of `packages` in `fingerprints`, so that cargo
/// rebuilds them (and nothing else).
fn forget_builds_of(fingerprints: &Path, packages: &[String]) {
    let Ok(entries) = std::fs::read_dir(fingerprints) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if packages
            .iter()
            .any(|p| is_versioned_dir_of(&name, p, |c| c.is_ascii_hexdigit()))
        {
            if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                eprintln!("xtask: could not remove {}: {e}", entry.path().display());
            }
        }
    }
}

/// Whether `dir` is `<package>-<suffix>` with a non-empty suffix of `allowed`
/// characters (a hash, a version): `duraq-mailer` must not match
/// `duraq-mailer-resend-…`.
fn is_versioned_dir_of(dir: &str, package: &str, allowed: impl Fn(char) -> bool) -> bool {
    dir.strip_prefix(package)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|suffix| !suffix.is_empty() && suffix.chars().all(&allowed))
}

/// The workspace members to publish: every one whose `[package]` does not say
/// `publish = false`. Read from the manifests rather than listed here, so a new
/// library is packaged and a new internal crate (tests, examples) is not,
/// without editing this file.
fn publishable_packages(root: &Path) -> Result<(Vec<String>, PathBuf)> {
    let out = cargo(root)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let json = String::from_utf8(out.stdout).context("cargo metadata printed non-UTF-8")?;
    let target_dir = json_string_after(&json, "\"target_directory\":\"")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let mut names = Vec::new();
    // Only package objects carry `manifest_path` (targets have `src_path`).
    for rest in json.split("\"manifest_path\":\"").skip(1) {
        let path = json_string_after(rest, "").unwrap_or_default();
        let manifest = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        match package_section(&manifest) {
            Some((name, true)) => names.push(name),
            Some((_, false)) => {}
            None => bail!("{path}: no [package] name"),
        }
    }
    if names.is_empty() {
        bail!("no publishable package found in the workspace");
    }
    names.sort();
    Ok((names, target_dir))
}

/// The JSON string value right after `key` in `json` (paths need only `\\`
/// unescaped; cargo writes no other escapes into them on Unix).
fn json_string_after(json: &str, key: &str) -> Option<String> {
    let start = json.find(key)? + key.len();
    let value = json[start..].split('"').next()?;
    Some(value.replace("\\\\", "\\"))
}

/// Deletes the sources cargo unpacked from earlier runs' packages of ours.
///
/// `cargo package` verifies a crate against its siblings' fresh `.crate` files
/// through a local overlay registry, but unpacks each of them under
/// `$CARGO_HOME/registry/src/-<hash>/<name>-<version>` and, finding that folder
/// on a later run, reuses it: without this, the second `test-all` on a machine
/// verified `duraq-cli` against the `duraq-core` of the first (same version),
/// and failed on code that was fine. Only folders of local (overlay) registries,
/// whose names start with `-`, and only our own package names are touched;
/// crates.io's sources are not.
fn forget_unpacked_overlay_sources(packages: &[String]) {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry").join("src")) else {
        return;
    };
    let Ok(registries) = std::fs::read_dir(&src) else {
        return;
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        let Ok(unpacked) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for dir in unpacked.flatten() {
            let name = dir.file_name().to_string_lossy().into_owned();
            let ours = packages.iter().any(|p| {
                is_versioned_dir_of(&name, p, |c| c.is_ascii_alphanumeric() || ".+-".contains(c))
                    && name[p.len() + 1..].starts_with(|c: char| c.is_ascii_digit())
            });
            if ours {
                if let Err(e) = std::fs::remove_dir_all(dir.path()) {
                    eprintln!("xtask: could not remove {}: {e}", dir.path().display());
                }
            }
        }
    }
}

/// `(name, publishable)` from a manifest's `[package]` section.
fn package_section(manifest: &str) -> Option<(String, bool)> {
    let mut in_package = false;
    let mut name = None;
    let mut publish = true;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match (in_package, key.trim(), value.trim()) {
            (true, "name", v) => name = Some(v.trim_matches('"').to_owned()),
            (true, "publish", v) => publish = v != "false" && v != "[]",
            _ => {}
        }
    }
    name.map(|n| (n, publish))
}

/// Runs one step, streaming its output, and reports its wall time.
fn step(name: &'static str, cmd: &mut Command) -> (&'static str, Duration, bool) {
    println!("\n==> {name}");
    let started = Instant::now();
    let ok = match cmd.status() {
        Ok(status) => status.success(),
        Err(e) => {
            eprintln!("could not run {cmd:?}: {e}");
            false
        }
    };
    let took = started.elapsed();
    println!(
        "<== {name}: {} in {}",
        if ok { "ok" } else { "FAILED" },
        secs(took)
    );
    (name, took, ok)
}

fn serve_pg(durable: bool) -> Result<()> {
    let server = if durable {
        pg::TempPostgres::start_durable()
    } else {
        pg::TempPostgres::start()
    }
    .context("starting PostgreSQL")?;
    println!("{}", server.url());
    eprintln!(
        "PostgreSQL is running; export DATABASE_URL={}; Ctrl-C stops and deletes it",
        server.url()
    );
    // Ctrl-C ends this process; the server's watchdog then stops and deletes it.
    loop {
        std::thread::park();
    }
}

/// A cargo command in the workspace root, without the variables `cargo run`
/// set for xtask itself: build scripts that track them (ring's tracks
/// `CARGO_MANIFEST_DIR`) would otherwise rebuild everything above them whenever
/// a developer alternates `cargo build` and `cargo xtask`.
fn cargo(root: &Path) -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key == "CARGO_MANIFEST_DIR"
            || key == "CARGO_MANIFEST_PATH"
            || key == "CARGO_PRIMARY_PACKAGE"
            || key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_BIN_")
            || key == "CARGO_CRATE_NAME"
        {
            cmd.env_remove(key.as_ref());
        }
    }
    cmd
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_owned()
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::{is_versioned_dir_of, package_section, publishable_packages, workspace_root};

    #[test]
    fn versioned_dirs_match_their_own_package_only() {
        let hex = |c: char| c.is_ascii_hexdigit();
        assert!(is_versioned_dir_of(
            "duraq-mailer-0f3a",
            "duraq-mailer",
            hex
        ));
        assert!(!is_versioned_dir_of(
            "duraq-mailer-resend-0f3a",
            "duraq-mailer",
            hex
        ));
        assert!(!is_versioned_dir_of("duraq-mailer", "duraq-mailer", hex));
    }

    #[test]
    fn the_workspace_publishes_its_libraries_and_the_cli_only() {
        let (names, target) = publishable_packages(&workspace_root()).unwrap();
        assert!(target.is_absolute(), "{}", target.display());
        for lib in ["duraq-core", "duraq-store-sqlite", "duraq-cli"] {
            assert!(
                names.iter().any(|n| n == lib),
                "{lib} missing from {names:?}"
            );
        }
        for internal in ["xtask", "duraq-tests", "duraq-bench"] {
            assert!(
                !names.iter().any(|n| n == internal),
                "{internal} in {names:?}"
            );
        }
    }

    #[test]
    fn reads_name_and_publish_from_the_package_section_only() {
        let lib = "[package]\nname = \"duraq-core\"\nversion.workspace = true\n\n[dependencies]\nname = \"x\"\n";
        assert_eq!(package_section(lib), Some(("duraq-core".into(), true)));
        let internal = "[package]\nname = \"xtask\"\npublish = false\n";
        assert_eq!(package_section(internal), Some(("xtask".into(), false)));
        let nowhere = "[package]\nname = \"e\"\npublish = []\n";
        assert_eq!(package_section(nowhere), Some(("e".into(), false)));
        assert_eq!(package_section("[workspace]\nmembers = []\n"), None);
    }
}
