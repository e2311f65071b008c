//! `api_keys-<env>`: machine clients' keys, stored only as SHA-256. A key is written in one
//! transaction with its audit record, so a crash leaves both or neither.

use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::server::store::audit::{self, AuditItem};
use crate::server::store::item::{self, n};
use crate::server::store::many;
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
    /// When an admin revoked it: it no longer opens anything, and stays listed until it
    /// expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_by: Option<String>,
    /// When a request last used it (epoch seconds), to the hour: see [`note_use`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<i64>,
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
    let item: Option<ApiKeyItem> = item::get(store, API_KEYS.base, "key_hash", key_hash).await?;
    Ok(item.filter(|k| k.expires_at > now.timestamp()))
}

/// Every key that has not expired at `now` (revoked ones too), newest first. A Scan: the
/// table holds one item per machine client.
pub async fn list(store: &Store, now: DateTime<Utc>) -> Result<Vec<ApiKeyItem>, StoreError> {
    let mut all: Vec<ApiKeyItem> = many::scan_all(store, API_KEYS.base).await?;
    all.retain(|k| k.expires_at > now.timestamp());
    all.sort_by_key(|k| std::cmp::Reverse(k.created_at));
    Ok(all)
}

/// How often a key's last use is written: at most once an hour, whatever its traffic.
pub const USE_RESOLUTION_SECS: i64 = 3_600;

/// Records that the key was used at `now`, unless that was recorded less than an hour ago
/// (by any console: the condition decides, so a busy key costs one write an hour).
pub async fn note_use(store: &Store, key_hash: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
    let req = store
        .client()
        .update_item()
        .table_name(store.table(API_KEYS.base))
        .key("key_hash", item::s(key_hash))
        .update_expression("SET last_used_at = :now")
        .condition_expression(
            "attribute_exists(key_hash) AND (attribute_not_exists(last_used_at) OR last_used_at < :due)",
        )
        .expression_attribute_values(":now", n(now.timestamp()))
        .expression_attribute_values(":due", n(now.timestamp() - USE_RESOLUTION_SECS));
    // A refused condition: another console noted it this hour, or the key is gone.
    item::update_if(req).await.map(|_| ())
}

/// Revokes a live key, with its audit record and `with` (what it left pending, withdrawn),
/// in one transaction.
pub async fn revoke(
    store: &Store,
    key_hash: &str,
    by: &str,
    audit_item: &AuditItem,
    with: Option<tx::Writes>,
    now: DateTime<Utc>,
) -> Result<Revoked, StoreError> {
    let mut actions = vec![revoke_update(store, key_hash, by, now)?];
    actions.push(audit::write_once(store, audit_item)?);
    if let Some(with) = with {
        actions.extend(with.into_actions());
    }
    let outcome = tx::transact(store, actions).await?;
    Ok(if outcome.is_done() {
        Revoked::Done
    } else if outcome.refused_at(0).is_some() || outcome.refused_at(1).is_some() {
        Revoked::Gone
    } else {
        Revoked::Moved
    })
}

/// The writes that revoke the key `key_hash` by `by` with its audit record, for a caller
/// that commits them with something else (an admin's disabling).
pub fn revoke_writes(
    store: &Store,
    key_hash: &str,
    by: &str,
    audit_item: &AuditItem,
    now: DateTime<Utc>,
) -> Result<tx::Writes, StoreError> {
    Ok(tx::Writes::new(vec![
        revoke_update(store, key_hash, by, now)?,
        audit::write_once(store, audit_item)?,
    ]))
}

/// What a revoke came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revoked {
    Done,
    /// The key is revoked already, expired or unknown (or this revoke's record exists).
    Gone,
    /// What was committed with it moved meanwhile (the switches' lists): read again.
    Moved,
}

/// The write that revokes the key `key_hash` by `by`, while it is live and not revoked.
pub fn revoke_update(
    store: &Store,
    key_hash: &str,
    by: &str,
    now: DateTime<Utc>,
) -> Result<TransactWriteItem, StoreError> {
    let table = store.table(API_KEYS.base);
    let update = Update::builder()
        .table_name(&table)
        .key("key_hash", item::s(key_hash))
        .update_expression("SET revoked_at = :at, revoked_by = :by")
        .condition_expression(
            "attribute_exists(key_hash) AND attribute_not_exists(revoked_at) AND expires_at > :now",
        )
        .expression_attribute_values(":at", item::s(now.to_rfc3339()))
        .expression_attribute_values(":by", item::s(by))
        .expression_attribute_values(":now", n(now.timestamp()))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    Ok(TransactWriteItem::builder().update(update).build())
}
