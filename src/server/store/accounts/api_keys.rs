//! `api_keys-<env>`: machine clients' keys, stored only as SHA-256. A key is written in one
//! transaction with its audit record, so a crash leaves both or neither.

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::server::store::audit::{self, AuditItem};
use crate::server::store::items::{self, n};
use crate::server::store::schema::API_KEYS;
use crate::server::store::{tx, Store, StoreError};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiKeyItem {
    pub key_hash: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    pub expires_at: i64,
}

/// Writes the key and its audit record together, unless a live key already has this hash
/// (false).
pub async fn create(
    store: &Store,
    item: &ApiKeyItem,
    audit_item: &AuditItem,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let table = store.table(API_KEYS.base);
    let av = serde_dynamo::to_item(item).map_err(|e| StoreError::corrupt(&table, e))?;
    let put = Put::builder()
        .table_name(&table)
        .set_item(Some(av))
        // An expired key counts as absent even before TTL deletes it.
        .condition_expression("attribute_not_exists(key_hash) OR expires_at <= :now")
        .expression_attribute_values(":now", n(now.timestamp()))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    let actions = vec![
        TransactWriteItem::builder().put(put).build(),
        audit::write_once(store, audit_item)?,
    ];
    let outcome = tx::transact(store, actions).await?;
    match (outcome.refused_at(0), outcome.refused_at(1)) {
        (None, None) => Ok(true),
        (Some(_), _) => Ok(false),
        (None, Some(_)) => Err(StoreError::Request {
            op: "TransactWriteItems",
            detail: "the key's audit record id is already taken".into(),
        }),
    }
}

pub async fn get(
    store: &Store,
    key_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<ApiKeyItem>, StoreError> {
    let item: Option<ApiKeyItem> = items::get(store, API_KEYS.base, "key_hash", key_hash).await?;
    Ok(item.filter(|k| k.expires_at > now.timestamp()))
}
