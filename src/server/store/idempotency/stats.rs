//! `idempotency_stats-<env>`: the engine's counters, one item per scope, hour and console
//! (sort key `<hour>#<console>`), and an `#all` item per hour naming the scopes active in
//! it. A console writes its own totals (not increments) under a sequence number, so a
//! write sent again after a lost answer, or landing late after a newer one, changes
//! nothing: no count is ever added twice. A console notes a scope in the hour's `#all`
//! item with its first write of that bucket only: one item takes every console's notes,
//! and one note per console, scope and hour keeps it far from a partition's limit.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::server::store::item::{n, s};
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
    "client_errors",
    "lost_ownership",
];

pub const ALL_SCOPES: &str = "#all";

/// One console's totals of one (scope, hour) bucket, as of its `seq`th count.
pub struct Totals<'a> {
    pub scope: &'a str,
    pub hour: &'a str,
    pub console: &'a str,
    pub seq: u64,
    pub counts: &'a BTreeMap<&'static str, u64>,
    /// No write of this bucket by this console has succeeded yet: the scope is noted in
    /// the hour's `#all` item too (again, harmlessly, after a write that failed there).
    pub first: bool,
}

/// Writes a console's totals of one bucket unless a later write of them (a higher `seq`)
/// is there, and with the bucket's first write notes the scope as active that hour.
pub async fn put_stats(store: &Store, t: &Totals<'_>, expires_at: i64) -> Result<(), StoreError> {
    use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
    let table = store.table(IDEMPOTENCY_STATS.base);
    let mut sets = vec!["expires_at = :exp".to_string(), "seq = :seq".to_string()];
    let mut req = store
        .client()
        .update_item()
        .table_name(&table)
        .key("scope", s(t.scope))
        .key("hour", s(format!("{}#{}", t.hour, t.console)))
        .condition_expression("attribute_not_exists(seq) OR seq < :seq")
        .expression_attribute_values(":exp", n(expires_at))
        .expression_attribute_values(":seq", n(t.seq));
    for (i, (name, value)) in t.counts.iter().enumerate() {
        sets.push(format!("#c{i} = :c{i}"));
        req = req
            .expression_attribute_names(format!("#c{i}"), *name)
            .expression_attribute_values(format!(":c{i}"), n(value));
    }
    let req = req.update_expression(format!("SET {}", sets.join(", ")));
    match req.send().await {
        Ok(_) => {}
        // The same totals or newer ones are there already (a repeat, or a late write).
        Err(e) => match e.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(_) => {}
            other => return Err(StoreError::service("UpdateItem", &other)),
        },
    }
    if !t.first {
        return Ok(());
    }
    store
        .client()
        .update_item()
        .table_name(&table)
        .key("scope", s(ALL_SCOPES))
        .key("hour", s(t.hour))
        .update_expression("SET expires_at = :exp ADD scopes :scope")
        .expression_attribute_values(":exp", n(expires_at))
        .expression_attribute_values(":scope", AttributeValue::Ss(vec![t.scope.to_string()]))
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

/// The buckets of one scope (or [`ALL_SCOPES`]) from `from_hour` on, oldest first: each
/// hour the sum of every console's totals.
pub async fn read_stats(
    store: &Store,
    scope: &str,
    from_hour: &str,
) -> Result<Vec<Bucket>, StoreError> {
    let table = store.table(IDEMPOTENCY_STATS.base);
    let mut by_hour: BTreeMap<String, Bucket> = BTreeMap::new();
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
            let hour = item
                .get("hour")
                .and_then(|v| v.as_s().ok())
                .map(|h| h.split('#').next().unwrap_or_default().to_string())
                .unwrap_or_default();
            let bucket = by_hour.entry(hour.clone()).or_insert_with(|| Bucket {
                hour,
                ..Bucket::default()
            });
            for (k, v) in item {
                match (k.as_str(), v) {
                    ("scopes", AttributeValue::Ss(set)) => bucket.scopes.extend(set),
                    (name, AttributeValue::N(num)) if COUNTERS.contains(&name) => {
                        *bucket.counts.entry(name.to_string()).or_default() +=
                            num.parse::<u64>().unwrap_or(0);
                    }
                    _ => {}
                }
            }
        }
        match page.last_evaluated_key.filter(|k| !k.is_empty()) {
            Some(k) => start = Some(k),
            None => break,
        }
    }
    Ok(by_hour.into_values().collect())
}
