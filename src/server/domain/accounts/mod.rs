//! Users and roles: creation, role changes, disabling, password resets. Every change is
//! audited, and no change may leave the console without an active admin.

pub mod passwords;
pub mod sessions;

use chrono::{DateTime, Duration, Utc};

use crate::model::accounts::{parse_user_name, Role};
use crate::model::switches::Reason;
use crate::model::AppError;
use crate::server::domain::accounts::passwords::{check_new_password, hash_password, new_password};
use crate::server::domain::redact::redact;
use crate::server::errors::internal;
use crate::server::ids::random_hex;
use crate::server::store::accounts::users::{self, Applied, UserChange, UserItem};
use crate::server::store::audit::AuditItem;
use crate::server::store::Store;

pub const AUDIT_PARTITION: &str = "system#users";
pub const AUDIT_ACTION: &str = "user_change";

/// Lifetimes the account rules need.
#[derive(Clone, Copy, Debug)]
pub struct AccountTtls {
    pub user_inactive_days: i64,
    pub audit_days: i64,
    pub settings_days: i64,
}

fn audit(
    actor: &str,
    now: DateTime<Utc>,
    ttls: &AccountTtls,
    payload: serde_json::Value,
) -> AuditItem {
    let mut item = AuditItem::new(
        AUDIT_PARTITION,
        AUDIT_ACTION,
        now,
        &random_hex(8),
        ttls.audit_days,
    );
    item.actor = actor.to_string();
    item.action_payload_redacted = payload.to_string();
    item
}

/// Would this change leave no active admin?
pub fn removes_last_admin(
    users: &[UserItem],
    target: &str,
    still_admin_after: bool,
    now: DateTime<Utc>,
) -> bool {
    let target_is_admin = users
        .iter()
        .any(|u| u.name == target && u.is_active_admin(now));
    if !target_is_admin || still_admin_after {
        return false;
    }
    users
        .iter()
        .filter(|u| u.name != target && u.is_active_admin(now))
        .count()
        == 0
}

pub async fn add_user(
    store: &Store,
    name: &str,
    role: Role,
    password: &str,
    actor: &str,
    ttls: &AccountTtls,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let name = parse_user_name(name)?;
    check_new_password(password)?;
    let hash = hash_password(password).map_err(|e| internal(&e))?;
    let item = UserItem {
        name: name.clone(),
        role,
        password_hash: hash,
        disabled: false,
        disabled_reason: None,
        created_at: now,
        last_login_at: None,
        password_changed_at: now,
        expires_at: (now + Duration::days(ttls.user_inactive_days)).timestamp(),
    };
    let record = audit(
        actor,
        now,
        ttls,
        serde_json::json!({"user": name, "change": "add", "role": role}),
    );
    if users::create(store, &item, &record, now).await? {
        tracing::info!(user = %name, role = %role, actor, "user added");
        Ok(())
    } else {
        Err(AppError::Conflict(format!(
            "A user named {name} already exists."
        )))
    }
}

/// In dev with no users at all: creates `admin` with a random password and returns it.
pub async fn ensure_first_admin(
    store: &Store,
    ttls: &AccountTtls,
    now: DateTime<Utc>,
) -> Result<Option<String>, AppError> {
    if users::any_exist(store).await? {
        return Ok(None);
    }
    let password = new_password();
    match add_user(store, "admin", Role::Admin, &password, "system", ttls, now).await {
        Ok(()) => Ok(Some(password)),
        // Another process created it first: theirs stands.
        Err(AppError::Conflict(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What an admin (or the CLI) asks to change.
pub enum Change {
    SetRole(Role),
    Disable,
    Enable,
    ResetPassword(String),
}

/// Applies a change to an existing user; refuses to remove the last active admin even
/// when two such changes race.
pub async fn change_user(
    store: &Store,
    name: &str,
    change: Change,
    reason: &str,
    actor: &str,
    ttls: &AccountTtls,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let name = parse_user_name(name)?;
    let reason = redact(Reason::parse(reason)?.as_str());
    if let Change::ResetPassword(p) = &change {
        check_new_password(p)?;
    }
    let hash = match &change {
        Change::ResetPassword(p) => Some(hash_password(p).map_err(|e| internal(&e))?),
        _ => None,
    };
    for _ in 0..10 {
        let lock = users::lock_version(store).await?;
        let all = users::list(store, now).await?;
        let Some(target) = all.iter().find(|u| u.name == name) else {
            return Err(AppError::NotFound);
        };
        let (still_admin, payload, store_change) = match &change {
            Change::SetRole(role) => (
                *role == Role::Admin,
                serde_json::json!({"user": name, "change": "set_role", "from": target.role, "to": role, "reason": reason}),
                UserChange::Role(*role),
            ),
            Change::Disable => (
                false,
                serde_json::json!({"user": name, "change": "disable", "reason": reason}),
                UserChange::Disable(&reason),
            ),
            Change::Enable => (
                target.role == Role::Admin,
                serde_json::json!({"user": name, "change": "enable", "reason": reason}),
                UserChange::Enable,
            ),
            Change::ResetPassword(_) => (
                target.role == Role::Admin,
                serde_json::json!({"user": name, "change": "reset_password", "reason": reason}),
                UserChange::Password {
                    hash: hash.as_deref().unwrap_or_default(),
                    at: now,
                },
            ),
        };
        if removes_last_admin(&all, &name, still_admin, now) {
            return Err(AppError::Conflict(format!(
                "{name} is the last active admin; make someone else an admin first."
            )));
        }
        let record = audit(actor, now, ttls, payload);
        match users::apply(
            store,
            &name,
            store_change,
            lock,
            &record,
            now,
            ttls.settings_days,
        )
        .await?
        {
            Applied::Done => {
                tracing::info!(user = %name, actor, "user changed");
                return Ok(());
            }
            Applied::Retry => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
    Err(AppError::Conflict(
        "Users were being changed at the same time; try again.".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, role: Role, disabled: bool) -> UserItem {
        let now = Utc::now();
        UserItem {
            name: name.into(),
            role,
            password_hash: String::new(),
            disabled,
            disabled_reason: None,
            created_at: now,
            last_login_at: None,
            password_changed_at: now,
            expires_at: (now + Duration::days(1)).timestamp(),
        }
    }

    #[test]
    fn the_last_active_admin_cannot_be_removed() {
        let now = Utc::now();
        let users = vec![
            user("a", Role::Admin, false),
            user("b", Role::Admin, true),
            user("c", Role::Viewer, false),
        ];
        assert!(
            removes_last_admin(&users, "a", false, now),
            "b is disabled, so a is the last"
        );
        assert!(!removes_last_admin(&users, "a", true, now));
        assert!(
            !removes_last_admin(&users, "c", false, now),
            "c is no admin"
        );
        let two = vec![user("a", Role::Admin, false), user("b", Role::Admin, false)];
        assert!(!removes_last_admin(&two, "a", false, now));
    }
}
