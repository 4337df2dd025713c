//! One store's side of a model run: its store, clock and leases, the masking of
//! the lease ids it makes, its count deltas, and the state read back for
//! comparison. Also the lease bookkeeping shared by both sides.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use duraq_core::driver::Lease;
use duraq_core::inspect::{CountDelta, JobFilter};
use duraq_core::{Clock, ManualClock, Store};
use serde_json::{json, Value};
use tokio::sync::broadcast::Receiver;

use crate::model_gen::{Op, SignalTarget};
use crate::model_ops::{apply, Ctx};
use crate::{StoreFactory, T0};

/// One store's side of a run.
pub(crate) struct Side {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: ManualClock,
    pub(crate) leases: Vec<Lease>,
    /// handoffId → the token both stores' leases of that claim share.
    pub(crate) tokens: HashMap<String, String>,
    pub(crate) base_revision: i64,
    /// The revision of the last delta received.
    pub(crate) seen_revision: i64,
    pub(crate) deltas: Receiver<CountDelta>,
}

impl Side {
    pub(crate) async fn new(factory: &dyn StoreFactory) -> Self {
        let clock = ManualClock::new(T0);
        let store = factory.new_store(clock.clone()).await;
        let deltas = store.subscribe_counts();
        let base_revision = store
            .count_snapshot()
            .await
            .expect("count_snapshot")
            .revision;
        Self {
            store,
            clock,
            leases: Vec::new(),
            tokens: HashMap::new(),
            base_revision,
            seen_revision: base_revision,
            deltas,
        }
    }

    pub(crate) fn ctx<'a>(&'a self, step: usize, ids: &'a [String]) -> Ctx<'a> {
        Ctx {
            store: self.store.as_ref(),
            now: self.clock.now_ms(),
            step,
            ids,
            leases: &self.leases,
            base_revision: self.base_revision,
        }
    }

    /// `value` with every `handoffId` replaced by its shared token.
    pub(crate) fn mask(&self, value: Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| match (k.as_str(), &v) {
                        ("handoffId", Value::String(h)) => {
                            let token = self
                                .tokens
                                .get(h)
                                .cloned()
                                .unwrap_or_else(|| format!("unmapped:{h}"));
                            (k, Value::String(token))
                        }
                        _ => (k, self.mask(v)),
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.mask(v)).collect()),
            other => other,
        }
    }

    /// Deltas published since the last call, revisions relative to the start.
    /// Waits (up to 5 s) for deltas up to the current revision, for stores that
    /// publish after commit from another task.
    pub(crate) async fn drain_deltas(&mut self) -> Vec<Value> {
        let target = self
            .store
            .count_snapshot()
            .await
            .map_or(i64::MIN, |s| s.revision);
        let mut out = Vec::new();
        loop {
            let next = match self.deltas.try_recv() {
                Ok(d) => Some(d),
                Err(_) if self.seen_revision >= target => None,
                Err(_) => tokio::time::timeout(Duration::from_secs(5), self.deltas.recv())
                    .await
                    .ok()
                    .and_then(Result::ok),
            };
            let Some(d) = next else { break };
            self.seen_revision = d.revision;
            out.push(json!({"deltas": d.deltas, "revision": d.revision - self.base_revision}));
        }
        out
    }

    pub(crate) async fn state(&self) -> Value {
        let jobs = self
            .store
            .search_jobs(&JobFilter::default())
            .await
            .map(|p| p.jobs);
        let snap = self.store.count_snapshot().await.map(|mut s| {
            s.revision -= self.base_revision;
            s
        });
        let jobs = jobs
            .map(|j| serde_json::to_value(j).unwrap())
            .unwrap_or_else(|e| json!({"error": e.code().as_str()}));
        let snap = snap
            .map(|s| serde_json::to_value(s).unwrap())
            .unwrap_or_else(|e| json!({"error": e.code().as_str()}));
        // Counts per queue (and latency) after every operation, on every store.
        let queues = self
            .store
            .queue_snapshot()
            .await
            .map(|mut s| {
                s.revision -= self.base_revision;
                serde_json::to_value(s).unwrap()
            })
            .unwrap_or_else(|e| json!({"error": e.code().as_str()}));
        // The monotonic outcome totals per queue (`docs/history.md`), too.
        let totals = self
            .store
            .outcome_totals()
            .await
            .map(|t| serde_json::to_value(t).unwrap())
            .unwrap_or_else(|e| json!({"error": e.code().as_str()}));
        self.mask(json!({"jobs": jobs, "snapshot": snap, "queues": queues, "totals": totals}))
    }

    pub(crate) async fn keys_and_operations(&self) -> Value {
        let mut out = Vec::new();
        for k in 0..2u8 {
            out.push(apply(&self.ctx(0, &[]), &Op::GetKey(k, true)).await);
        }
        for k in 0..3 {
            let op = self.store.get_operation(&format!("op{k}")).await;
            out.push(
                op.map(|o| serde_json::to_value(o).unwrap())
                    .unwrap_or_else(|e| json!({"error": e.code().as_str()})),
            );
        }
        self.mask(Value::Array(out))
    }
}

