//! The flags of `duraq worker`, and the parsers of those whose values are
//! more than a number or a duration (`--prefetch N|auto|auto:N`,
//! `--queue-cap QUEUE=N`, `--priority-aging QUEUE=EVERY[:MAX]` and
//! `--fairness-weight KEY=N`). Each refuses a bad value with its own code before
//! the worker opens the database; `worker.rs` maps the parsed values onto the
//! core runtime's builder.

use clap::Args;
use duraq_core::worker::{PrefetchPolicy, MAX_PREFETCH};
use duraq_core::PriorityAging;

use crate::error::CliError;
use crate::parse::duration_ms;

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Only these queues (comma-separated; an empty entry is `invalid-queue`);
    /// default every queue.
    #[arg(long, value_name = "QUEUES", value_delimiter = ',')]
    pub queues: Vec<String>,
    /// Cap a queue: at most N of its jobs run at once across every worker (`mail=2`).
    #[arg(long = "queue-cap", value_name = "QUEUE=N")]
    pub queue_caps: Vec<String>,
    /// Age a queue's priorities: each due job of QUEUE rises one step of
    /// priority per EVERY it has waited, at most MAX steps (default 10), so
    /// low-priority jobs never starve (`reports=5m`, `reports=1m:50`).
    #[arg(long = "priority-aging", value_name = "QUEUE=EVERY[:MAX]")]
    pub priority_aging: Vec<String>,
    /// Give a fairness key N turns in a row where jobs take turns by key
    /// (`enqueue --fairness-key`); keys without a weight have 1
    /// (`tenant:big=3`).
    #[arg(long = "fairness-weight", value_name = "KEY=N")]
    pub fairness_weights: Vec<String>,
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

/// `--prefetch`: `N` (fixed, 0 to [`MAX_PREFETCH`]), `auto` (adaptive up to
/// the default cap) or `auto:N` (adaptive up to N).
pub fn prefetch_policy(raw: &str) -> Result<PrefetchPolicy, CliError> {
    let bad = |message: String| CliError::new("invalid-worker-config", message);
    let number = |text: &str| match text.trim().parse::<usize>() {
        Ok(n) if n <= MAX_PREFETCH => Ok(n),
        Ok(_) => Err(bad("--prefetch must be from 0 to 10,000".into())),
        Err(_) => Err(bad(format!(
            "--prefetch takes N (0 to 10,000), auto or auto:N, not {raw:?}"
        ))),
    };
    let text = raw.trim();
    if text.eq_ignore_ascii_case("auto") {
        return Ok(PrefetchPolicy::default());
    }
    match text.split_once(':') {
        Some((auto, max)) if auto.trim().eq_ignore_ascii_case("auto") => {
            Ok(PrefetchPolicy::Adaptive { max: number(max)? })
        }
        Some(_) => Err(bad(format!(
            "--prefetch takes N (0 to 10,000), auto or auto:N, not {raw:?}"
        ))),
        None => Ok(PrefetchPolicy::Fixed(number(text)?)),
    }
}

/// Parses `--queue-cap name=N`.
pub fn queue_cap(raw: &str) -> Result<(String, i64), CliError> {
    let bad = || {
        CliError::new(
            "invalid-queue-cap",
            format!("--queue-cap {raw:?} must look like QUEUE=N with N >= 1"),
        )
    };
    let (name, n) = raw.split_once('=').ok_or_else(bad)?;
    let n: i64 = n.trim().parse().map_err(|_| bad())?;
    if name.trim().is_empty() || n < 1 {
        return Err(bad());
    }
    Ok((name.trim().to_string(), n))
}

/// Parses `--fairness-weight KEY=N` (N from 1 to 1,000).
pub fn fairness_weight(raw: &str) -> Result<(String, u32), CliError> {
    let bad = || {
        CliError::new(
            "invalid-worker-config",
            format!("--fairness-weight {raw:?} must look like KEY=N with N from 1 to 1,000"),
        )
    };
    let (key, n) = raw.rsplit_once('=').ok_or_else(bad)?;
    let n: u32 = n.trim().parse().map_err(|_| bad())?;
    let key = key.trim();
    if key.is_empty() || !(1..=1_000).contains(&n) {
        return Err(bad());
    }
    // A key no job could carry is a mistake worth saying at start.
    let probe = duraq_core::EnqueueOptions::new().fairness_key(key);
    duraq_core::NewJob::new("probe", serde_json::json!([]), probe).map_err(|_| bad())?;
    Ok((key.to_owned(), n))
}

