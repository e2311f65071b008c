//! A receiver's queue depth (docs/events.md, "Receivers"): its side effects in the due
//! group — queued, retrying, in flight or parked — counted in its own range of the group's
//! sort keys, so a long queue of one receiver costs the others' counts nothing.

use super::outbox::{Group, SHARDS};
use super::outbox_reads::{spec, Filter};
use crate::model::outbox::ReceiverName;
use crate::server::store::query::{self, Count};
use crate::server::store::{Store, StoreError};

/// Pages a count reads per shard at most (`Select=COUNT`, up to 1 MB of items each).
const PAGES_PER_SHARD: usize = 10;

/// How many side effects wait for `receiver`, and whether every shard was read to its end.
/// The filter on `receiver` leaves out an action an older release put in `default`'s range
/// (its round moves it to its own).
pub async fn of(store: &Store, receiver: &ReceiverName) -> Result<Count, StoreError> {
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