/// Pairs the leases of one claim answered by both stores (same jobs, same order).
pub(crate) fn register_claim(reference: &mut Side, sut: &mut Side, r: &Value, s: &Value) {
    let (Some(r_jobs), Some(s_jobs)) = (r.as_array(), s.as_array()) else {
        return;
    };
    for (rj, sj) in r_jobs.iter().zip(s_jobs) {
        let (Some(id), Some(rh), Some(sh)) = (
            rj["id"].as_str(),
            rj["handoffId"].as_str(),
            sj["handoffId"].as_str(),
        ) else {
            continue;
        };
        if sj["id"].as_str() != Some(id) {
            continue;
        }
        let token = format!("lease-{}", reference.leases.len());
        reference.tokens.insert(rh.to_owned(), token.clone());
        sut.tokens.insert(sh.to_owned(), token);
        reference.leases.push(Lease {
            job_id: id.to_owned(),
            handoff_id: rh.to_owned(),
        });
        sut.leases.push(Lease {
            job_id: id.to_owned(),
            handoff_id: sh.to_owned(),
        });
    }
}

/// A `live` report names a lease that is still current in the reference (when
/// there is one): the resolved index is applied to both stores alike.
pub(crate) async fn resolve_live_lease(reference: &Side, op: &Op) -> Option<Op> {
    if let Op::Signal {
        target: SignalTarget::LiveLease(lease),
        name,
        payload,
    } = op
    {
        let current = live_leases(reference).await;
        let chosen = *current.get(lease % current.len().max(1))?;
        return Some(Op::Signal {
            target: SignalTarget::Lease(chosen),
            name: *name,
            payload: *payload,
        });
    }
    let Op::Report {
        lease,
        live: true,
        report,
        bogus,
    } = op
    else {
        return None;
    };
    let current = live_leases(reference).await;
    let chosen = *current.get(lease % current.len().max(1))?;
    Some(Op::Report {
        lease: chosen,
        live: true,
        report: report.clone(),
        bogus: *bogus,
    })
}

/// The indexes of the leases handed out that are still current.
async fn live_leases(reference: &Side) -> Vec<usize> {
    let mut current = Vec::new();
    for (i, l) in reference.leases.iter().enumerate() {
        let job = reference.store.get_job(&l.job_id).await.ok().flatten();
        if job.is_some_and(|j| j.lease().as_ref() == Some(l)) {
            current.push(i);
        }
    }
    current
}

/// How many job ids `op` hands out (used or not: replays and dedupes discard theirs).
pub(crate) fn new_ids(op: &Op) -> usize {
    match op {
        Op::Enqueue(_) | Op::Replace(..) => 1,
        Op::Batch(specs) => specs.len(),
        _ => 0,
    }
}
