//! The receiver's concurrency limit, shared by every console (docs/events.md, "Concurrency
//! limit"): at most `events.receiver_concurrency` requests to the receiver at once. Each
//! is a slot, one item per slot in `settings-<env>` (the hash of the receiver's URL and the
//! slot's number), held under a lease: a delivery takes a free or expired slot with a
//! conditional write naming itself, and gives it back when the receiver has answered. A
//! console that dies holding one loses it when its lease runs out. The items are the same
//! every time: nothing piles up, and each takes only its share of the writes.

use crate::server::store::item::{n, s, update_if};
use crate::server::store::schema::SETTINGS;
use crate::server::store::{Store, StoreError};

/// A slot no one took for this long goes (TTL): the receiver's URL changed, or its limit
/// came down.
const UNUSED_SECONDS: i64 = 30 * 86_400;

fn pk(receiver: &str, slot: usize) -> String {
    format!("receiver-slot#{receiver}#{slot}")
}

/// Takes one of the `slots` slots of `receiver` for `holder` until `until_ms`, trying them
/// from `start` on: the slot's number, or `None` when every one is held. A lost answer sent
/// again finds the slot already its own.
pub async fn take(
    store: &Store,
    receiver: &str,
    slots: usize,
    holder: &str,
    now_ms: i64,
    until_ms: i64,
    start: usize,
) -> Result<Option<usize>, StoreError> {
    let table = store.table(SETTINGS.base);
    for i in 0..slots {
        let slot = (start + i) % slots;
        let req = store
            .client()
            .update_item()
            .table_name(&table)
            .key("pk", s(pk(receiver, slot)))
            .update_expression("SET holder = :me, #until = :until, expires_at = :gone")
            .condition_expression("attribute_not_exists(#until) OR #until < :now OR holder = :me")
            .expression_attribute_names("#until", "until")
            .expression_attribute_values(":me", s(holder))
            .expression_attribute_values(":until", n(until_ms))
            .expression_attribute_values(":now", n(now_ms))
            .expression_attribute_values(":gone", n(now_ms / 1000 + UNUSED_SECONDS));
        if update_if(req).await? {
            return Ok(Some(slot));
        }
    }
    Ok(None)
}

/// Gives `slot` back, if `holder` still holds it (a lease that ran out may be another's).
pub async fn give_back(
    store: &Store,
    receiver: &str,
    slot: usize,
    holder: &str,
) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(SETTINGS.base))
        .key("pk", s(pk(receiver, slot)))
        .update_expression("SET #until = :free")
        .condition_expression("holder = :me")
        .expression_attribute_names("#until", "until")
        .expression_attribute_values(":me", s(holder))
        .expression_attribute_values(":free", n(0));
    update_if(req).await.map(|_| ())
}
