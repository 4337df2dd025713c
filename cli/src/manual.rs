//! `duraq completions <SHELL>` and `duraq man [--out DIR]`: shell completion
//! scripts (clap_complete) and roff man pages (clap_mangen), both generated from
//! the one clap definition (`Cli::command()`, which `main` hands over) rather
//! than written by hand, so they can never disagree with `--help` or with the
//! flags the program accepts.
//!
//! Both render into memory first and then write stdout in one go: the generators
//! panic on a failed write, and a reader that closes the pipe early
//! (`duraq man | head`) is not an error worth a panic or a non-zero exit.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use clap_complete::Shell;
use serde_json::json;

use crate::error::CliError;
use crate::output::print_json;

/// The program name the scripts complete and the pages are titled with.
const BIN: &str = "duraq";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command (`duraq.1`, `duraq-enqueue.1`,
    /// `duraq-jobs-list.1`, …) into this folder instead of printing the top page.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Prints the completion script of the command line `cli` for `a.shell` on stdout.
pub fn completions(a: &CompletionsArgs, mut cli: clap::Command) -> Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cli, BIN, &mut script);
    write_stdout(&script)
}

/// Prints the top man page of the command line `cli` on stdout, or writes
/// every page into `--out` and prints `{"pages":[…]}`.
pub fn man(a: &ManArgs, cli: clap::Command) -> Result<()> {
    let cmd = cli.disable_help_subcommand(true);
    match &a.out {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut page).map_err(|e| {
                CliError::new("output-failed", format!("rendering the man page: {e}"))
            })?;
            write_stdout(&page)
        }
        Some(dir) => {
            let pages = write_pages(cmd, dir).map_err(|e| {
                CliError::new(
                    "output-failed",
                    format!("writing man pages to {}: {e}", dir.display()),
                )
            })?;
            print_json(&json!({ "pages": pages }));
            Ok(())
        }
    }
}

/// Writes the page of `cmd` and of each of its subcommands, recursively, and
/// returns their paths in the order written (top page first).
pub fn write_pages(mut cmd: clap::Command, dir: &Path) -> std::io::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    // Building gives each subcommand its full name (`duraq-jobs-list`), which
    // clap_mangen uses for the file name and the page title.
    cmd.build();
    let mut pages = Vec::new();
    let mut stack = vec![cmd];
    while let Some(cmd) = stack.pop() {
        let subcommands: Vec<_> = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .cloned()
            .collect();
        let path = clap_mangen::Man::new(cmd).generate_to(dir)?;
        pages.push(path.display().to_string());
        stack.extend(subcommands.into_iter().rev());
    }
    Ok(pages)
}

/// Writes `bytes` to stdout; a closed pipe ends the output quietly.
fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::new("output-failed", format!("writing to stdout: {e}")).into())
        }
        _ => Ok(()),
    }
}
