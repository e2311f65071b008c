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

/// Slots read at once: a delivery reads a window of them from where it starts, and the
/// next window only when every slot of this one is held, so a wide limit costs a window's
/// reads, not one per slot.
pub const WINDOW: usize = 16;

/// Takes one of the `slots` slots of `receiver` for `holder` until `until_ms`: the slot's
/// number, or `None` when every one is held. A window of them is read at once (consistent),
/// then a conditional write is tried on its free ones (or expired, or already `holder`'s: a
/// lost answer sent again finds the slot its own), from `start` on; the next window only
/// when none was taken. So a full limit costs its reads, not a refused write per slot.
pub async fn take(
    store: &Store,
    receiver: &str,
    slots: usize,
    holder: &str,
    now_ms: i64,
    until_ms: i64,
    start: usize,
) -> Result<Option<usize>, StoreError> {
    for first in (0..slots).step_by(WINDOW) {
        let window: Vec<usize> = (first..(first + WINDOW).min(slots))
            .map(|i| (start + i) % slots)
            .collect();
        let held = read(store, receiver, &window).await?;
        for slot in window {
            let free = held
                .get(&pk(receiver, slot))
                .is_none_or(|(who, until)| *until < now_ms || who == holder);
            if free && hold(store, receiver, slot, holder, now_ms, until_ms).await? {
                return Ok(Some(slot));
            }
        }
    }
    Ok(None)
}

/// Who holds each of `window`'s slots that has ever been taken, and until when.
async fn read(
    store: &Store,
    receiver: &str,
    window: &[usize],
) -> Result<HashMap<String, (String, i64)>, StoreError> {
    let keys = window
        .iter()
        .map(|k| HashMap::from([("pk".to_string(), s(pk(receiver, *k)))]))
        .collect();
    Ok(batch_get(store, SETTINGS.base, keys)
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
        .collect())
}

/// Holds `slot` for `holder` until `until_ms` if it is free, expired or `holder`'s.
async fn hold(
    store: &Store,
    receiver: &str,
    slot: usize,
    holder: &str,
    now_ms: i64,
    until_ms: i64,
) -> Result<bool, StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(SETTINGS.base))
        .key("pk", s(pk(receiver, slot)))
        .update_expression("SET holder = :me, #until = :until, expires_at = :gone")
        .condition_expression("attribute_not_exists(#until) OR #until < :now OR holder = :me")
        .expression_attribute_names("#until", "until")
        .expression_attribute_values(":me", s(holder))
        .expression_attribute_values(":until", n(until_ms))
        .expression_attribute_values(":now", n(now_ms))
        .expression_attribute_values(":gone", n(now_ms / 1000 + UNUSED_SECONDS));
    update_if(req).await
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
