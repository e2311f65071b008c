//! `api_keys-<env>`: machine clients' keys, stored only as SHA-256.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::server::store::items;
use crate::server::store::schema::API_KEYS;
use crate::server::store::{Store, StoreError};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiKeyItem {
    pub key_hash: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    pub expires_at: i64,
}

pub async fn create(
    store: &Store,
    item: &ApiKeyItem,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    items::put_if_absent(store, API_KEYS.base, "key_hash", item, now).await
}

pub async fn get(
    store: &Store,
    key_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<ApiKeyItem>, StoreError> {
    let item: Option<ApiKeyItem> = items::get(store, API_KEYS.base, "key_hash", key_hash).await?;
    Ok(item.filter(|k| k.expires_at > now.timestamp()))
}
