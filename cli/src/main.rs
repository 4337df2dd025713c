//! `duraq`, the operator program. `main` only parses the command line,
//! dispatches to one module per command group, and turns any error into the
//! stable `error[<code>]: <message>` form with exit status 1 (clap already exits
//! with 2 on usage errors).
//!
//! Parsing goes through `ArgMatches` rather than `Cli::parse` because some rules
//! depend on where a value came from: `tenants` refuses a `--database` typed on
//! its command line (it would be silently ignored), yet tolerates a globally set
//! `DURAQ_DATABASE_URL`; and `demo` is told whether `--database` was given.

mod args;
mod builtin;
mod bulk;
mod counts;
mod db;
mod demo;
mod demo_mix;
mod demo_summary;
mod display;
mod enqueue;
mod error;
mod examples;
#[cfg(test)]
mod help_tree;
mod job_list;
mod job_view;
mod jobs;
mod logging;
mod mail;
mod manual;
mod options;
#[cfg(feature = "otel")]
mod otel;
mod output;
mod parse;
mod queues;
#[cfg(test)]
mod robustness;
mod schedule;
mod schedule_file;
mod search;
mod signals;
mod stats;
mod tenants;
mod watch;
mod web;
mod worker;
mod worker_flags;
mod workers;
mod workflow_file;
mod workflow_list;
mod workflows;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    let cli = parse_command_line();
    let json = cli.json;
    let (mail, other) = configured_secrets(&cli.database);
    output::register_secrets(mail, other);
    // The worker narrates its runtime at `info`; the demo's failures are on
    // purpose and its summary says what happened; every other command speaks
    // only when something is wrong.
    let default_filter = match cli.command {
        Command::Worker(_) | Command::Web(_) => "info",
        Command::Demo(_) => "error",
        _ => "warn",
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::print_error(&anyhow::Error::new(e).context("starting the runtime"), json);
            return ExitCode::FAILURE;
        }
    };
    // `worker` and `enqueue` start traces (exported with the `otel` feature).
    let traces = matches!(cli.command, Command::Worker(_) | Command::Enqueue(_));
    let telemetry = logging::init(default_filter, cli.log_format, traces, runtime.handle());
    // Every command closes the store it opened (`db::closing`).
    let outcome = runtime.block_on(run(cli));
    // The last spans are sent while the runtime that carries them is alive.
    telemetry.shutdown();
    match outcome {
        Ok(status) => ExitCode::from(status),
        Err(err) => {
            output::print_error(&err, json);
            ExitCode::FAILURE
        }
    }
}

/// Parses the command line (exiting 2 on a usage error, [`usage_exit`]) and
/// applies the rules that depend on where `--database` came from.
fn parse_command_line() -> Cli {
    let matches = Cli::command()
        .try_get_matches()
        .unwrap_or_else(|e| usage_exit(e));
    let mut cli = Cli::from_arg_matches(&matches)
        .unwrap_or_else(|e| usage_exit(e.format(&mut Cli::command())));
    let database_given = matches.value_source("database") == Some(ValueSource::CommandLine);
    match &mut cli.command {
        Command::Tenants(_) if database_given => usage_exit(Cli::command().error(
            ErrorKind::ArgumentConflict,
            "`tenants` does not use --database: it reads the tenant databases from \
             --tenants, --tenants-dir or --tenants-query (with --control-database)",
        )),
        Command::Demo(a) => {
            a.database = database_given.then(|| cli.database.clone());
            a.schema = cli.schema.clone();
        }
        _ => {}
    }
    cli
}

/// Exits with clap's answer: help and version on stdout with status 0, a usage
/// error with status 2, as `{"error":{"code":"usage","message":…}}` on stderr
/// when `--json` is on the command line (the parse that failed cannot say).
fn usage_exit(err: clap::Error) -> ! {
    let is_error = !matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    );
    let json = std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json");
    if !(is_error && json) {
        err.exit();
    }
    let text = err.render().to_string();
    let message = text.trim().strip_prefix("error: ").unwrap_or(text.trim());
    output::print_usage_error(message);
    std::process::exit(2);
}

/// Every secret this process may hold: printed nowhere, scrubbed from errors.
/// The mail credentials (also masked in the forms an SMTP exchange echoes
/// them in), then the others (the database password and the web token).
fn configured_secrets(database: &str) -> (Vec<String>, Vec<String>) {
    let env = |vars: &[&str]| -> Vec<String> {
        vars.iter()
            .filter_map(|var| std::env::var(var).ok())
            .collect()
    };
    let mail = env(&["DURAQ_SMTP_PASSWORD", "RESEND_API_KEY"]);
    let mut other = env(&["DURAQ_WEB_TOKEN"]);
    other.extend(db::password(database));
    (mail, other)
}

/// Runs one command; `Ok` carries the exit status (`tenants pending` may exit 3).
/// `tenants` reads its own tenant databases, so it never parses `--database`.
async fn run(cli: Cli) -> anyhow::Result<u8> {
    let json = cli.json;
    let db = || db::Database::parse(&cli.database, cli.schema.as_deref());
    match cli.command {
        Command::Migrate => db::migrate(&db()?).await,
        Command::Enqueue(a) => enqueue::run(&db()?, a).await,
        Command::Schedule(c) => schedule::run(&db()?, c, json).await,
        Command::Jobs(c) => jobs::run(&db()?, c, json).await,
        Command::Counts(a) => counts::run(&db()?, a.watch, json).await,
        Command::Queues {
            action,
            stale_after,
        } => queues::run(&db()?, action, &stale_after, json).await,
        Command::Worker(a) => worker::run(&db()?, a, json).await,
        Command::Workers(a) => workers::run(&db()?, &a, json).await,
        Command::Stats(a) => stats::run(&db()?, &a, json).await,
        Command::Web(a) => web::run(&db()?, a).await,
        Command::Demo(a) => demo::run(a, json).await,
        Command::Mail(c) => mail::run(&db()?, c).await,
        Command::Workflows(c) => workflows::run(&db()?, c, json).await,
        Command::Tenants(c) => return Ok(tenants::run(c, json).await),
        Command::Completions(a) => manual::completions(&a, Cli::command()),
        Command::Man(a) => manual::man(&a, Cli::command()),
    }
    .map(|()| 0)
}
