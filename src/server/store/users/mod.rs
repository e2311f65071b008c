//! `users-<env>`: console users (their sessions and sign-in attempts in [`sessions`] and
//! [`login_attempts`]). Changes that can take admin rights away are serialized
//! through a version item, so two admins demoting each other cannot leave none.

pub mod login_attempts;
pub mod sessions;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::users::{Role, UserSummary};
use crate::server::store::audit::{self, AuditItem};
use crate::server::store::item::{self, n, s};
use crate::server::store::many;
use crate::server::store::schema::{SETTINGS, USERS};
use crate::server::store::tx;
use crate::server::store::{Store, StoreError};

/// Settings item whose version every admin-removing change bumps.
const USERS_LOCK_PK: &str = "users_lock";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UserItem {
    pub name: String,
    pub role: Role,
    pub password_hash: String,
    pub disabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_login_at: Option<DateTime<Utc>>,
    pub password_changed_at: DateTime<Utc>,
    /// Last sign-in (or creation) + the inactivity lifetime.
    pub expires_at: i64,
    /// When the account was last made an admin, or enabled (absent: written before this
    /// was kept; its creation stands in). A request for approval made before then is not
    /// theirs to approve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_since: Option<DateTime<Utc>>,
}

impl UserItem {
    /// Since when the account holds its standing as an admin (see `admin_since`).
    pub fn admin_since(&self) -> DateTime<Utc> {
        self.admin_since.unwrap_or(self.created_at)
    }

    pub fn is_active_admin(&self, now: DateTime<Utc>) -> bool {
        self.role == Role::Admin && !self.disabled && self.expires_at > now.timestamp()
    }

    pub fn summary(&self) -> UserSummary {
        UserSummary {
            name: self.name.clone(),
            role: self.role,
            disabled: self.disabled,
            last_login_at: self.last_login_at.map(rfc3339),
            created_at: rfc3339(self.created_at),
        }
    }
}

pub async fn get(
    store: &Store,
    name: &str,
    now: DateTime<Utc>,
) -> Result<Option<UserItem>, StoreError> {
    let item: Option<UserItem> = item::get(store, USERS.base, "name", name).await?;
    Ok(item.filter(|u| u.expires_at > now.timestamp()))
}

/// Creates the user with its audit record; false if the name is taken.
pub async fn create(
    store: &Store,
    item: &UserItem,
    audit_item: &AuditItem,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let table = store.table(USERS.base);
    let av = serde_dynamo::to_item(item).map_err(|e| StoreError::corrupt(&table, e))?;
    let put = Put::builder()
        .table_name(&table)
        .set_item(Some(av))
        .condition_expression("attribute_not_exists(#n) OR expires_at <= :now")
        .expression_attribute_names("#n", "name")
        .expression_attribute_values(":now", n(now.timestamp()))
        .build()
        .map_err(|e| StoreError::corrupt(&table, e))?;
    let parts = vec![
        TransactWriteItem::builder().put(put).build(),
        audit::write_once(store, audit_item)?,
    ];
    match transact(store, parts).await? {
        TxOutcome::Done => Ok(true),
        TxOutcome::ConditionFailed(0) => Ok(false),
        TxOutcome::ConditionFailed(_) => Err(StoreError::Request {
            op: "TransactWriteItems",
            detail: "user creation collided with a concurrent write; try again".into(),
        }),
    }
}

/// Every user (a handful of items). Consistent, so the last-admin check sees the truth.
pub async fn list(store: &Store, now: DateTime<Utc>) -> Result<Vec<UserItem>, StoreError> {
    let mut users: Vec<UserItem> = many::scan_all(store, USERS.base).await?;
    users.retain(|u| u.expires_at > now.timestamp());
    users.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(users)
}

pub async fn any_exist(store: &Store) -> Result<bool, StoreError> {
    let out = store
        .client()
        .scan()
        .table_name(store.table(USERS.base))
        .limit(1)
        .consistent_read(true)
        .send()
        .await
        .map_err(StoreError::request("Scan"))?;
    Ok(out.count > 0)
}

pub async fn record_login(
    store: &Store,
    name: &str,
    now: DateTime<Utc>,
    expires_at: i64,
) -> Result<(), StoreError> {
    store
        .client()
        .update_item()
        .table_name(store.table(USERS.base))
        .key("name", s(name))
        .update_expression("SET last_login_at = :now, expires_at = :exp")
        .condition_expression("attribute_exists(#n)")
        .expression_attribute_names("#n", "name")
        .expression_attribute_values(":now", s(now.to_rfc3339()))
        .expression_attribute_values(":exp", n(expires_at))
        .send()
        .await
        .map_err(StoreError::request("UpdateItem"))?;
    Ok(())
}

