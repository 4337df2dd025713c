//! Issue 7's targets, as data, so every report says how far each figure is from
//! its goal. SQLite targets are stated for the documented durability (FULL);
//! the NORMAL row is an opt-in and is shown against them for information only.

/// Which way a figure has to go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Goal {
    AtLeast(f64),
    AtMost(f64),
}

/// The target of `figure` on `store`, if the issue sets one.
pub fn target(store: &str, figure: &str) -> Option<Goal> {
    use Goal::*;
    let sqlite = store.starts_with("sqlite");
    Some(match figure {
        "enqueue_one" if sqlite => AtLeast(2_000.0),
        "enqueue_one" => AtLeast(1_200.0),
        "enqueue_8tasks" | "enqueue_8procs" if sqlite => AtLeast(10_000.0),
        "enqueue_8tasks" | "enqueue_8procs" => AtLeast(5_000.0),
        "enqueue_batch" if sqlite => AtLeast(200_000.0),
        "enqueue_batch" => AtLeast(100_000.0),
        "drain_1w" | "drain_4w" if sqlite => AtLeast(30_000.0),
        "drain_4w" => AtLeast(20_000.0),
        "e2e_8producers_1w" if sqlite => AtLeast(8_000.0),
        "wakeup_p99" if !sqlite => AtMost(20.0),
        "count_snapshot_large_vs_small" => AtMost(1.5),
        // Fair turns must cost a drain little (docs/queues.md "Fair turns").
        "fair_drain_10keys_ratio" => AtLeast(0.9),
        f if f.starts_with("worker_peak_rss") => AtMost(64.0),
        _ => return None,
    })
}

/// Whether the target counts for `store` (false: shown for information).
pub fn binding(store: &str) -> bool {
    store != "sqlite-normal"
}

impl Goal {
    pub fn met(self, value: f64) -> bool {
        match self {
            Self::AtLeast(t) => value >= t,
            Self::AtMost(t) => value <= t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_follow_the_issue() {
        assert_eq!(
            target("sqlite-full", "enqueue_one"),
            Some(Goal::AtLeast(2_000.0))
        );
        assert_eq!(
            target("postgres", "enqueue_one"),
            Some(Goal::AtLeast(1_200.0))
        );
        assert_eq!(target("postgres", "drain_1w"), None);
        assert_eq!(target("postgres", "wakeup_p99"), Some(Goal::AtMost(20.0)));
        assert!(Goal::AtMost(64.0).met(20.0));
        assert!(!Goal::AtLeast(2_000.0).met(1_999.0));
        assert!(!binding("sqlite-normal"));
    }
}
