//! `api_keys-<env>`: machine clients' keys, stored only as SHA-256. A key is written in one
//! transaction with its audit record, so a crash leaves both or neither, and with
//! [`COPIES`] copies of it that requests read instead (docs/dynamodb.md, "Hot items").

use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::server::store::audit::{self, AuditItem};
use crate::server::store::copies::Copied;
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

/// Copies of each key. Every request of a machine client reads its key, strongly
/// consistently: a helpdesk's webhook at 10,000 events a second (and its measurements,
/// publishes and keyed writes: about 13,000 requests) would put them all on one item (a
/// partition serves 3,000 reads a second). The key and every copy are written in one
/// transaction when it is made and when it is revoked, so any copy read after either is
/// acknowledged has it: a request reads one at random, with no staleness. Sixteen take
/// 48,000 reads a second: a third used at 10,000 events a second, headroom for retries.
pub const COPIES: u32 = 16;

/// Where a key's copies are: `<hash>#copy#<i>` (a hash is hex: no key of a client is one).
fn copied(key_hash: &str) -> Copied<'_> {
    Copied {
        base: API_KEYS.base,
        key_attr: "key_hash",
        key: key_hash,
        copies: COPIES,
    }
}

fn is_copy(key_hash: &str) -> bool {
    key_hash.contains('#')
}

/// `item` as its copies hold it: without its last use (written on the item alone).
fn copy_item(store: &Store, item: &ApiKeyItem) -> Result<super::copies::Item, StoreError> {
    let mut copy = item.clone();
    copy.last_used_at = None;
    serde_dynamo::to_item(&copy).map_err(|e| StoreError::corrupt(&store.table(API_KEYS.base), e))
}

/// The puts of every copy of `item`, unconditional: the key's own write decides.
fn copy_puts(store: &Store, item: &ApiKeyItem) -> Result<Vec<TransactWriteItem>, StoreError> {
    copied(&item.key_hash).puts(store, &copy_item(store, item)?)
}

/// Writes the key, its audit record and its copies together, unless a live key already has
/// this hash (false).
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
    let mut actions = vec![
        TransactWriteItem::builder().put(put).build(),
        audit::write_once(store, audit_item)?,
    ];
    actions.extend(copy_puts(store, item)?);
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

