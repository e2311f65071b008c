//! The engine counts its own outcomes per scope and hour in memory, and writes this
//! console's totals to `idempotency_stats` when flushed: one write per bucket that
//! changed, setting (not adding) its totals under a sequence number, so a write repeated
//! after a lost answer, or landing late, never counts anything twice.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use super::Engine;
use crate::server::store::idempotency::{self as store, Totals};
use crate::server::store::StoreError;

/// One scope's counts in one hour, by counter name: this console's totals, and how many
/// counts they hold (its sequence number), and how many of them are written.
#[derive(Clone, Default)]
pub(super) struct Counts {
    totals: BTreeMap<&'static str, u64>,
    seq: u64,
    written: u64,
}

/// This console's counts, by (scope, hour).
#[derive(Default)]
pub(super) struct Counters {
    buckets: HashMap<(String, String), Counts>,
}

/// Buckets older than this many hours are forgotten once written.
const KEEP_HOURS: i64 = 3;

/// The bucket an instant counts in: `YYYY-MM-DDTHH` (UTC).
pub fn hour_key(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H").to_string()
}

impl Engine {
    /// Adds one to each counter in `what` for `scope`, this hour.
    pub(super) fn count(&self, scope: &str, what: &[&'static str]) {
        for name in what {
            crate::server::metrics::idempotency_outcome(scope, name);
        }
        let hour = hour_key(self.clock.now());
        if let Ok(mut counters) = self.counters.lock() {
            let bucket = counters
                .buckets
                .entry((scope.to_string(), hour))
                .or_default();
            for name in what {
                *bucket.totals.entry(name).or_default() += 1;
            }
            bucket.seq += 1;
        }
    }

    /// Writes the totals of every bucket counted in since its last write. A bucket whose
    /// write fails is written at the next flush (with whatever it counted meanwhile).
    pub async fn flush_stats(&self) -> Result<(), StoreError> {
        let changed: Vec<((String, String), Counts)> = match self.counters.lock() {
            Ok(c) => c
                .buckets
                .iter()
                .filter(|(_, b)| b.seq != b.written)
                .map(|(k, b)| (k.clone(), b.clone()))
                .collect(),
            Err(_) => return Ok(()),
        };
        let now = self.clock.now();
        let expires = (now + chrono::Duration::days(35)).timestamp();
        let mut first_error = None;
        for ((scope, hour), b) in changed {
            let totals = Totals {
                scope: &scope,
                hour: &hour,
                console: &self.console,
                seq: b.seq,
                counts: &b.totals,
                first: b.written == 0,
            };
            match store::put_stats(&self.store, &totals, expires).await {
                Ok(()) => {
                    if let Ok(mut c) = self.counters.lock() {
                        if let Some(kept) = c.buckets.get_mut(&(scope, hour)) {
                            kept.written = kept.written.max(b.seq);
                        }
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        let oldest = hour_key(now - chrono::Duration::hours(KEEP_HOURS));
        if let Ok(mut c) = self.counters.lock() {
            c.buckets
                .retain(|(_, hour), b| hour.as_str() >= oldest.as_str() || b.seq != b.written);
        }
        first_error.map_or(Ok(()), Err)
    }
}
