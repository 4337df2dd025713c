//! The command line of `duraq`, declared with clap's derive API.
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

use clap::{Args, Parser, Subcommand};

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
    Mail(crate::mail::MailCommand),
    /// Named groups of jobs that wait for each other (`docs/workflows.md`).
    #[command(subcommand, after_long_help = crate::examples::WORKFLOWS)]
    Workflows(crate::workflows::WorkflowsCommand),
    /// Tenant databases: read-only migration preflight, and migrating every tenant.
    #[command(subcommand, after_long_help = crate::examples::TENANTS)]
    Tenants(crate::tenants::TenantsCommand),
    /// Print a shell completion script on stdout.
    #[command(after_long_help = crate::examples::COMPLETIONS)]
    Completions(crate::manual::CompletionsArgs),
    /// Print the roff man page on stdout, or write one page per command.
    #[command(after_long_help = crate::examples::MAN)]
    Man(crate::manual::ManArgs),
}

/// `duraq queues pause|resume <QUEUE>`: both print
/// `{"queue":…,"paused":true|false,"changed":true|false}`.
#[derive(Debug, Subcommand)]
pub enum QueuesCommand {
    /// Pause a queue: no worker claims its jobs from its next poll on; running
    /// jobs finish and report; enqueueing into it still works.
    #[command(after_long_help = crate::examples::QUEUES_PAUSE)]
    Pause {
        /// The queue's name (`default` holds the jobs enqueued without
        /// --queue); an empty name is `invalid-queue`.
        queue: String,
    },
    /// Resume a paused queue: its due jobs are claimable again and idle workers
    /// are woken.
    #[command(after_long_help = crate::examples::QUEUES_RESUME)]
    Resume {
        /// The queue's name (`default` holds the jobs enqueued without
        /// --queue); an empty name is `invalid-queue`.
        queue: String,
    },
}

/// `duraq workers`.
#[derive(Debug, Args)]
pub struct WorkersArgs {
    /// Also list each running job (worker, job id, name) below the table
    /// (`--json` always includes them).
    #[arg(long)]
    pub jobs: bool,
    /// A worker whose last heartbeat is older than this is stale (use the
    /// timeout your workers run with).
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub stale_after: String,
}

/// Options that shape any new job: the flags of `enqueue` and `schedule
/// replace`, and the same options in a workflow file's step (camelCase keys,
/// the flags' values: `"runIn": "5m"`), read by one parser
/// ([`crate::options`]). An unknown key of a file is refused by name.
#[derive(Debug, Args, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobArgs {
    /// Job arguments as JSON, handed to the handler (default `[]`).
    #[arg(long, value_name = "JSON")]
    #[serde(skip)]
    pub args: Option<String>,
    /// Queue name (default `default`; no commas, since workers choose queues
    /// with `--queues a,b`).
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,
    /// Run no earlier than this RFC 3339 time (`2030-01-01T09:00:00Z`).
    #[arg(long, value_name = "TIME", conflicts_with = "run_in")]
    pub run_at: Option<String>,
    /// Run after this delay (`10s`, `5m`, `1h`, `7d`).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub run_in: Option<String>,
    /// Retries after the first attempt (default 10).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_retries: Option<i64>,
    /// Concurrency key shared by jobs that may not all run at once.
    #[arg(long, value_name = "KEY")]
    pub concurrency_key: Option<String>,
    /// How many jobs of `--concurrency-key` may run at once.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_concurrency: Option<i64>,
    /// Fail an attempt that runs longer than this (`30s`).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub timeout: Option<String>,
    /// Priority within the queue, -100 (last) to 100 (first); default 0.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub priority: Option<i64>,
    /// Rate key shared by jobs whose starts are limited together (with `--rate`).
    #[arg(long, value_name = "KEY", requires = "rate")]
    pub rate_key: Option<String>,
    /// At most N starts per period for `--rate-key`, across every worker
    /// (`100/1s`, `5/10m`; a unit alone is one of it: `100/s`, `5/m`).
    #[arg(long, value_name = "N/PERIOD", requires = "rate_key")]
    pub rate: Option<String>,
    /// Not a flag: `--delay` is refused with the real one's name (`--run-in`).
    #[arg(long, hide = true, value_name = "DURATION", allow_hyphen_values = true,
          value_parser = |_: &str| Err::<String, _>("there is no --delay: use --run-in DURATION (10s, 5m) or --run-at TIME"))]
    #[serde(skip)]
    pub delay: Option<String>,
    /// Not a flag: `--retries` is refused with the real one's name (`--max-retries`).
    #[arg(long, hide = true, value_name = "N", allow_hyphen_values = true,
          value_parser = |_: &str| Err::<String, _>("there is no --retries: use --max-retries N"))]
    #[serde(skip)]
    pub retries: Option<String>,
}