/// The steps of `--priority-aging` when MAX is left out.
const DEFAULT_AGING_STEPS: u8 = 10;

/// Parses `--priority-aging QUEUE=EVERY[:MAX]` (`reports=5m`, `reports=1m:50`).
pub fn priority_aging(raw: &str) -> Result<(String, PriorityAging), CliError> {
    let bad = || {
        CliError::new(
            "invalid-worker-config",
            format!(
                "--priority-aging {raw:?} must look like QUEUE=EVERY or QUEUE=EVERY:MAX \
                 (an interval of at least 1ms, MAX from 1 to 200 steps)"
            ),
        )
    };
    let (name, rest) = raw.split_once('=').ok_or_else(bad)?;
    let (every, steps) = match rest.split_once(':') {
        Some((every, max)) => (every, max.trim().parse::<u8>().map_err(|_| bad())?),
        None => (rest, DEFAULT_AGING_STEPS),
    };
    let every = duration_ms("--priority-aging", every.trim()).map_err(|_| bad())?;
    let every = std::time::Duration::from_millis(u64::try_from(every).map_err(|_| bad())?);
    let aging = PriorityAging::new(every, steps).map_err(|_| bad())?;
    let name = crate::parse::queue_name("--priority-aging", name).map_err(|_| bad())?;
    Ok((name.as_str().to_owned(), aging))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_prefetch_policy() {
        assert_eq!(prefetch_policy("auto").unwrap(), PrefetchPolicy::default());
        assert_eq!(
            prefetch_policy("auto:20").unwrap(),
            PrefetchPolicy::Adaptive { max: 20 }
        );
        assert_eq!(prefetch_policy("0").unwrap(), PrefetchPolicy::Fixed(0));
        assert_eq!(prefetch_policy("100").unwrap(), PrefetchPolicy::Fixed(100));
        for bad in ["10001", "auto:10001", "-1", "auto:", "many", "fixed:3", ""] {
            let e = prefetch_policy(bad).unwrap_err();
            assert_eq!(e.code, "invalid-worker-config", "{bad}");
            assert!(e.message.contains("--prefetch"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn parses_priority_aging() {
        let (queue, aging) = priority_aging("reports=1m:50").unwrap();
        assert_eq!(
            (queue.as_str(), aging.every_ms, aging.max_steps),
            ("reports", 60_000, 50)
        );
        assert_eq!(priority_aging("q=5s").unwrap().1.max_steps, 10);
        for bad in [
            "reports", "=1m", "q=soon", "q=1m:0", "q=1m:201", "q=0s", "q=-1m", "q=1m:x",
        ] {
            let e = priority_aging(bad).unwrap_err();
            assert_eq!(e.code, "invalid-worker-config", "{bad}");
        }
    }

    #[test]
    fn parses_fairness_weights() {
        assert_eq!(
            fairness_weight("tenant:big=3").unwrap(),
            ("tenant:big".to_string(), 3)
        );
        assert_eq!(fairness_weight("a=b=2").unwrap(), ("a=b".to_string(), 2));
        for bad in ["tenant", "=2", "t=0", "t=1001", "t=x", "t=-1", "bad\nkey=2"] {
            let e = fairness_weight(bad).unwrap_err();
            assert_eq!(e.code, "invalid-worker-config", "{bad}");
            assert!(e.message.contains("--fairness-weight"), "{bad}");
        }
    }

    #[test]
    fn parses_queue_caps() {
        assert_eq!(queue_cap("mail=2").unwrap(), ("mail".to_string(), 2));
        for bad in ["mail", "mail=0", "=3", "mail=x"] {
            assert_eq!(
                queue_cap(bad).unwrap_err().code,
                "invalid-queue-cap",
                "{bad}"
            );
        }
    }
}