/// The version of the admin-change lock (0 if never written).
pub async fn lock_version(store: &Store) -> Result<u64, StoreError> {
    #[derive(Deserialize)]
    struct Lock {
        version: u64,
    }
    let lock: Option<Lock> = item::get(store, SETTINGS.base, "pk", USERS_LOCK_PK).await?;
    Ok(lock.map(|l| l.version).unwrap_or(0))
}

/// A change to one user.
pub enum UserChange<'a> {
    Role(Role, DateTime<Utc>),
    Disable(&'a str),
    Enable(DateTime<Utc>),
    Password { hash: &'a str, at: DateTime<Utc> },
}

pub enum Applied {
    Done,
    /// The user is gone, or the lock moved: re-read and decide again.
    Retry,
}

/// Applies `change` to an existing user, with its audit record, only if the admin-change
/// lock is still at `lock_version`; the lock moves on.
pub async fn apply(
    store: &Store,
    name: &str,
    change: UserChange<'_>,
    lock_version: u64,
    audit_item: &AuditItem,
    with: Option<super::tx::Writes>,
    lock_expires_at: i64,
) -> Result<Applied, StoreError> {
    let expires_at = lock_expires_at;
    let mut parts = vec![
        TransactWriteItem::builder()
            .update(user_update(store, name, change)?)
            .build(),
        TransactWriteItem::builder()
            .update(lock_update(store, lock_version, expires_at)?)
            .build(),
        audit::write_once(store, audit_item)?,
    ];
    if let Some(with) = with {
        parts.extend(with.into_actions());
    }
    Ok(match transact(store, parts).await? {
        TxOutcome::Done => Applied::Done,
        TxOutcome::ConditionFailed(_) => Applied::Retry,
    })
}

/// The update of the user's own item, only while the user exists.
fn user_update(store: &Store, name: &str, change: UserChange<'_>) -> Result<Update, StoreError> {
    let users = store.table(USERS.base);
    let update = Update::builder()
        .table_name(&users)
        .key("name", s(name))
        .condition_expression("attribute_exists(#n)")
        .expression_attribute_names("#n", "name");
    let update = match change {
        UserChange::Role(role, at) => update
            .update_expression("SET #r = :r, admin_since = :at")
            .expression_attribute_names("#r", "role")
            .expression_attribute_values(":r", s(role.as_str()))
            .expression_attribute_values(":at", s(at.to_rfc3339())),
        UserChange::Disable(reason) => update
            .update_expression("SET disabled = :t, disabled_reason = :why")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":why", s(reason)),
        UserChange::Enable(at) => update
            .update_expression("SET disabled = :f, admin_since = :at REMOVE disabled_reason")
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .expression_attribute_values(":at", s(at.to_rfc3339())),
        UserChange::Password { hash, at } => update
            .update_expression("SET password_hash = :h, password_changed_at = :at")
            .expression_attribute_values(":h", s(hash))
            .expression_attribute_values(":at", s(at.to_rfc3339())),
    };
    update.build().map_err(|e| StoreError::corrupt(&users, e))
}

/// Moves the admin-change lock from `seen` to the next version, only if nobody moved it
/// since it was read (0: never written).
fn lock_update(store: &Store, seen: u64, expires_at: i64) -> Result<Update, StoreError> {
    let settings = store.table(SETTINGS.base);
    let lock = Update::builder()
        .table_name(&settings)
        .key("pk", s(USERS_LOCK_PK))
        .update_expression("SET version = :next, expires_at = :exp")
        .expression_attribute_values(":next", n(seen + 1))
        .expression_attribute_values(":exp", n(expires_at));
    let lock = if seen == 0 {
        lock.condition_expression("attribute_not_exists(version)")
    } else {
        lock.condition_expression("version = :seen")
            .expression_attribute_values(":seen", n(seen))
    };
    lock.build().map_err(|e| StoreError::corrupt(&settings, e))
}

enum TxOutcome {
    Done,
    /// Index of the first part whose condition failed.
    ConditionFailed(usize),
}

async fn transact(store: &Store, parts: Vec<TransactWriteItem>) -> Result<TxOutcome, StoreError> {
    Ok(match tx::transact(store, parts).await? {
        tx::Outcome::Done => TxOutcome::Done,
        tx::Outcome::Refused(r) => {
            TxOutcome::ConditionFailed(r.iter().map(|(i, _)| *i).min().unwrap_or(0))
        }
    })
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