#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// The job name: which handler runs it, e.g. `duraq.noop`.
    pub name: String,
    #[command(flatten)]
    pub job: JobArgs,
    /// Return an identical queued job instead of adding a second one.
    #[arg(long)]
    pub dedupe_while_queued: bool,
    /// Durable idempotency key: a replay returns the original job id.
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Wait for job ID (repeatable): the job stays pending until ID has
    /// finished, then is due at its own time or at once, whichever is later.
    #[arg(long, value_name = "ID")]
    pub after: Vec<String>,
    /// What happens when a job of --after does not complete: `cancel` (the
    /// default: this job is cancelled too) or `run` (it runs anyway).
    #[arg(long, value_name = "POLICY")]
    pub on_dependency_failure: Option<String>,
}

// Parsed once per process: boxing the job flags would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Insert a new owner for KEY, cancelling a queued previous owner.
    #[command(after_long_help = crate::examples::SCHEDULE_REPLACE)]
    Replace {
        /// The schedule key, e.g. `event:42:reminder`.
        key: String,
        /// The new job's name: which handler runs it.
        name: String,
        /// Also cancel a running previous owner and tell its worker to stop it
        /// (without this flag it runs on; only the key moves).
        #[arg(long)]
        stop_running: bool,
        #[command(flatten)]
        job: JobArgs,
    },
    /// Cancel the queued owner of KEY (or release a running one).
    #[command(after_long_help = crate::examples::SCHEDULE_CANCEL)]
    Cancel {
        /// The schedule key.
        key: String,
        /// Also cancel a running owner and tell its worker to stop it (without
        /// this flag it runs on; only the key is released).
        #[arg(long)]
        stop_running: bool,
    },
    /// Make the future owner of KEY due now.
    #[command(after_long_help = crate::examples::SCHEDULE_WAKE)]
    Wake {
        /// The schedule key.
        key: String,
    },
    /// Show the current owner (and optionally the newest terminal job) of KEY.
    #[command(after_long_help = crate::examples::SCHEDULE_GET)]
    Get {
        /// The schedule key.
        key: String,
        /// Also show the newest completed, failed, cancelled or orphaned job of KEY.
        #[arg(long)]
        include_latest_terminal: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Jobs, newest first.
    #[command(after_long_help = crate::examples::JOBS_LIST)]
    List {
        #[command(flatten)]
        filter: crate::search::FilterFlags,
        /// At most this many jobs.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
        /// Continue after this job id (the last of the previous page): pages stay
        /// stable while jobs are added or change.
        #[arg(long, value_name = "ID")]
        after: Option<String>,
    },
    /// Every field of one job.
    #[command(after_long_help = crate::examples::JOBS_SHOW)]
    Show {
        /// The job id, as printed by `enqueue` or `jobs list`.
        id: String,
        /// Print the job again whenever it changes, and exit once it is
        /// finished (completed, failed, cancelled or orphaned).
        #[arg(long)]
        watch: bool,
    },
    /// Re-queue finished jobs (operator retry): due now, attempts reset. One
    /// id, several, or a filter.
    #[command(after_long_help = crate::examples::JOBS_RETRY)]
    Retry(crate::bulk::BulkArgs),
    /// Cancel queued or running jobs (a running one is stopped: its worker is
    /// told and its handler ends). One id, several, or a filter.
    #[command(after_long_help = crate::examples::JOBS_CANCEL)]
    Cancel(crate::bulk::BulkArgs),
    /// Delete finished jobs (completed, failed, cancelled, orphaned). One id,
    /// several, or a filter.
    #[command(after_long_help = crate::examples::JOBS_DELETE)]
    Delete(crate::bulk::BulkArgs),
    /// Make queued jobs due later due now (only their scheduled time moves;
    /// idle workers are woken). One id, several, or a filter.
    #[command(after_long_help = crate::examples::JOBS_RUN_NOW)]
    RunNow(crate::bulk::BulkArgs),
    /// Delete old terminal jobs.
    #[command(after_long_help = crate::examples::JOBS_PRUNE)]
    Prune(PruneArgs),
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub ages: PruneAges,
    /// Print how many jobs would be deleted and delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// The ages of `jobs prune`: at least one is required.
#[derive(Debug, Args)]
#[group(required = true, multiple = true)]
pub struct PruneAges {
    /// Delete completed jobs finished longer ago than this (`7d`).
    #[arg(long, value_name = "DURATION")]
    pub completed_older_than: Option<String>,
    /// Delete failed and orphaned jobs older than this.
    #[arg(long, value_name = "DURATION")]
    pub failed_older_than: Option<String>,
    /// Delete cancelled jobs older than this.
    #[arg(long, value_name = "DURATION")]
    pub cancelled_older_than: Option<String>,
}

/// `duraq stats`: see [`crate::stats`].
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The view: `1h` (per minute), `24h` (per 15 minutes) or `7d` (per hour).
    #[arg(long, value_name = "RANGE", default_value = "1h")]
    pub since: String,
    /// Only this queue.
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,
}

