//! The long help of every `duraq` command: examples, and the reference lists
//! (built-in jobs, environment variables) an operator needs at the terminal.
//!
//! They live here, as constants referenced by `after_long_help` in the clap
//! definitions, so that `--help`, the man page (`duraq man`) and the completions
//! all come from the one clap tree, while the clap definitions (`args.rs` and
//! each command's own flags) stay a readable list of flags. `cli/tests/help.rs`
//! fails if a command loses its examples: every leaf command needs at least one
//! line starting with `duraq `. Texts point users at `docs/` for the full
//! story, never at internal documents.

/// `duraq --help`.
pub const TOP: &str = "\
Examples:
  duraq migrate
  duraq enqueue duraq.http --args '{\"url\":\"https://example.com/hook\"}' --run-in 10m
  duraq worker --queues default,mail --concurrency 20
  duraq jobs list --status failed --json
  duraq --database postgres://duraq@localhost/app counts --watch

Results go to stdout: a JSON object, or a table that --json turns into one.
Errors print `error[<code>]: <message>` on stderr (a JSON object with --json)
and exit 1; usage errors exit 2.

Shell completions: `duraq completions bash`; this manual: `duraq man`.
More documentation: docs/README.md in the duraq source tree.";

pub const MIGRATE: &str = "\
Creates the job tables on a new database and applies only the missing
migrations to an existing one, so it is safe to run on every deploy.

Examples:
  duraq migrate
  duraq --database postgres://duraq@localhost/app --schema jobs migrate";

pub const ENQUEUE: &str = "\
Examples:
  duraq enqueue duraq.noop
  duraq enqueue duraq.http --args '{\"url\":\"https://example.com/hook\"}' --run-in 10m
  duraq enqueue duraq.sleep --args '{\"ms\":500}' --queue slow --max-retries 3
  duraq enqueue send_invoice --args '{\"invoice\":42}' --idempotency-key invoice:42
  duraq enqueue report --run-at 2030-01-01T09:00:00Z --timeout 5m
  duraq enqueue send_receipt --args '{\"order\":7}' --priority 50
  duraq enqueue duraq.http --args '{\"url\":\"https://api.example.com\"}' --rate-key example-api --rate 100/1s
  duraq enqueue build_report --after 0190d3c4-7f0e-7c1a-9b52-5b1f0c3e9a11 --on-dependency-failure run

