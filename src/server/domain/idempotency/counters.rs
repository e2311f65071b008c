//! The engine counts its own outcomes per scope and hour in memory, and writes them to
//! `idempotency_stats` in one update per scope and hour when flushed.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::Engine;
use crate::server::store::idempotency as store;
use crate::server::store::StoreError;

/// One scope's counts in one hour, by counter name.
#[derive(Default)]
pub(super) struct Counts(BTreeMap<&'static str, u64>);

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
            let bucket = counters.entry((scope.to_string(), hour)).or_default();
            for name in what {
                *bucket.0.entry(name).or_default() += 1;
            }
        }
    }

    /// Writes the counters gathered since the last flush (one update per scope and hour).
    /// On failure they are kept for the next flush.
    pub async fn flush_stats(&self) -> Result<(), StoreError> {
        let taken: Vec<((String, String), Counts)> = match self.counters.lock() {
            Ok(mut c) => c.drain().collect(),
            Err(_) => return Ok(()),
        };
        let expires = (self.clock.now() + chrono::Duration::days(35)).timestamp();
        let mut failed = Vec::new();
        let mut first_error = None;
        for ((scope, hour), counts) in taken {
            if let Err(e) = store::add_stats(&self.store, &scope, &hour, &counts.0, expires).await {
                first_error.get_or_insert(e);
                failed.push(((scope, hour), counts));
            }
        }
        if !failed.is_empty() {
            if let Ok(mut c) = self.counters.lock() {
                for (k, counts) in failed {
                    let bucket = c.entry(k).or_default();
                    for (name, v) in counts.0 {
                        *bucket.0.entry(name).or_default() += v;
                    }
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
