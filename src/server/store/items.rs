//! Small shared helpers for single-item reads and writes.

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::AttributeValue;
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

/// Writes `item` unless one with the same key is already there and not yet expired.
/// Returns false when it was there.
pub async fn put_if_absent<T: Serialize>(
    store: &Store,
    base: &str,
    key: &str,
    item: &T,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let table = store.table(base);
    let av = serde_dynamo::to_item(item).map_err(|e| StoreError::corrupt(&table, e))?;
    let result = store
        .client()
        .put_item()
        .table_name(&table)
        .set_item(Some(av))
        .condition_expression("attribute_not_exists(#k) OR expires_at <= :now")
        .expression_attribute_names("#k", key)
        .expression_attribute_values(":now", n(now.timestamp()))
        .send()
        .await;
    match result {
        Ok(_) => Ok(true),
        Err(e) => match e.into_service_error() {
            PutItemError::ConditionalCheckFailedException(_) => Ok(false),
            other => Err(StoreError::service("PutItem", &other)),
        },
    }
}

pub async fn delete(store: &Store, base: &str, key: &str, value: &str) -> Result<(), StoreError> {
    store
        .client()
        .delete_item()
        .table_name(store.table(base))
        .key(key, s(value))
        .send()
        .await
        .map_err(StoreError::request("DeleteItem"))?;
    Ok(())
}
