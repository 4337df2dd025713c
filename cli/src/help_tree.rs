//! Walks the whole clap tree of `duraq` and fails on any gap in the help: a
//! command, subcommand, positional or flag without a description, a command
//! without examples in its long help, an example that does not parse, or a
//! reference to internal documents users never see.
//!
//! `--help`, the man page and the shell completions are all generated from this
//! one tree, so a gap here is a gap everywhere; a unit test (rather than a test in
//! `cli/tests/`) because the binary crate's `Cli` is only reachable from inside.
//! The tests that run the built binary are in `cli/tests/help.rs`.

use clap::{Command, CommandFactory, Parser};

use crate::args::Cli;

/// `Cli::command()` built, so that global flags and the generated `help`
/// subcommand appear where users meet them.
fn built() -> Command {
    let mut cmd = Cli::command();
    cmd.build();
    cmd
}

/// clap's own `help` subcommand and `-h`/`-V` flags describe themselves.
fn is_claps_own(id: &str) -> bool {
    id == "help" || id == "version"
}

fn visible_subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|s| !is_claps_own(s.get_name()))
}

fn text(s: Option<&clap::builder::StyledStr>) -> String {
    s.map(ToString::to_string).unwrap_or_default()
}

fn long_help_after(cmd: &Command) -> String {
    text(cmd.get_after_long_help().or(cmd.get_after_help()))
}

/// The example lines (`duraq …`) of a command's long help.
fn examples(cmd: &Command) -> Vec<String> {
    long_help_after(cmd)
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("duraq "))
        .map(str::to_owned)
        .collect()
}

/// Every command of the tree with its path (`duraq jobs list`).
fn all_commands() -> Vec<(String, Command)> {
    fn walk(cmd: &Command, path: String, out: &mut Vec<(String, Command)>) {
        for sub in visible_subcommands(cmd) {
            walk(sub, format!("{path} {}", sub.get_name()), out);
        }
        out.push((path, cmd.clone()));
    }
    let mut out = Vec::new();
    walk(&built(), "duraq".to_owned(), &mut out);
    out
}

/// Splits an example line like a POSIX shell would for these simple cases:
/// single quotes group, and a `|`, `>` or `#` outside quotes ends the command.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted, mut in_word) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => (quoted, in_word) = (!quoted, true),
            '|' | '>' | '#' if !quoted => break,
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                }
                in_word = false;
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[test]
fn the_tree_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn every_command_and_argument_is_described() {
    let mut gaps = Vec::new();
    for (path, cmd) in all_commands() {
        if text(cmd.get_about().or(cmd.get_long_about()))
            .trim()
            .is_empty()
        {
            gaps.push(format!("`{path}` has no about"));
        }
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if !is_claps_own(id)
                && text(arg.get_help().or(arg.get_long_help()))
                    .trim()
                    .is_empty()
            {
                gaps.push(format!("`{path}`: argument `{id}` has no help"));
            }
        }
    }
    assert!(gaps.is_empty(), "help gaps:\n{}", gaps.join("\n"));
}

#[test]
fn every_command_has_examples() {
    let missing: Vec<_> = all_commands()
        .into_iter()
        .filter(|(_, cmd)| examples(cmd).is_empty())
        .map(|(path, _)| path)
        .collect();
    assert!(
        missing.is_empty(),
        "commands without `duraq …` examples: {missing:?}"
    );
}

#[test]
fn every_example_parses() {
    for (path, cmd) in all_commands() {
        for example in examples(&cmd) {
            let words = shell_words(&example);
            if let Err(e) = Cli::try_parse_from(&words) {
                panic!("an example of `{path}` does not parse: {example}\n{e}");
            }
        }
    }
}

#[test]
fn no_help_text_points_at_internal_documents() {
    for (path, cmd) in all_commands() {
        let mut texts = vec![
            text(cmd.get_about()),
            text(cmd.get_long_about()),
            long_help_after(&cmd),
        ];
        texts.extend(cmd.get_arguments().map(|a| text(a.get_help())));
        texts.extend(cmd.get_arguments().map(|a| text(a.get_long_help())));
        for t in texts {
            assert!(
                !t.contains('§'),
                "`{path}` cites a section of an internal document: {t}"
            );
        }
    }
}

#[test]
fn shell_words_follow_quotes_and_stop_at_redirections() {
    assert_eq!(
        shell_words("duraq enqueue x --args '{\"a\": 1}' > out # note"),
        ["duraq", "enqueue", "x", "--args", "{\"a\": 1}"]
    );
    assert_eq!(shell_words("duraq man | man -l -"), ["duraq", "man"]);
}

/// The man pages are this tree too: one page per command, none for `help`.
#[test]
fn every_command_gets_its_own_page() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = Cli::command().disable_help_subcommand(true);
    let pages = crate::manual::write_pages(cmd, dir.path()).unwrap();
    let names: Vec<_> = pages
        .iter()
        .map(|p| {
            std::path::Path::new(p)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for expected in [
        "duraq.1",
        "duraq-enqueue.1",
        "duraq-jobs-list.1",
        "duraq-tenants-pending.1",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
    let list = std::fs::read_to_string(dir.path().join("duraq-jobs-list.1")).unwrap();
    assert!(list.starts_with(".ie") || list.contains(".TH"), "{list}");
    assert!(list.contains("after"), "the page lists --after");
}
