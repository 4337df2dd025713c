//! The rows and shares both halves of the raw scenarios use (`raw.rs` for
//! SQLite, `raw_pg.rs` for PostgreSQL), so that the two write what duraq's
//! own scenarios write and neither half depends on the other.

use std::ops::Range;

/// Jobs per claim (one worker's slots) and per completion batch.
pub(super) const CLAIM_LIMIT: usize = 64;

/// `total` split into `parts` consecutive ranges of (nearly) equal length.
pub(super) fn shares(total: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let mut start = 0;
    (0..parts)
        .map(|p| {
            let len = total / parts + usize::from(p < total % parts);
            start += len;
            start - len..start
        })
        .collect()
}

/// The row values duraq's batch scenario produces for its `i`-th job: args
/// `[i]` as JSON text and, on PostgreSQL, a 64-hex-digit args digest (duraq's
/// is a SHA-256; the SQLite store keeps a digest only on rows of dedupe
/// scopes, so raw SQLite rows hold an empty one, as duraq's do).
pub(super) fn args_text(i: usize) -> String {
    format!("[{i}]")
}

pub(super) fn args_digest(i: usize) -> String {
    format!("{i:064x}")
}
