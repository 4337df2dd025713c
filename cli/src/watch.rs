//! `--watch` of `jobs show` and `workflows show`: read, print what changed,
//! and stop once the job (every step) is terminal, so a script can wait for a
//! workflow with one command (`duraq workflows show W --watch && …`). The
//! store is polled (a read per [`EVERY`]): the shows are for people and
//! scripts, not for the hot path, and work on every store alike.

use std::future::Future;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

/// How often a watch reads again.
pub const EVERY: Duration = Duration::from_millis(250);

/// Reads with `read` until `done` holds for what it read, printing each read
/// whose JSON form (`to_json`) differs from the last printed: that JSON, one
/// object per line, or `to_text` for people, a blank line apart (the text
/// says "5 s ago", which alone is no change).
pub async fn until_done<T, Fut>(
    mut read: impl FnMut() -> Fut,
    to_json: impl Fn(&T) -> Value,
    to_text: impl Fn(&T) -> String,
    done: impl Fn(&T) -> bool,
    json: bool,
) -> Result<()>
where
    Fut: Future<Output = Result<T>>,
{
    let mut last: Option<Value> = None;
    loop {
        let now = read().await?;
        let value = to_json(&now);
        if last.as_ref() != Some(&value) {
            if json {
                crate::output::print_json(&value);
            } else {
                if last.is_some() {
                    println!();
                }
                print!("{}", to_text(&now));
            }
            last = Some(value);
        }
        if done(&now) {
            return Ok(());
        }
        tokio::time::sleep(EVERY).await;
    }
}
