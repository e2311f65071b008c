//! The hourly counters of attempts, spread over [`STATS_SHARDS`] items.
//!
//! Why shards: every attempt of every user counts, and on AWS one counter item written by
//! all of them would be a conflict magnet (a transaction is cancelled when another holds
//! one of its items) and a throttled hot item. Each transaction counts in a shard picked
//! at random, so concurrent users rarely meet, and the hour's total is the sum of the
//! shards: exact, because each count is written in the transaction that records the
//! attempt.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::{table, Action};
use crate::server::store::item::{n, s};
use crate::server::store::{Store, StoreError};

/// How many items the hourly counters are spread over.
pub const STATS_SHARDS: u32 = 16;

pub fn stats_pk(shard: u32) -> String {
    format!("STATS#{shard:02}")
}

fn random_shard() -> u32 {
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).map_or(0, |_| u32::from_le_bytes(b) % STATS_SHARDS)
}

/// One attempt of `outcome` counted in this hour, in a shard picked at random.
pub(super) fn count(
    store: &Store,
    hour: &str,
    outcome: Action,
    keep_until: i64,
) -> Result<TransactWriteItem, StoreError> {
    let u = Update::builder()
        .table_name(table(store))
        .key("PK", s(stats_pk(random_shard())))
        .key("SK", s(hour))
        .update_expression("ADD attempts :one, #o :one SET #t = :keep")
        .expression_attribute_names("#o", outcome.as_str())
        .expression_attribute_names("#t", "ttl")
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":keep", n(keep_until))
        .build()
        .map_err(|e| StoreError::corrupt("measurement stats", e))?;
    Ok(TransactWriteItem::builder().update(u).build())
}

/// Hourly counters between two hours (`YYYY-MM-DDTHH`), inclusive: every shard read
/// (in parallel) and summed.
pub async fn stats(
    store: &Store,
    from_hour: &str,
    to_hour: &str,
) -> Result<Vec<(String, HashMap<String, i64>)>, StoreError> {
    let reads = (0..STATS_SHARDS).map(|shard| stats_shard(store, shard, from_hour, to_hour));
    let mut total: BTreeMap<String, HashMap<String, i64>> = Default::default();
    for shard in futures_util::future::try_join_all(reads).await? {
        for (hour, counts) in shard {
            let sum = total.entry(hour).or_default();
            for (k, v) in counts {
                *sum.entry(k).or_default() += v;
            }
        }
    }
    Ok(total.into_iter().collect())
}

async fn stats_shard(
    store: &Store,
    shard: u32,
    from_hour: &str,
    to_hour: &str,
) -> Result<Vec<(String, HashMap<String, i64>)>, StoreError> {
    let req = store
        .client()
        .query()
        .table_name(table(store))
        .key_condition_expression("PK = :pk AND SK BETWEEN :a AND :b")
        .expression_attribute_values(":pk", s(stats_pk(shard)))
        .expression_attribute_values(":a", s(from_hour))
        .expression_attribute_values(":b", s(to_hour));
    Ok(crate::server::store::query::every(req)
        .await?
        .into_iter()
        .filter_map(|item| {
            let hour = item.get("SK")?.as_s().ok()?.clone();
            let counts = item
                .iter()
                .filter(|(k, _)| k.as_str() != "ttl")
                .filter_map(|(k, v)| Some((k.clone(), v.as_n().ok()?.parse().ok()?)))
                .collect();
            Some((hour, counts))
        })
        .collect())
}
