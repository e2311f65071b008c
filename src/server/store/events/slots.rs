//! The receiver's concurrency limit, shared by every console (docs/events.md, "Concurrency
//! limit"): at most `events.receiver_concurrency` requests to the receiver at once. Each
//! is a slot, one item per slot in `settings-<env>` (the hash of the receiver's URL and the
//! slot's number), held under a lease: a delivery takes a free or expired slot with a
//! conditional write naming itself, and gives it back when the receiver has answered. A
//! console that dies holding one loses it when its lease runs out. The items are the same
//! every time: nothing piles up, and each takes only its share of the writes.

use std::collections::HashMap;

use crate::server::store::item::{n, s, update_if};
use crate::server::store::many::batch_get;
use crate::server::store::schema::SETTINGS;
use crate::server::store::{Store, StoreError};

/// A slot no one took for this long goes (TTL): the receiver's URL changed, or its limit
/// came down.
const UNUSED_SECONDS: i64 = 30 * 86_400;

fn pk(receiver: &str, slot: usize) -> String {
    format!("receiver-slot#{receiver}#{slot}")
}

/// Takes one of the `slots` slots of `receiver` for `holder` until `until_ms`: the slot's
/// number, or `None` when every one is held. One consistent read of them all first, then a
/// conditional write on the free ones (or expired, or already `holder`'s: a lost answer
/// sent again finds the slot its own), from `start` on; so a full limit costs one read,
/// not a refused write per slot.
pub async fn take(
    store: &Store,
    receiver: &str,
    slots: usize,
    holder: &str,
    now_ms: i64,
    until_ms: i64,
    start: usize,
) -> Result<Option<usize>, StoreError> {
    let keys = (0..slots)
        .map(|k| HashMap::from([("pk".to_string(), s(pk(receiver, k)))]))
        .collect();
    let held: HashMap<String, (String, i64)> = batch_get(store, SETTINGS.base, keys)
        .await?
        .into_iter()
        .filter_map(|item| {
            let text = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
            let until = item
                .get("until")
                .and_then(|v| v.as_n().ok())?
                .parse()
                .ok()?;
            Some((text("pk")?, (text("holder").unwrap_or_default(), until)))
        })
        .collect();
    let table = store.table(SETTINGS.base);
    for i in 0..slots {
        let slot = (start + i) % slots;
        let free = held
            .get(&pk(receiver, slot))
            .is_none_or(|(who, until)| *until < now_ms || who == holder);
        if !free {
            continue;
        }
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