#[derive(Debug, Args)]
pub struct CountsArgs {
    /// Print a new snapshot whenever the revision moves, until interrupted.
    #[arg(long)]
    pub watch: bool,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Only these queues (comma-separated; an empty entry is `invalid-queue`);
    /// default every queue.
    #[arg(long, value_name = "QUEUES", value_delimiter = ',')]
    pub queues: Vec<String>,
    /// Cap a queue: at most N of its jobs run at once across every worker (`mail=2`).
    #[arg(long = "queue-cap", value_name = "QUEUE=N")]
    pub queue_caps: Vec<String>,
    /// Jobs this worker runs at once.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub concurrency: usize,
    /// Jobs claimed beyond `--concurrency`, to wait in this worker for a free
    /// slot: `auto` (the default) claims ahead only while the queue has a
    /// backlog of jobs that end quickly, up to 500 (`auto:N`: up to N), and
    /// none once a claim finds the queue dry; `N` (0 to 10000) always up to N;
    /// `0` never. Faster drains of many short jobs, at a price: a waiting job
    /// counts as running (`handed_off`) on this worker. At shutdown the waiting
    /// jobs go back to the queue unstarted. Long jobs: use 0.
    #[arg(long, value_name = "N|auto|auto:N", default_value = "auto")]
    pub prefetch: String,
    /// Recover the leases of workers silent for this long (their jobs run again).
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub stale_after: String,
    /// On SIGINT/SIGTERM, let running jobs finish for up to this long.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub drain_timeout: String,
    /// When a running job is cancelled (`duraq jobs cancel`), give its handler
    /// this long to stop before the attempt is aborted (`0s`: at once).
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub cancel_grace: String,
    /// Serve Prometheus metrics at http://ADDR/metrics (attempts, run and wait
    /// times, slot use, job counts); beyond loopback DURAQ_WEB_TOKEN is required.
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_listen: Option<String>,
    /// Enqueue the periodic built-in jobs a TOML file declares (`[[job]]` with
    /// name, job, every or cron, zone, args, options; repeatable). Each tick is
    /// one job however many workers declare it; a bad file stops the worker
    /// before it opens the database.
    #[arg(long = "schedule", value_name = "FILE")]
    pub schedules: Vec<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct WebArgs {
    /// Address to serve on; beyond the loopback interface DURAQ_WEB_TOKEN is required.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Hide retry, cancel, pause and resume; every POST is refused.
    #[arg(long)]
    pub read_only: bool,
    /// Without a token, also answer requests for this host name (a reverse
    /// proxy's or tunnel's), besides localhost, 127.0.0.1 and ::1; repeatable.
    /// Any other Host is refused (421), which defeats DNS rebinding.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Open connections served at once; beyond it the oldest idle one is
    /// closed, or the new one answered 503 when none is idle.
    #[arg(long, value_name = "N", default_value_t = duraq_web::ServeLimits::DEFAULT_CONNECTIONS)]
    pub max_connections: usize,
    /// Time a client has to send a request's headers before it is disconnected.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub header_read_timeout: String,
    /// Live-update streams (one per open dashboard page) served at once;
    /// more are answered 503.
    #[arg(long, value_name = "N", default_value_t = duraq_web::WebOptions::DEFAULT_LIVE_STREAMS)]
    pub max_live_streams: usize,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Folder for the demo database (default: a fresh temporary folder).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// How many jobs to enqueue.
    #[arg(long, value_name = "N", default_value_t = 5_000)]
    pub jobs: usize,
    /// The global `--database`, only when it was given on the command line
    /// (`DURAQ_DATABASE_URL` and the default leave it `None`); set by `main`.
    #[arg(skip)]
    pub database: Option<String>,
    /// The global `--schema` (flag or `DURAQ_SCHEMA`); set by `main`.
    #[arg(skip)]
    pub schema: Option<String>,
}
