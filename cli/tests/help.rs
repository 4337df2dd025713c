//! The help surface of the built `duraq` binary: shell completions and the man
//! page are generated from the clap tree and printed on stdout, `--help` shows
//! descriptions and examples, and `tenants` refuses a `--database` typed on its
//! command line (it would be ignored) while tolerating `DURAQ_DATABASE_URL`.
//!
//! The walk over every command and argument of the clap tree is a unit test
//! (`cli/src/help_tree.rs`), where `Cli` is reachable; this file only runs the
//! binary, as a user would.

use std::process::{Command, Output};

fn duraq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duraq"))
        .args(args)
        .env_remove("DURAQ_DATABASE_URL")
        .env_remove("DURAQ_SCHEMA")
        .output()
        .expect("run duraq")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn succeeds(args: &[&str]) -> String {
    let out = duraq(args);
    assert_eq!(out.status.code(), Some(0), "duraq {args:?}: {out:?}");
    assert!(
        out.stderr.is_empty(),
        "duraq {args:?} wrote to stderr: {out:?}"
    );
    stdout(&out)
}

#[test]
fn completion_scripts_name_the_program_and_its_commands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = succeeds(&["completions", shell]);
        assert!(script.contains("duraq"), "{shell}: {script}");
        for command in ["enqueue", "schedule", "worker", "tenants"] {
            assert!(script.contains(command), "{shell} lacks {command}");
        }
        assert!(
            script.contains("include-latest-terminal"),
            "{shell}: nested flags"
        );
    }
    let bash = succeeds(&["completions", "bash"]);
    assert!(bash.contains("complete -F"), "{bash}");
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let out = duraq(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bash"));
}

#[test]
fn the_man_page_is_roff_and_lists_the_commands() {
    let page = succeeds(&["man"]);
    assert!(page.starts_with(".ie") || page.starts_with(".TH"), "{page}");
    assert!(page.contains(".TH duraq 1"), "{page}");
    for command in ["enqueue", "schedule", "jobs", "worker", "completions"] {
        assert!(page.contains(command), "the page lacks {command}");
    }
    assert!(
        page.contains("DURAQ_DATABASE_URL"),
        "environment of --database"
    );
    assert!(!page.contains('§'), "no internal references");
}

#[test]
fn man_out_writes_one_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    let printed = succeeds(&["man", "--out", out_dir.to_str().unwrap()]);
    let answer: serde_json::Value = serde_json::from_str(printed.trim()).unwrap();
    let pages = answer["pages"].as_array().expect("pages");
    assert!(pages.len() > 20, "{answer}");
    for file in ["duraq.1", "duraq-worker.1", "duraq-schedule-replace.1"] {
        let page = std::fs::read_to_string(out_dir.join(file)).expect(file);
        assert!(page.contains(".TH"), "{file}: {page}");
    }
    let worker = std::fs::read_to_string(out_dir.join("duraq-worker.1")).unwrap();
    assert!(worker.contains("duraq.sleep"), "{worker}");
}

#[test]
fn long_help_has_descriptions_and_examples() {
    let enqueue = succeeds(&["enqueue", "--help"]);
    assert!(enqueue.contains("Examples:"), "{enqueue}");
    assert!(
        enqueue.contains("duraq enqueue duraq.http --args"),
        "{enqueue}"
    );
    assert!(enqueue.contains("<NAME>"), "{enqueue}");

    let worker = succeeds(&["worker", "--help"]);
    for needle in [
        "duraq.noop",
        "duraq.sleep",
        "duraq.http",
        "duraq.mail.deliver",
        "DURAQ_DATABASE_URL",
        "DURAQ_LOG",
        "RUST_LOG",
        "NO_COLOR",
        "DURAQ_MAIL_BACKEND",
        "DURAQ_SMTP_PASSWORD",
        "RESEND_API_KEY",
        "--schedule",
    ] {
        assert!(worker.contains(needle), "worker --help lacks {needle}");
    }

    let top = succeeds(&["--help"]);
    assert!(
        top.contains("--database on\n") || top.contains("--database on its"),
        "{top}"
    );
    assert!(top.contains("Global options"), "{top}");
    let short = succeeds(&["-h"]);
    assert!(short.contains("every command but `tenants`"), "{short}");
    assert!(!top.contains('§'), "{top}");
}

#[test]
fn tenants_refuses_an_explicit_database() {
    let dir = tempfile::tempdir().unwrap();
    let tenants = dir.path().to_str().unwrap();
    for args in [
        vec![
            "--database",
            "sqlite:x.db",
            "tenants",
            "pending",
            "app",
            "--tenants-dir",
            tenants,
        ],
        vec![
            "tenants",
            "pending",
            "app",
            "--tenants-dir",
            tenants,
            "--database",
            "sqlite:x.db",
        ],
        vec![
            "tenants",
            "migrate",
            "app",
            "--tenants-dir",
            tenants,
            "--database=sqlite:x.db",
        ],
    ] {
        let out = duraq(&args);
        assert_eq!(out.status.code(), Some(2), "duraq {args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--database") && stderr.contains("--tenants"),
            "{stderr}"
        );
    }
    assert!(!dir.path().join("x.db").exists());
}

#[test]
fn tenants_tolerates_the_environment_variable() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_duraq"))
        .args(["tenants", "pending", "app", "--tenants-dir"])
        .arg(dir.path())
        .env("DURAQ_DATABASE_URL", "sqlite:x.db")
        .current_dir(dir.path())
        .output()
        .expect("run duraq");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(stdout(&out).contains("pending"), "{out:?}");
}