Prints {\"jobId\":\"…\"}. The job runs on a worker that has a handler for NAME
(`duraq worker --help` lists the built-in ones). Within a queue, higher
--priority runs first. Jobs sharing a --rate-key start at most N times per
PERIOD across every worker; a job over the limit stays queued and becomes due
when the rate allows. A key keeps the limit it was first used with. A job with
--after is pending until every job it names has finished; if one fails or is
cancelled, the job is cancelled too unless --on-dependency-failure is run.";

pub const SCHEDULE: &str = "\
A schedule key (for example `event:42:reminder`) names at most one queued or
running job, its owner, so an application can move or cancel \"the reminder of
event 42\" without remembering job ids.

Examples:
  duraq schedule replace event:42:reminder send_reminder --args '{\"event\":42}' --run-in 24h
  duraq schedule get event:42:reminder --include-latest-terminal";

pub const SCHEDULE_REPLACE: &str = "\
A running owner is not stopped: it keeps running and the new job becomes the
owner (`previousStatus: \"handed_off\"`), unless --stop-running is given: then it
is cancelled and its worker stops it (`previousStopped: true`). Fence side
effects with a revision in the job's args.

Examples:
  duraq schedule replace event:42:reminder send_reminder --args '{\"event\":42,\"revision\":7}' --run-in 24h
  duraq schedule replace nightly:cleanup duraq.noop --run-at 2030-01-01T03:00:00Z
  duraq schedule replace report:daily build_report --stop-running

Prints {\"jobId\",\"previousJobId\",\"previousStatus\",\"previousStopped\"}.";

pub const SCHEDULE_CANCEL: &str = "\
A running owner keeps running (outcome handed_off: only the key is released),
unless --stop-running is given: then it is cancelled and its worker stops it
(outcome stopped).

Examples:
  duraq schedule cancel event:42:reminder
  duraq schedule cancel report:daily --stop-running

Prints {\"jobId\",\"outcome\"}.";

pub const SCHEDULE_WAKE: &str = "\
Examples:
  duraq schedule wake event:42:reminder

Prints {\"jobId\",\"outcome\"}.";

pub const SCHEDULE_GET: &str = "\
Examples:
  duraq schedule get event:42:reminder
  duraq schedule get event:42:reminder --include-latest-terminal

With --json: {\"currentJob\",\"latestTerminalJob\"} (null when there is none).";

pub const JOBS: &str = "\
Examples:
  duraq jobs list --status failed
  duraq jobs show 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b
  duraq jobs prune --completed-older-than 7d";

pub const JOBS_LIST: &str = "\
Examples:
  duraq jobs list
  duraq jobs list --status failed --queue mail --limit 20
  duraq jobs list --key event:42:reminder
  duraq jobs list --limit 100 --after 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b --json

With --json: {\"jobs\":[…],\"total\",\"nextAfter\"}; pass nextAfter as --after for
the next page.";

pub const JOBS_SHOW: &str = "\
Examples:
  duraq jobs show 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b
  duraq jobs show 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b --json";

pub const JOBS_WAIT: &str = "\
Prints the job once it is finished. Exit status 0 when it completed; 1 with
job-failed (failed or orphaned), job-cancelled, or wait-timeout when the time
ran out first (the job is printed as it is).

Examples:
  duraq jobs wait 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b
  duraq jobs wait 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b --timeout 5m --json";

pub const JOBS_SIGNAL: &str = "\
Delivers a signal to a job that waits for it (or will): a job whose handler
calls wait_for_signal, or one of the built-in duraq.await_signal. A job keeps
one payload per signal name: sending the same again changes nothing, another
payload is signal-conflict. A new signal to a finished job is job-finished.

Examples:
  duraq jobs signal 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b shipped
  duraq jobs signal 0191d2b4 shipped --payload '{\"tracking\": \"1Z999\"}' --json";

pub const JOBS_RETRY: &str = "\
With several ids or a filter the jobs go in batches of --batch-size, one
transaction each; jobs that are not finished are skipped and counted.

Examples:
  duraq jobs retry 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b
  duraq jobs retry --status failed --queue mail --dry-run
  duraq jobs retry --status failed,cancelled --name duraq.http";

pub const JOBS_DELETE: &str = "\
Only finished jobs are deleted; queued and running ones are skipped and
counted (one named job that is not finished is an error).

Examples:
  duraq jobs delete 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b
  duraq jobs delete --status cancelled --queue reports --dry-run";

pub const JOBS_RUN_NOW: &str = "\
Only queued jobs due later change: their scheduled time becomes now, nothing
else (attempts, errors and options stay). Jobs already due, running or
finished are skipped and counted (one named job that is running or finished
is an error).

Examples:
  duraq jobs run-now 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b
  duraq jobs run-now --status queued --queue reports --dry-run";

pub const JOBS_CANCEL: &str = "\
A running job is stopped: its lease is voided at once (whatever its worker
reports later is not recorded), and the worker running it learns of it within
about a second (at once on PostgreSQL), tells the handler and aborts it after
its --cancel-grace.

Examples:
  duraq jobs cancel 0191d2b4-7c1e-7a3b-9f2e-3c4d5e6f7a8b
  duraq jobs cancel --status queued --queue imports";

pub const JOBS_PRUNE: &str = "\
At least one of the three flags is required; queued and running jobs are never
deleted.

Examples:
  duraq jobs prune --completed-older-than 7d
  duraq jobs prune --completed-older-than 1d --failed-older-than 30d --cancelled-older-than 7d";

pub const COUNTS: &str = "\
Examples:
  duraq counts
  duraq counts --json
  duraq counts --watch";

pub const QUEUES: &str = "\
Counts per queue and status (RUNNING: handed off to a worker), LATENCY: how long
the oldest due job of the queue has been waiting (- when none is due), and
PAUSED: yes while `duraq queues pause` holds the queue (a paused queue is listed
even when it holds no job).

Below the table, a warning names every job name (per queue) with due jobs that
no alive worker handles: a typo in the name, a handler that is not registered,
or a queue no worker serves (`duraq workers` shows what each worker handles).
Only the oldest 10,000 due jobs are looked at; workers are judged by
--stale-after (60s by default). JSON: `unhandled`.

Examples:
  duraq queues
  duraq queues --json
  duraq queues pause mail
  duraq queues resume mail
  duraq --database postgres://duraq@localhost/app queues";

pub const QUEUES_PAUSE: &str = "\
Durable: the pause is a row in the database, seen by every worker process at its
next claim. Jobs already running finish and report; new jobs may still be
enqueued. Prints {\"queue\",\"paused\":true,\"changed\"} (changed: false when
the queue was already paused).

Examples:
  duraq queues pause mail
  duraq --database postgres://duraq@localhost/app queues pause webhooks";

pub const QUEUES_RESUME: &str = "\
Idle workers are woken at once (PostgreSQL: NOTIFY; SQLite: within their poll).
Prints {\"queue\",\"paused\":false,\"changed\"} (changed: false when the queue
was not paused).

Examples:
  duraq queues resume mail
  duraq --database postgres://duraq@localhost/app queues resume webhooks";

pub const WORKERS: &str = "\
Each `duraq worker` (and every application worker built on duraq) records
itself when it starts and removes itself when it stops gracefully. STATE is
alive while its heartbeat is no older than --stale-after (60s, the worker's
default; pass the timeout your workers run with), else stale: the process is
gone or stuck, and its running jobs go back to the queue at the next recovery. QUEUES * means every queue; RUNNING counts the jobs
handed off to it (--jobs lists them).

`duraq queues` warns about due jobs that no alive worker handles (a job name
nobody registered, or a queue nobody serves).

Examples:
  duraq workers
  duraq workers --jobs
  duraq workers --json
  duraq workers --stale-after 5m
  duraq --database postgres://duraq@localhost/app workers";

pub const STATS: &str = "\
Throughput from the history stored in the database: workers, dashboards and
this command each take a sample of every queue's totals once a minute (the
first sample of a minute wins), and a row is the difference between one
sample and the next, so it is exact to the sampling instants, not to the
row's edges; the newest row runs to now. Failed counts jobs that failed with
no retries left (or were discarded); retried counts failed or lost attempts
that went back to the queue. Samples are kept 7 days. Rows where nobody
sampled are left out of the table and are null in --json.

Examples:
  duraq stats
  duraq stats --since 24h --queue mail
  duraq stats --since 7d --json";

pub const WORKER: &str = "\
Built-in jobs:
  duraq.noop           any args; succeeds
  duraq.sleep          {\"ms\":N}: sleeps N milliseconds, then succeeds
  duraq.echo           any args; completes with its args as its output
  duraq.http           {\"url\",\"method\"?,\"headers\"?,\"body\"?}: sends the request
                       (method POST by default); a non-2xx answer is a failed
                       attempt and is retried
  duraq.mail.deliver   sends a mail enqueued by `duraq mail send --later`; only
                       when DURAQ_MAIL_BACKEND is set

Environment:
  DURAQ_DATABASE_URL   the database, unless --database is given
  DURAQ_SCHEMA         PostgreSQL schema, unless --schema is given
  DURAQ_LOG, RUST_LOG  log filter (DURAQ_LOG wins), e.g. `duraq_core=debug,info`;
                       the worker logs at info by default, on stderr
  NO_COLOR             set and non-empty: no colour in logs
  DURAQ_MAIL_BACKEND   smtp, resend-smtp or resend-api (enables duraq.mail.deliver)
  DURAQ_MAIL_FROM      default sender
  DURAQ_SMTP_HOST, DURAQ_SMTP_PORT, DURAQ_SMTP_USERNAME, DURAQ_SMTP_PASSWORD,
  DURAQ_SMTP_TLS       SMTP settings (smtp and resend-smtp); TLS starttls, tls or none
  RESEND_API_KEY       Resend key (resend-api; password of resend-smtp)
  DURAQ_RESEND_BASE_URL  Resend API base URL (default https://api.resend.com)

Examples:
  duraq worker
  duraq worker --queues default,mail --concurrency 20
  duraq worker --queue-cap mail=2 --drain-timeout 2m
  duraq worker --cancel-grace 30s
  duraq worker --metrics-listen 127.0.0.1:9100
  duraq worker --schedule schedules.toml   # periodic built-in jobs (docs/periodic.md)
  duraq worker --log-format json
  DURAQ_LOG=debug duraq --database postgres://duraq@localhost/app worker";

pub const WEB: &str = "\
Serves the dashboard: counts per status updated live, queues, jobs with filters
and paging, each job's details with retry and cancel, running workers, schedule
keys; and Prometheus metrics at /metrics. It reads an existing database only.

Beyond the loopback interface it refuses to start without DURAQ_WEB_TOKEN; with
a token every request needs it: `Authorization: Bearer <token>`, or open any
page once with `?token=<token>` (it sets an HttpOnly cookie).

Environment:
  DURAQ_WEB_TOKEN      token required on every request (never printed)

Examples:
  duraq web
  duraq web --listen 127.0.0.1:9000 --read-only
  duraq --database postgres://duraq@localhost/app web
  DURAQ_WEB_TOKEN=$(openssl rand -hex 32) duraq web --listen 0.0.0.0:8080

See docs/dashboard.md.";

pub const DEMO: &str = "\
Examples:
  duraq demo
  duraq demo --jobs 500
  duraq demo --dir /tmp/duraq-demo --json";

pub const MAIL: &str = "\
The backend comes from DURAQ_MAIL_BACKEND (smtp, resend-smtp or resend-api) and
its own variables (`duraq worker --help` lists them); credentials are read from
the environment only and never printed.

Examples:
  duraq mail send --to ann@example.com --subject Hello --text 'Hi Ann'";

pub const MAIL_SEND: &str = "\
Examples:
  duraq mail send --to ann@example.com --subject Hello --text 'Hi Ann'
  duraq mail send --to ann@example.com --cc bob@example.com --subject Report --html '<p>Done</p>' --later
  duraq mail send --to ann@example.com --subject Receipt --text 'Paid' --operation-id receipt:42

Prints {\"delivered\":true,\"providerMessageId\"} or, with --later,
{\"jobId\",\"replayed\"}.";

pub const TENANTS: &str = "\
Tenant databases come from --tenants FILE, --tenants-dir DIR or --tenants-query
SQL; the global --database is not used (giving it is a usage error).

Examples:
  duraq tenants pending projectTenant --tenants-dir /srv/tenants --fail-on-pending
  duraq tenants migrate projectTenant --tenants tenants.toml";

pub const TENANTS_PENDING: &str = "\
Exit status: 0 nothing pending (or pending without --fail-on-pending), 1 error,
3 pending with --fail-on-pending. Never writes to a tenant database.

Examples:
  duraq tenants pending projectTenant --tenants tenants.json
  duraq tenants pending projectTenant --tenants-dir /srv/tenants --fail-on-pending
  duraq tenants pending projectTenant --tenants-query 'SELECT name, url FROM tenants' --control-database postgres://ctl@localhost/control";

pub const TENANTS_MIGRATE: &str = "\
Examples:
  duraq tenants migrate projectTenant --tenants tenants.toml
  duraq tenants migrate projectTenant --tenants-dir /srv/tenants --migrations migrations/ --phase post-publication";

pub const COMPLETIONS: &str = "\
Examples:
  duraq completions bash > ~/.local/share/bash-completion/completions/duraq
  duraq completions zsh > ~/.zfunc/_duraq      # with fpath+=(~/.zfunc) before compinit
  duraq completions fish > ~/.config/fish/completions/duraq.fish";

pub const MAN: &str = "\
Examples:
  duraq man | man -l -
  duraq man --out /usr/local/share/man/man1";

pub const WORKFLOWS: &str = "\
A workflow is a named group of jobs inserted at once, whose steps wait for each
other by step name; a step is pending until the steps it waits for have finished.

Examples:
  duraq workflows enqueue onboard.json
  duraq workflows append 0193a0b0-0000-8000-8000-00000000000a more.json
  duraq workflows show 0193a0b0-0000-8000-8000-00000000000a
  duraq workflows retry 0193a0b0-0000-8000-8000-00000000000a";

pub const WORKFLOWS_ENQUEUE: &str = "\
Examples:
  duraq workflows enqueue onboard.json
  generate-workflow | duraq workflows enqueue -

FILE:
  {\"name\": \"onboard\", \"idempotencyKey\": \"user-7\", \"steps\": [
    {\"step\": \"signup\", \"job\": \"duraq.echo\", \"args\": {\"user\": 7}},
    {\"step\": \"welcome\", \"job\": \"send_welcome\", \"after\": [\"signup\"]},
    {\"step\": \"summary\", \"job\": \"summarize\", \"after\": [\"welcome\"],
     \"onDependencyFailure\": \"run\", \"queue\": \"reports\"}]}

Each step also takes any enqueue option (queue, maxRetries, runInMs, priority, …).
Prints {\"workflowId\",\"jobs\":{step:jobId},\"replayed\"}. Nothing is written when
the file names a step twice (duplicate-step), waits for a step it does not have
(dependency-not-found) or in a circle (workflow-cycle). With an idempotencyKey, a
second enqueue of the same file replays the first one's ids.";

pub const WORKFLOWS_LIST: &str = "\
Examples:
  duraq workflows list
  duraq workflows list --limit 20 --json
  duraq workflows list --before 0193a0b0-0000-8000-8000-00000000000a

States: active (a step not finished), completed (every step completed),
failed (every step finished, one did not complete). With --json:
{\"workflows\":[{\"workflowId\",\"state\",\"steps\",\"counts\":{status:n},
\"createdAtMs\"}],\"next\"}; `next` (or null) is the --before of the next page.";

pub const WORKFLOWS_APPEND: &str = "\
Examples:
  duraq workflows append 0193a0b0-0000-8000-8000-00000000000a more.json
  generate-steps | duraq workflows append 0193a0b0-0000-8000-8000-00000000000a -

FILE:
  {\"idempotencyKey\": \"add-report\", \"steps\": [
    {\"step\": \"report\", \"job\": \"build_report\", \"after\": [\"signup\"]},
    {\"step\": \"mail\", \"job\": \"send_report\", \"after\": [\"report\"]}]}

Steps are those of `workflows enqueue`; \"after\" names new steps or steps the
workflow already has, whatever their status (a completed one is satisfied at once,
a failed one cancels the new step unless it runs on failure). Prints
{\"workflowId\",\"jobs\":{step:jobId},\"replayed\"} for the new steps. Nothing is
written when W has no step (workflow-not-found), a name is taken (duplicate-step),
an \"after\" names no step (dependency-not-found) or new steps wait in a circle
(workflow-cycle). With an idempotencyKey, a second append of the same file replays
the first one's ids.";

pub const WORKFLOWS_SHOW: &str = "\
Examples:
  duraq workflows show 0193a0b0-0000-8000-8000-00000000000a
  duraq workflows show 0193a0b0-0000-8000-8000-00000000000a --json

With --json: {\"workflowId\",\"counts\":{status:n},\"total\",\"steps\":[{\"step\",\"jobId\",
\"jobName\",\"status\",\"dependsOn\",\"openDependencies\",\"outputBytes\"}]}, oldest step first.";

pub const WORKFLOWS_CANCEL: &str = "\
Examples:
  duraq workflows cancel 0193a0b0-0000-8000-8000-00000000000a

Cancels every step not finished (running ones as `jobs cancel` does); prints
{\"workflowId\",\"action\",\"changed\",\"skipped\"}.";

pub const WORKFLOWS_RETRY: &str = "\
Examples:
  duraq workflows retry 0193a0b0-0000-8000-8000-00000000000a

Retries every failed, orphaned or operator-cancelled step; the steps their
failure cancelled go back to pending. Prints {\"workflowId\",\"action\",
\"changed\",\"skipped\"}.";
