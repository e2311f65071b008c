//! `sessions-<env>`: one item per signed-in browser, keyed by the SHA-256 of its id.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::server::store::item::{self, n, s};
use crate::server::store::schema::SESSIONS;
use crate::server::store::{Store, StoreError};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionItem {
    pub id_hash: String,
    pub user: String,
    pub created_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    /// Created + the absolute lifetime: no activity extends past this.
    pub absolute_expires_at: i64,
    /// min(last seen + idle lifetime, absolute): the TTL attribute.
    pub expires_at: i64,
}

pub async fn create(
    store: &Store,
    item: &SessionItem,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    item::put_if_absent(store, SESSIONS.base, "id_hash", item, now).await
}

/// The session, unless it is gone or past its expiry.
pub async fn get(
    store: &Store,
    id_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<SessionItem>, StoreError> {
    let item: Option<SessionItem> = item::get(store, SESSIONS.base, "id_hash", id_hash).await?;
    Ok(item.filter(|s| s.expires_at > now.timestamp()))
}

/// Slides the idle expiry forward (only for a session that still exists).
pub async fn touch(
    store: &Store,
    id_hash: &str,
    now: DateTime<Utc>,
    expires_at: i64,
) -> Result<(), StoreError> {
    let result = store
        .client()
        .update_item()
        .table_name(store.table(SESSIONS.base))
        .key("id_hash", s(id_hash))
        .update_expression("SET last_seen_at = :now, expires_at = :exp")
        .condition_expression("attribute_exists(id_hash)")
        .expression_attribute_values(":now", s(now.to_rfc3339()))
        .expression_attribute_values(":exp", n(expires_at))
        .send()
        .await;
    match result {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
        {
            Ok(())
        }
        Err(e) => Err(StoreError::request("UpdateItem")(e)),
    }
}

pub async fn delete(store: &Store, id_hash: &str) -> Result<(), StoreError> {
    item::delete(store, SESSIONS.base, "id_hash", id_hash).await
}
