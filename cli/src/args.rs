//! The command line of SPEC §12, declared with clap's derive API.
//!
//! Everything here is syntax only: clap rejects malformed invocations with exit
//! status 2 before any database is touched. Values that need semantic parsing
//! (JSON args, durations, RFC 3339 times, database URLs) stay strings here and are
//! parsed by [`crate::parse`] so that their failures carry duraq's own stable
//! error codes and exit status 1.

use clap::{Args, Parser, Subcommand};

/// duraq: a durable background-job system. Operate queues, schedules and workers.
#[derive(Debug, Parser)]
#[command(name = "duraq", version, about)]
pub struct Cli {
    /// Database URL: `sqlite:<path>`, `sqlite::memory:` or `postgres://…`.
    #[arg(
        long,
        global = true,
        env = "DURAQ_DATABASE_URL",
        default_value = "sqlite:duraq.db"
    )]
    pub database: String,
    /// PostgreSQL schema the store uses (default: the connection's current
    /// schema, normally `public`); also `?schema=NAME` in the URL.
    #[arg(long, global = true, env = "DURAQ_SCHEMA", value_name = "NAME")]
    pub schema: Option<String>,
    /// Print one JSON object on stdout instead of a table (errors as JSON on stderr).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or upgrade the schema; prints `{"applied":[…],"version":…}`.
    Migrate,
    /// Enqueue one job; prints `{"jobId":…}`.
    Enqueue(EnqueueArgs),
    /// Stable schedule keys: replace, cancel, wake or inspect a keyed one-off job.
    #[command(subcommand)]
    Schedule(ScheduleCommand),
    /// Inspect and operate on jobs.
    #[command(subcommand)]
    Jobs(JobsCommand),
    /// Job counts per status with their revision (`--watch` follows changes).
    Counts(CountsArgs),
    /// Run the built-in handlers until SIGINT/SIGTERM.
    Worker(WorkerArgs),
    /// Enqueue a realistic mix into a fresh SQLite file and drain it with a worker.
    Demo(DemoArgs),
    /// Send mail now or later through `DURAQ_MAIL_BACKEND` (SPEC §10).
    #[command(subcommand)]
    Mail(crate::mail::MailCommand),
    /// Tenant migration deploy preflight and migrate (SPEC §11).
    #[command(subcommand)]
    Tenants(crate::tenants::TenantsCommand),
}

/// Options that shape any new job (shared by `enqueue` and `schedule replace`).
#[derive(Debug, Args, Default)]
pub struct JobArgs {
    /// Job arguments as JSON (default `[]`).
    #[arg(long)]
    pub args: Option<String>,
    /// Queue name (default `default`).
    #[arg(long)]
    pub queue: Option<String>,
    /// Run no earlier than this RFC 3339 time.
    #[arg(long, conflicts_with = "run_in")]
    pub run_at: Option<String>,
    /// Run after this delay (`10s`, `5m`, `1h`, `7d`).
    #[arg(long)]
    pub run_in: Option<String>,
    /// Retries after the first attempt (default 10).
    #[arg(long, allow_negative_numbers = true)]
    pub max_retries: Option<i64>,
    /// Concurrency key shared by jobs that may not all run at once.
    #[arg(long)]
    pub concurrency_key: Option<String>,
    /// Cap for `--concurrency-key`.
    #[arg(long, allow_negative_numbers = true)]
    pub max_concurrency: Option<i64>,
    /// Fail an attempt that runs longer than this (`30s`).
    #[arg(long)]
    pub timeout: Option<String>,
}

#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// The job name (handler), e.g. `duraq.noop`.
    pub name: String,
    #[command(flatten)]
    pub job: JobArgs,
    /// Return an identical queued job instead of adding a second one.
    #[arg(long)]
    pub dedupe_while_queued: bool,
    /// Durable idempotency key: a replay returns the original job id.
    #[arg(long)]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Insert a new owner for KEY, cancelling a queued previous owner.
    Replace {
        key: String,
        name: String,
        #[command(flatten)]
        job: JobArgs,
    },
    /// Cancel the queued owner of KEY (or release a running one).
    Cancel { key: String },
    /// Make the future owner of KEY due now.
    Wake { key: String },
    /// Show the current owner (and optionally the newest terminal job) of KEY.
    Get {
        key: String,
        #[arg(long)]
        include_latest_terminal: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Jobs, newest first.
    List {
        /// queued, handed_off, completed, failed, cancelled or orphaned.
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        queue: Option<String>,
        /// Only jobs that carry this schedule key (its owner and its history).
        #[arg(long)]
        key: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Continue after this job id (the last of the previous page): pages stay
        /// stable while jobs are added or change.
        #[arg(long, value_name = "ID")]
        after: Option<String>,
    },
    /// Every field of one job.
    Show { id: String },
    /// Re-queue a terminal job (operator retry).
    Retry { id: String },
    /// Cancel a queued or running job.
    Cancel { id: String },
    /// Delete old terminal jobs.
    Prune(PruneArgs),
}

#[derive(Debug, Args)]
#[group(required = true, multiple = true)]
pub struct PruneArgs {
    /// Delete completed jobs finished longer ago than this (`7d`).
    #[arg(long)]
    pub completed_older_than: Option<String>,
    /// Delete failed and orphaned jobs older than this.
    #[arg(long)]
    pub failed_older_than: Option<String>,
    /// Delete cancelled jobs older than this.
    #[arg(long)]
    pub cancelled_older_than: Option<String>,
}

#[derive(Debug, Args)]
pub struct CountsArgs {
    /// Print a new snapshot whenever the revision moves, until interrupted.
    #[arg(long)]
    pub watch: bool,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Only these queues (comma-separated); default every queue.
    #[arg(long, value_delimiter = ',')]
    pub queues: Vec<String>,
    /// Cap a queue: at most N of its jobs run at once across every worker (`mail=2`).
    #[arg(long = "queue-cap", value_name = "QUEUE=N")]
    pub queue_caps: Vec<String>,
    /// Jobs run at once.
    #[arg(long, default_value_t = 10)]
    pub concurrency: usize,
    /// Recover leases of workers silent for this long.
    #[arg(long, default_value = "60s")]
    pub stale_after: String,
    /// On SIGINT/SIGTERM, let running jobs finish for up to this long.
    #[arg(long, default_value = "30s")]
    pub drain_timeout: String,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Folder for the demo database (default: a fresh temporary folder).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// How many jobs to enqueue.
    #[arg(long, default_value_t = 5_000)]
    pub jobs: usize,
}
