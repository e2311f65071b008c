//! `idempotency_stats-<env>`: the engine's counters, one item per scope and hour, and an
//! `#all` item per hour naming the scopes active in it.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::server::store::items::{n, s};
use crate::server::store::schema::IDEMPOTENCY_STATS;
use crate::server::store::{Store, StoreError};

/// The counters kept per scope and hour.
pub const COUNTERS: &[&str] = &[
    "requests",
    "fresh",
    "replayed",
    "in_progress",
    "takeovers",
    "retries",
    "failures",
    "mismatches",
    "lost_ownership",
];

pub const ALL_SCOPES: &str = "#all";

/// Adds `deltas` to one (scope, hour) bucket, and notes the scope as active that hour.
pub async fn add_stats(
    store: &Store,
    scope: &str,
    hour: &str,
    deltas: &BTreeMap<&'static str, u64>,
    expires_at: i64,
) -> Result<(), StoreError> {
    let table = store.table(IDEMPOTENCY_STATS.base);
    let mut adds = Vec::new();
    let mut req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("scope", s(scope))
        .key("hour", s(hour));
    for (i, (name, value)) in deltas.iter().filter(|(_, v)| **v > 0).enumerate() {
        adds.push(format!("#c{i} :c{i}"));
        req = req
            .expression_attribute_names(format!("#c{i}"), *name)
            .expression_attribute_values(format!(":c{i}"), n(value));
    }
    if adds.is_empty() {
        return Ok(());
    }
    req.update_expression(format!("SET expires_at = :exp ADD {}", adds.join(", ")))
        .expression_attribute_values(":exp", n(expires_at))
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    store
        .client()
        .update_item()
        .table_name(&table)
        .key("scope", s(ALL_SCOPES))
        .key("hour", s(hour))
        .update_expression("SET expires_at = :exp ADD scopes :scope")
        .expression_attribute_values(":exp", n(expires_at))
        .expression_attribute_values(":scope", AttributeValue::Ss(vec![scope.to_string()]))
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    Ok(())
}

/// One bucket as read back.
#[derive(Clone, Debug, Default)]
pub struct Bucket {
    pub hour: String,
    pub counts: BTreeMap<String, u64>,
    pub scopes: Vec<String>,
}

/// The buckets of one scope (or [`ALL_SCOPES`]) from `from_hour` on, oldest first.
pub async fn read_stats(
    store: &Store,
    scope: &str,
    from_hour: &str,
) -> Result<Vec<Bucket>, StoreError> {
    let table = store.table(IDEMPOTENCY_STATS.base);
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .client()
            .query()
            .table_name(&table)
            .key_condition_expression("#scope = :scope AND #hour >= :from")
            .expression_attribute_names("#scope", "scope")
            .expression_attribute_names("#hour", "hour")
            .expression_attribute_values(":scope", s(scope))
            .expression_attribute_values(":from", s(from_hour))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(StoreError::request("Query"))?;
        for item in page.items.unwrap_or_default() {
            let mut bucket = Bucket::default();
            for (k, v) in item {
                match (k.as_str(), v) {
                    ("hour", AttributeValue::S(h)) => bucket.hour = h,
                    ("scopes", AttributeValue::Ss(set)) => bucket.scopes = set,
                    (name, AttributeValue::N(num)) if COUNTERS.contains(&name) => {
                        bucket
                            .counts
                            .insert(name.to_string(), num.parse().unwrap_or(0));
                    }
                    _ => {}
                }
            }
            out.push(bucket);
        }
        match page.last_evaluated_key {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    Ok(out)
}
