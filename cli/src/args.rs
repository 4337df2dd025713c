//! The command line of `duraq`, declared with clap's derive API: the global
//! flags and one variant per command. Each command's own flags live with the
//! command that reads them (`EnqueueArgs` in [`crate::enqueue`], the shared job
//! flags in [`crate::options`]), so this top of the tree is imported by `main`
//! alone (and by the tests that walk it).
//!
//! Everything here is syntax only: clap rejects malformed invocations with exit
//! status 2 before any database is touched. Values that need semantic parsing
//! (JSON args, durations, RFC 3339 times, database URLs) stay strings here and are
//! parsed by [`crate::parse`] so that their failures carry duraq's own stable
//! error codes and exit status 1.
//!
//! This one clap tree is also the source of `--help`, the man page and the shell
//! completions (see [`crate::manual`]), so every command, positional and flag
//! carries a description and every command its examples ([`crate::examples`]);
//! `cli/tests/help.rs` walks the tree and fails on a gap.

use clap::{Parser, Subcommand};

use crate::counts::CountsArgs;
use crate::demo::DemoArgs;
use crate::enqueue::EnqueueArgs;
use crate::jobs::JobsCommand;
use crate::mail::MailCommand;
use crate::manual::{CompletionsArgs, ManArgs};
use crate::queues::QueuesCommand;
use crate::schedule::ScheduleCommand;
use crate::stats::StatsArgs;
use crate::tenants::TenantsCommand;
use crate::web::WebArgs;
use crate::worker_flags::WorkerArgs;
use crate::workers::WorkersArgs;
use crate::workflows::WorkflowsCommand;

/// The help heading of the flags every command accepts.
const GLOBAL: &str = "Global options";

/// duraq: a durable background-job system. Operate queues, schedules and workers.
#[derive(Debug, Parser)]
#[command(name = "duraq", version, after_long_help = crate::examples::TOP)]
pub struct Cli {
    /// Database URL: `sqlite:<path>`, `sqlite::memory:` or `postgres://…`
    /// (used by every command but `tenants`).
    ///
    /// `tenants` reads its databases from --tenants, --tenants-dir or
    /// --tenants-query instead: it ignores DURAQ_DATABASE_URL, and --database on
    /// its command line is a usage error. `demo` uses it only when given on the
    /// command line (otherwise a fresh SQLite file).
    #[arg(
        long,
        global = true,
        env = "DURAQ_DATABASE_URL",
        value_name = "URL",
        default_value = "sqlite:duraq.db",
        help_heading = GLOBAL
    )]
    pub database: String,
    /// PostgreSQL schema the store uses (default: the connection's current
    /// schema, normally `public`); also `?schema=NAME` in the URL.
    #[arg(
        long,
        global = true,
        env = "DURAQ_SCHEMA",
        value_name = "NAME",
        help_heading = GLOBAL
    )]
    pub schema: Option<String>,
    /// Machine-readable output: JSON instead of tables on stdout (one object per
    /// result) and errors as JSON on stderr; output that is JSON already is unchanged.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// How log lines on stderr are written: `text`, or `json` (one object per
    /// line, fields at the top level, for log shippers).
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "FORMAT",
        default_value = "text",
        help_heading = GLOBAL
    )]
    pub log_format: crate::logging::LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or upgrade the schema; prints `{"applied":[…],"version":…}`.
    #[command(after_long_help = crate::examples::MIGRATE)]
    Migrate,
    /// Enqueue one job; prints `{"jobId":…}`.
    #[command(after_long_help = crate::examples::ENQUEUE)]
    Enqueue(EnqueueArgs),
    /// Stable schedule keys: replace, cancel, wake or inspect a keyed one-off job.
    #[command(subcommand, after_long_help = crate::examples::SCHEDULE)]
    Schedule(ScheduleCommand),
    /// Inspect and operate on jobs: list, show, retry, cancel, prune.
    #[command(subcommand, after_long_help = crate::examples::JOBS)]
    Jobs(JobsCommand),
    /// Job counts per status with their revision (`--watch` follows changes).
    #[command(after_long_help = crate::examples::COUNTS)]
    Counts(CountsArgs),
    /// Job counts per queue and status, with each queue's latency and whether it
    /// is paused; `pause`/`resume` a queue.
    #[command(
        after_long_help = crate::examples::QUEUES,
        args_conflicts_with_subcommands = true
    )]
    Queues {
        #[command(subcommand)]
        action: Option<QueuesCommand>,
        /// Judge workers by this stale timeout when warning about due jobs no
        /// alive worker handles (use the timeout your workers run with).
        #[arg(long, value_name = "DURATION", default_value = "60s")]
        stale_after: String,
    },
    /// Throughput from the stored history: jobs enqueued, completed, failed,
    /// retried, cancelled and orphaned per minute (1h), 15 minutes (24h) or hour (7d).
    #[command(after_long_help = crate::examples::STATS)]
    Stats(StatsArgs),
    /// Worker processes: host, pid, queues, job names, slots, heartbeat,
    /// alive or stale, and how many jobs each is running.
    #[command(after_long_help = crate::examples::WORKERS)]
    Workers(WorkersArgs),
    /// Run the built-in handlers until SIGINT/SIGTERM.
    #[command(after_long_help = crate::examples::WORKER)]
    Worker(WorkerArgs),
    /// Serve the dashboard (jobs, queues, live counts) and Prometheus `/metrics`.
    #[command(after_long_help = crate::examples::WEB)]
    Web(WebArgs),
    /// Enqueue a realistic mix into a fresh SQLite file and drain it with a worker.
    #[command(after_long_help = crate::examples::DEMO)]
    Demo(DemoArgs),
    /// Send mail now, or later through a job, with the backend `DURAQ_MAIL_BACKEND` names.
    #[command(subcommand, after_long_help = crate::examples::MAIL)]
    Mail(MailCommand),
    /// Named groups of jobs that wait for each other (`docs/workflows.md`).
    #[command(subcommand, after_long_help = crate::examples::WORKFLOWS)]
    Workflows(WorkflowsCommand),
    /// Tenant databases: read-only migration preflight, and migrating every tenant.
    #[command(subcommand, after_long_help = crate::examples::TENANTS)]
    Tenants(TenantsCommand),
    /// Print a shell completion script on stdout.
    #[command(after_long_help = crate::examples::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Print the roff man page on stdout, or write one page per command.
    #[command(after_long_help = crate::examples::MAN)]
    Man(ManArgs),
}
