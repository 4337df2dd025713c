//! SIGINT/SIGTERM for the long-running commands (`worker`, `web`,
//! `counts --watch`), in one place so that each registers its listeners before
//! it starts and none misses a signal delivered early.

use anyhow::Result;

/// SIGINT and SIGTERM listeners registered once, up front, so that a signal
/// arriving at any moment after start is seen (a listener created later would
/// miss one delivered before it existed).
pub struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn new() -> Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self {
                int: signal(SignalKind::interrupt())?,
                term: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    pub async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