/// The key as a request reads it: one copy, at random, strongly consistent. A key made by
/// the release before has no copies: its item is read then, and its copies are written
/// from it (each only where none is: a revoke's own copies win), so that the next requests
/// find them.
pub async fn get(
    store: &Store,
    key_hash: &str,
    now: DateTime<Utc>,
) -> Result<Option<ApiKeyItem>, StoreError> {
    if is_copy(key_hash) {
        return Ok(None);
    }
    let table = store.table(API_KEYS.base);
    let copy: Option<ApiKeyItem> = copied(key_hash)
        .get_copy(store)
        .await?
        .map(|i| item::decode(i, &table))
        .transpose()?;
    let found = match copy {
        Some(mut c) => {
            c.key_hash = key_hash.to_string();
            Some(c)
        }
        None => {
            let main = get_item(store, key_hash).await?;
            // Copies of a live key only (an expired one's would be made for nothing); a
            // failed write leaves the next request to try, and answers this one.
            if let Some(k) = main.as_ref().filter(|k| k.expires_at > now.timestamp()) {
                let written = match copy_item(store, k) {
                    Ok(item) => copied(key_hash).write_copies(store, &item).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = written {
                    tracing::warn!(key = %k.name, error = %e, "API key copies not written; the next use tries again");
                }
            }
            main
        }
    };
    Ok(found.filter(|k| k.expires_at > now.timestamp()))
}

/// The key's own item (strongly consistent), with its last use: for the key's admin pages
/// and its revocation.
pub async fn get_item(store: &Store, key_hash: &str) -> Result<Option<ApiKeyItem>, StoreError> {
    if is_copy(key_hash) {
        return Ok(None);
    }
    item::get(store, API_KEYS.base, "key_hash", key_hash).await
}

/// Revokes the copies of every key revoked without them (by a console of the release
/// before, in a rolling deployment), so that no request is let in by a copy of a revoked
/// key for longer than one look; and a key one of whose copies is revoked (a console of
/// the release before listed the copies, and an admin revoked one) is revoked whole: the
/// check fails closed. One Scan of the table (one item per machine client and its copies);
/// answers how many keys it mended. A key that cannot be mended now is logged and left
/// for the next look; the others are mended.
pub async fn mend_revoked(store: &Store) -> Result<usize, StoreError> {
    let all: Vec<ApiKeyItem> = many::scan_all(store, API_KEYS.base).await?;
    let copies_of = |hash: &str| {
        all.iter()
            .filter(|c| c.key_hash.split_once('#').is_some_and(|(h, _)| h == hash))
            .collect::<Vec<_>>()
    };
    let mut mended = 0;
    for key in all.iter().filter(|k| !is_copy(&k.key_hash)) {
        let copies = copies_of(&key.key_hash);
        let revoked = key.revoked_at.is_some() || copies.iter().any(|c| c.revoked_at.is_some());
        let whole_already =
            key.revoked_at.is_some() && copies.iter().all(|c| c.revoked_at.is_some());
        if !revoked || whole_already {
            continue;
        }
        let mut whole = key.clone();
        if whole.revoked_at.is_none() {
            let by = copies.iter().find_map(|c| c.revoked_by.clone());
            whole.revoked_at = copies.iter().find_map(|c| c.revoked_at);
            whole.revoked_by = by;
        }
        match revoke_everywhere(store, &whole).await {
            Ok(()) => {
                tracing::warn!(key = %key.name, "a key revoked in part (the release before) revoked whole");
                mended += 1;
            }
            Err(e) => {
                tracing::warn!(key = %key.name, error = %e, "a key revoked in part not mended yet; trying again at the next look")
            }
        }
    }
    Ok(mended)
}

/// Writes `revoked` (a revoked key) over the key's item and every copy: a revocation is
/// final, so no condition but the key's existence.
async fn revoke_everywhere(store: &Store, revoked: &ApiKeyItem) -> Result<(), StoreError> {
    let table = store.table(API_KEYS.base);
    let mut puts =
        vec![serde_dynamo::to_item(revoked).map_err(|e| StoreError::corrupt(&table, e))?];
    for put in copy_puts(store, revoked)? {
        if let Some(p) = put.put {
            puts.push(p.item);
        }
    }
    for item in puts {
        let req = store
            .client()
            .put_item()
            .table_name(&table)
            .set_item(Some(item));
        tx::retrying(|| async {
            req.clone()
                .send()
                .await
                .map(|_| ())
                .map_err(|e| StoreError::service("PutItem", &e.into_service_error()))
        })
        .await?;
    }
    Ok(())
}

/// Every key that has not expired at `now` (revoked ones too), newest first. A Scan: the
/// table holds one item per machine client, and its copies (left out).
pub async fn list(store: &Store, now: DateTime<Utc>) -> Result<Vec<ApiKeyItem>, StoreError> {
    let mut all: Vec<ApiKeyItem> = many::scan_all(store, API_KEYS.base).await?;
    all.retain(|k| k.expires_at > now.timestamp() && !is_copy(&k.key_hash));
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

/// Revokes a live key (`key`, as read), with its audit record, its copies and `with` (what
/// it left pending, withdrawn), in one transaction.
pub async fn revoke(
    store: &Store,
    key: &ApiKeyItem,
    by: &str,
    audit_item: &AuditItem,
    with: Option<tx::Writes>,
    now: DateTime<Utc>,
) -> Result<Revoked, StoreError> {
    let mut actions = revoke_writes(store, key, by, audit_item, now)?.into_actions();
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

/// The writes that revoke the key `key` (as read) by `by`: the key, its audit record and
/// its copies, for a caller that commits them with something else (an admin's disabling).
pub fn revoke_writes(
    store: &Store,
    key: &ApiKeyItem,
    by: &str,
    audit_item: &AuditItem,
    now: DateTime<Utc>,
) -> Result<tx::Writes, StoreError> {
    let mut revoked = key.clone();
    revoked.revoked_at = Some(now);
    revoked.revoked_by = Some(by.to_string());
    let mut actions = vec![
        revoke_update(store, &key.key_hash, by, now)?,
        audit::write_once(store, audit_item)?,
    ];
    actions.extend(copy_puts(store, &revoked)?);
    Ok(tx::Writes::new(actions))
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
