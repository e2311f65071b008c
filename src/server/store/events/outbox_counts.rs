//! The outbox's counts beyond a group's size: a receiver's queue depth (docs/events.md,
//! "Receivers") — its side effects in the due group, queued, retrying, in flight or parked,
//! counted in its own range of the group's sort keys, so a long queue of one receiver costs
//! the others' counts nothing — and the dead letters by cause.

use std::collections::BTreeMap;

use super::outbox::{Group, SHARDS};
use super::outbox_reads::{spec, Filter};
use crate::model::outbox::ReceiverName;
use crate::server::store::query::{self, Count, Start};
use crate::server::store::{Store, StoreError};

/// Pages a count reads per shard at most (`Select=COUNT`, up to 1 MB of items each).
const PAGES_PER_SHARD: usize = 10;

/// How many side effects wait for `receiver`, and whether every shard was read to its end.
/// The filter on `receiver` leaves out an action an older release put in `default`'s range
/// (its round moves it to its own).
pub async fn queue_depth(store: &Store, receiver: &ReceiverName) -> Result<Count, StoreError> {
    let own = Filter {
        receiver: Some(receiver.as_str().to_string()),
        ..Filter::default()
    };
    let mut total = Count { n: 0, exact: true };
    for shard in 0..SHARDS {
        let mut spec = spec(store, Group::Due, shard, &own, None);
        spec.sk = Some(("outbox_sk", super::window::queue_of(receiver.as_str())));
        let c = query::count(store, &spec, PAGES_PER_SHARD, None).await?;
        total.n += c.n;
        total.exact &= c.exact;
    }
    Ok(total)
}

/// Dead letters by cause, newest first in each shard, reading at most `per_shard` each.
pub async fn dead_by_cause(
    store: &Store,
    per_shard: usize,
) -> Result<BTreeMap<String, u64>, StoreError> {
    let mut by = BTreeMap::new();
    for shard in 0..SHARDS {
        let mut spec = spec(store, Group::Dead, shard, &Filter::default(), None);
        spec.projection = Some(vec!["cause"]);
        let page = query::page(store, &spec, Start::First, per_shard).await?;
        for item in page.items {
            let cause = item
                .get("cause")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_else(|| "unknown".into());
            *by.entry(cause).or_insert(0) += 1;
        }
    }
    Ok(by)
}
