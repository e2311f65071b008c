//! The outbox's counts beyond a group's size: a receiver's queue depth (docs/events.md,
//! "Receivers") — its side effects in the due group, queued, retrying, in flight or parked,
//! counted in its own range of the group's sort keys, so a long queue of one receiver costs
//! the others' counts nothing — and the dead letters by cause.

use std::collections::BTreeMap;

use super::outbox::{Group, Part};
use super::outbox_reads::{spec, Filter};
use crate::model::outbox::ReceiverName;
use crate::server::store::query::{self, Count, Start};
use crate::server::store::{Store, StoreError};

/// Pages a queue depth reads per shard at most (`Select=COUNT`, up to 1 MB of items each):
/// the cards and the alert check read it often, and a longer queue is "at least" this.
const PAGES_PER_SHARD: usize = 2;

/// How many side effects wait for `receiver`, and whether every shard was read to its end:
/// its own range of the due group's keys (see `outbox_reads::spec`), the shards read side
/// by side. The filter on `receiver` leaves out an action an older release put in
/// `default`'s range (its round moves it to its own).
pub async fn queue_depth(store: &Store, receiver: &ReceiverName) -> Result<Count, StoreError> {
    let own = Filter {
        receiver: Some(receiver.as_str().to_string()),
        ..Filter::default()
    };
    let specs: Vec<_> = super::outbox_reads::parts_to_read(store, Group::Due, &own)
        .await?
        .into_iter()
        .map(|part| (part, spec(store, Group::Due, part, &own, None)))
        .collect();
    let counts =
        futures_util::future::try_join_all(specs.iter().map(|(part, spec)| {
            super::outbox_reads::count_part(store, *part, spec, PAGES_PER_SHARD)
        }))
        .await?;
    Ok(counts
        .into_iter()
        .fold(Count { n: 0, exact: true }, |t, c| Count {
            n: t.n + c.n,
            exact: t.exact && c.exact,
        }))
}

/// Dead letters by cause, newest first in each shard, reading at most `per_shard` each.
pub async fn dead_by_cause(
    store: &Store,
    per_shard: usize,
) -> Result<BTreeMap<String, u64>, StoreError> {
    let mut by = BTreeMap::new();
    for part in Part::all(Group::Dead) {
        let mut spec = spec(store, Group::Dead, part, &Filter::default(), None);
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
