//! Expiring keys: an admin's "expire now", and the sweep that deletes expired keys
//! (DynamoDB's TTL deletes them too, but late).

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::server::store::item::{n, s};
use crate::server::store::schema::IDEMPOTENCY_KEYS;
use crate::server::store::{Store, StoreError};

/// Expires a key now (an admin's decision): the next call with it runs afresh.
pub async fn expire_now(store: &Store, id: &str, now_secs: i64) -> Result<bool, StoreError> {
    let result = store
        .client()
        .update_item()
        .table_name(store.table(IDEMPOTENCY_KEYS.base))
        .key("id", s(id))
        .update_expression("SET expires_at = :now REMOVE watch, watch_at, watch_key, watch_sk")
        .condition_expression("attribute_exists(id) AND expires_at > :now")
        .expression_attribute_values(":now", n(now_secs))
        .send()
        .await;
    match result {
        Ok(_) => Ok(true),
        Err(e) => match e.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
            other => Err(StoreError::service("UpdateItem", &other)),
        },
    }
}

/// One page of the sweep: finds expired keys and deletes each one that is still expired
/// (a key re-claimed meanwhile is kept). Returns (examined, deleted, next page).
pub async fn sweep_page(
    store: &Store,
    now_secs: i64,
    start: Option<HashMap<String, AttributeValue>>,
) -> Result<(usize, usize, Option<HashMap<String, AttributeValue>>), StoreError> {
    crate::server::store::sweep::page(store, &IDEMPOTENCY_KEYS, now_secs, start).await
}
