//! Which console polls which outbox shard (docs/events.md, "Who polls which shard"): one
//! lease per shard in `settings-<env>` (`dispatch#NN`: an owner and when its lease runs
//! out). A lease only says who reads a shard's due actions; every claim on an action stays
//! conditional on the action itself, so two consoles polling one shard (a lease lost
//! mid-round, a clock behind) still deliver each action once.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::server::store::item::{self, n, s};
use crate::server::store::many;
use crate::server::store::schema::SETTINGS;
use crate::server::store::{Store, StoreError};

/// A lease item is kept this long after its last write (TTL): a shard count lowered by a
/// later release leaves nothing behind for good.
const KEEP_SECONDS: i64 = 86_400;

/// The settings-table key of `shard`'s lease.
pub fn key(shard: u32) -> String {
    format!("dispatch#{shard:02}")
}

/// A shard's lease as it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub shard: u32,
    /// None: never taken.
    pub owner: Option<String>,
    /// When it runs out (wall ms); 0 when given back.
    pub until_ms: i64,
}

impl Lease {
    /// Whether a console holds it at `now_ms`.
    pub fn live(&self, now_ms: i64) -> bool {
        self.owner.is_some() && self.until_ms >= now_ms
    }
}

/// The leases of shards `0..shards`, in shard order, in one `BatchGetItem` (strongly
/// consistent: a lease taken just now is seen).
pub async fn read(store: &Store, shards: u32) -> Result<Vec<Lease>, StoreError> {
    let keys = (0..shards)
        .map(|shard| HashMap::from([("pk".to_string(), s(key(shard)))]))
        .collect();
    let mut found: HashMap<String, many::Item> = many::batch_get(store, SETTINGS.base, keys)
        .await?
        .into_iter()
        .filter_map(|i| match i.get("pk") {
            Some(AttributeValue::S(pk)) => Some((pk.clone(), i)),
            _ => None,
        })
        .collect();
    Ok((0..shards)
        .map(|shard| {
            let item = found.remove(&key(shard)).unwrap_or_default();
            Lease {
                shard,
                owner: match item.get("owner") {
                    Some(AttributeValue::S(o)) => Some(o.clone()),
                    _ => None,
                },
                until_ms: match item.get("lease_until_ms") {
                    Some(AttributeValue::N(v)) => v.parse().unwrap_or(0),
                    _ => 0,
                },
            }
        })
        .collect())
}

/// Takes (or renews) `shard`'s lease for `owner` until `until_ms` when it is free, run out
/// or already `owner`'s — or, given `from`, when it is still exactly as `from` was read
/// (taken from a console holding more than its share). False: another console got it.
pub async fn take(
    store: &Store,
    shard: u32,
    owner: &str,
    from: Option<&Lease>,
    now_ms: i64,
    until_ms: i64,
) -> Result<bool, StoreError> {
    let mut condition = String::from(
        "attribute_not_exists(pk) OR attribute_not_exists(#o) OR #o = :me \
         OR lease_until_ms < :now",
    );
    let mut req = store
        .client()
        .update_item()
        .table_name(store.table(SETTINGS.base))
        .key("pk", s(key(shard)))
        .update_expression("SET #o = :me, lease_until_ms = :until, expires_at = :exp")
        .expression_attribute_names("#o", "owner")
        .expression_attribute_values(":me", s(owner))
        .expression_attribute_values(":now", n(now_ms))
        .expression_attribute_values(":until", n(until_ms))
        .expression_attribute_values(":exp", n(until_ms / 1000 + KEEP_SECONDS));
    if let Some(Lease {
        owner: Some(them),
        until_ms: seen,
        ..
    }) = from
    {
        condition.push_str(" OR (#o = :them AND lease_until_ms = :seen)");
        req = req
            .expression_attribute_values(":them", s(them))
            .expression_attribute_values(":seen", n(*seen));
    }
    item::update_if(req.condition_expression(condition)).await
}

/// Gives `shard`'s lease back, if `owner` still holds it: another console takes it on its
/// next look instead of after the lease.
pub async fn give_back(store: &Store, shard: u32, owner: &str) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(SETTINGS.base))
        .key("pk", s(key(shard)))
        .update_expression("SET lease_until_ms = :zero")
        .condition_expression("#o = :me")
        .expression_attribute_names("#o", "owner")
        .expression_attribute_values(":me", s(owner))
        .expression_attribute_values(":zero", n(0));
    item::update_if(req).await.map(|_| ())
}
