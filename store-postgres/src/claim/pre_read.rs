//! What a fair claim reads in its first round trip, before it knows its
//! lanes, when its process claims keyed jobs: the ring of lanes at the
//! highest keyed priority, from the lane its turns start after. Its walk
//! of that priority then starts with the candidates of its turns.
//!
//! Reading those candidates in the first round trip as well, for the lanes
//! the process's last claim walked, was measured and taken back: a drain
//! over ten keys ran 0.96 (0.82 to 1.05, 12 rounds) of the drain without
//! it. What a fair claim costs more than a plain one is the server's and
//! the worker's processor time, not round trips.

use duraq_core::driver::steps::Turn;
use duraq_core::driver::ClaimRequest;
use duraq_core::Result;

use super::lane_hints::{Lane, LaneHints};
use super::lane_sql::TOP_LANES_RING;
use crate::backend::db::Db;
use crate::backend::row::Row;

/// The ring of lanes read ahead: from the lane after which the claim's
/// turns start, at the highest keyed priority (see [`super::lane_sql`]).
pub(crate) struct PreRead {
    pub(super) from: Option<Lane>,
    pub(super) rows: Vec<Row>,
}

/// The priority of a ring read by [`TOP_LANES_RING`] (`None`: it found no
/// lane).
pub(super) fn ring_priority(rows: &[Row]) -> Option<i64> {
    rows.first().map(|row| row.get(4))
}

/// The claim's ring read ahead (see the module docs), or `None` when its
/// process has not claimed keyed jobs lately. Sent after the claim's first
/// statements, in the same round trip.
pub(crate) async fn pre_read(
    db: &Db<'_>,
    req: &ClaimRequest,
    hints: &LaneHints,
) -> Result<Option<PreRead>> {
    if !hints.keyed() || req.limit == 0 || req.job_names.is_empty() {
        return Ok(None);
    }
    let from: Option<Lane> = match &req.turns.after {
        Some(Turn::Key { queue, key }) => Some((queue.clone(), key.clone())),
        _ => None,
    };
    let (q, k) = from.clone().unwrap_or_default();
    let rows = db.query(&TOP_LANES_RING, &[&q, &k]).await?;
    Ok(Some(PreRead { from, rows }))
}
