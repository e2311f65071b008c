//! One item: attribute values, a strongly consistent get, conditional puts, updates and
//! deletes that say whether their condition held, and an item's size as DynamoDB counts it.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{Store, StoreError};

pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// A strongly consistent read of one item, decoded.
pub async fn get<T: DeserializeOwned>(
    store: &Store,
    base: &str,
    key: &str,
    value: &str,
) -> Result<Option<T>, StoreError> {
    let table = store.table(base);
    let out = store
        .client()
        .get_item()
        .table_name(&table)
        .key(key, s(value))
        .consistent_read(true)
        .send()
        .await
        .map_err(StoreError::request("GetItem"))?;
    out.item
        .map(|item| serde_dynamo::from_item(item).map_err(|e| StoreError::corrupt(&table, e)))
        .transpose()
}

/// Decodes an item read from `table`.
pub fn decode<T: DeserializeOwned>(
    item: HashMap<String, AttributeValue>,
    table: &str,
) -> Result<T, StoreError> {
    serde_dynamo::from_item(item).map_err(|e| StoreError::corrupt(table, e))
}

/// The outcome of a claim.
pub enum Claim<T> {
    /// The key was free (or its item had expired): it is ours now.
    Won,
    /// A live item holds the key; this is it, read by the failed write itself.
    Exists(Box<T>),
}

/// One conditional `PutItem`: writes `item` unless a live item (`expires_at` not yet past)
/// holds its key attribute `key`. The failed write hands back the item that stopped it
/// (`ReturnValuesOnConditionCheckFailure = ALL_OLD`), so a duplicate costs exactly this one
/// request and no extra read.
pub async fn claim<T: Serialize + DeserializeOwned>(
    store: &Store,
    base: &str,
    key: &str,
    item: &T,
    now_s: i64,
) -> Result<Claim<T>, StoreError> {
    let table = store.table(base);
    match put_unless_live(store, &table, key, item, now_s).await? {
        None => Ok(Claim::Won),
        Some(old) if !old.is_empty() => Ok(Claim::Exists(Box::new(decode(old, &table)?))),
        Some(_) => Err(StoreError::Request {
            op: "PutItem",
            detail: "conditional check failed without the existing item".into(),
        }),
    }
}

/// Writes `item` unless a live item with the same key is already there. Returns false when
/// it was there.
pub async fn put_if_absent<T: Serialize>(
    store: &Store,
    base: &str,
    key: &str,
    item: &T,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let table = store.table(base);
    Ok(put_unless_live(store, &table, key, item, now.timestamp())
        .await?
        .is_none())
}

/// `None` when written, else the item that stopped the write.
///
/// A condition failing on an item exactly like the one we are writing means an earlier
/// attempt of this very write was applied and its answer lost (the SDK sends a request
/// again when the answer does not come): that counts as written. Each claim carries a
/// fresh nonce, so no other writer's item can be equal to ours.
async fn put_unless_live<T: Serialize>(
    store: &Store,
    table: &str,
    key: &str,
    item: &T,
    now_s: i64,
) -> Result<Option<HashMap<String, AttributeValue>>, StoreError> {
    let av: HashMap<String, AttributeValue> =
        serde_dynamo::to_item(item).map_err(|e| StoreError::corrupt(table, e))?;
    put_item_unless_live(store, table, key, av, now_s).await
}

/// [`put_unless_live`] of an item already in DynamoDB's form.
pub(crate) async fn put_item_unless_live(
    store: &Store,
    table: &str,
    key: &str,
    av: HashMap<String, AttributeValue>,
    now_s: i64,
) -> Result<Option<HashMap<String, AttributeValue>>, StoreError> {
    let req = store
        .client()
        .put_item()
        .table_name(table)
        .set_item(Some(av.clone()))
        // An expired item counts as absent even before TTL deletes it.
        .condition_expression("attribute_not_exists(#k) OR expires_at <= :now")
        .expression_attribute_names("#k", key)
        .expression_attribute_values(":now", n(now_s))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    super::tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(None),
            Err(e) => match e.into_service_error() {
                PutItemError::ConditionalCheckFailedException(ccf) => {
                    let old = ccf.item.unwrap_or_default();
                    Ok((old != av).then_some(old))
                }
                other => Err(StoreError::service("PutItem", &other)),
            },
        }
    })
    .await
}

/// Sends a conditional `UpdateItem` (throttles and conflicts retried by
/// [`tx::retrying`](super::tx::retrying)): true when it was applied, false when its
/// condition failed.
pub async fn update_if(req: UpdateItemFluentBuilder) -> Result<bool, StoreError> {
    super::tx::retrying(|| async {
        match req.clone().send().await {
            Ok(_) => Ok(true),
            Err(e) => match e.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(StoreError::service("UpdateItem", &other)),
            },
        }
    })
    .await
}

pub async fn delete(store: &Store, base: &str, key: &str, value: &str) -> Result<(), StoreError> {
    let req = store
        .client()
        .delete_item()
        .table_name(store.table(base))
        .key(key, s(value));
    super::tx::retrying(|| async {
        req.clone()
            .send()
            .await
            .map_err(StoreError::request("DeleteItem"))
    })
    .await?;
    Ok(())
}

/// DynamoDB's size of an attribute value in bytes, by its published rules (strings and
/// binaries by length, numbers by significant digits, 3 bytes plus 1 per element for lists
/// and maps, names counted as UTF-8). A conversation keeps its size by this count, so an
/// append's own condition refuses a message before the item would pass the 400 KB limit.
pub fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => {
            let digits = n.chars().filter(char::is_ascii_digit).count();
            digits.div_ceil(2) + 1
        }
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v
            .iter()
            .map(|n| value_size(&AttributeValue::N(n.clone())))
            .sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(items) => 3 + items.iter().map(|i| value_size(i) + 1).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, v)| k.len() + value_size(v) + 1)
                .sum::<usize>()
        }
        _ => 0,
    }
}

/// The size of a whole item.
pub fn item_size(item: &std::collections::HashMap<String, AttributeValue>) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}
